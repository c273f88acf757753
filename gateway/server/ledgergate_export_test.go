package server

// SetLedgerFailOpenForTest switches a running server between refusing and
// serving while its ledger cannot commit (llmgw gateway --ledger-fail-open);
// the test stack is built through localstack, which leaves it off.
func (s *Server) SetLedgerFailOpenForTest(on bool) { s.gate.failOpen.Store(on) }
