package server

import "time"

// SetBreakerClockForTest makes the circuit breakers read now instead of the
// server's clock, so that a test passes a cool-down by moving a fake clock
// rather than by sleeping through it.
func (s *Server) SetBreakerClockForTest(now func() time.Time) { s.breakers.setClock(now) }
