package server

// SetAbuseLimitsForTest replaces a running server's flag-set limits (client
// address bucket, trusted proxies, read bucket) with those of o; the test
// harness builds its server through localstack, which sets none.
func (s *Server) SetAbuseLimitsForTest(o Options) { s.setAbuseLimits(o) }
