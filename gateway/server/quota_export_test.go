package server

import "time"

// SetClockForTest replaces the server's clock. Call it before the first
// request: the clock is read without synchronization on the request path.
func (s *Server) SetClockForTest(now func() time.Time) { s.now = now }
