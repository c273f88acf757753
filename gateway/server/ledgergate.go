package server

import (
	"net/http"
	"sync/atomic"
	"time"
)

// ledgerGate keeps the one-record promise when the usage ledger cannot
// commit (a full disk, an I/O error): chat requests are refused before
// anything else happens, so no provider is called for a request the gateway
// could not record. The ledger's own verdict (usage.Ledger.Writable) is one
// atomic load; the ledger clears it itself once a write commits again.
type ledgerGate struct {
	// failOpen serves chat requests anyway (the operator chose availability
	// over recording); their lost records are counted by the ledger
	// (llmgw_usage_unrecorded_requests_total).
	failOpen atomic.Bool
	refused  atomic.Uint64
}

// storeRetryAfter is what a refused caller is told: long enough not to
// hammer a pod whose readiness has just turned false, short enough that a
// freed disk is used soon.
const storeRetryAfter = 5 * time.Second

// checkLedger refuses the request when the ledger cannot commit, unless the
// gateway runs fail-open.
func (s *Server) checkLedger() *apiError {
	if s.ledger.Writable() == nil || s.gate.failOpen.Load() {
		return nil
	}
	return &apiError{status: http.StatusServiceUnavailable, typ: typeInternal, code: "usage_store_unavailable",
		message:    "the gateway cannot record usage right now, so it serves no chat requests; retry after the indicated delay",
		retryAfter: storeRetryAfter}
}

// refuseUnrecorded answers a request refused by checkLedger. It is the one
// documented exception to "every chat request leaves one final record": the
// ledger cannot take the record, so none is attempted (an attempt would only
// queue a failing write behind the prober's). The refusal is counted instead.
func (x *exchange) refuseUnrecorded(e *apiError) {
	x.done = true
	x.s.gate.refused.Add(1)
	x.rec.ErrorType = e.typ
	x.s.metrics.request(x.ing.endpoint, "", statusRejected, e.status)
	x.s.log.Warn("chat refused: usage store unavailable, no record written", "request_id", x.rec.RequestID,
		"http_status", e.status, "error_code", e.code)
	x.endSpan(statusRejected, e.status)
	x.ing.api.writeError(x.w, e, x.rec.RequestID)
}

// RefusedUnrecorded counts chat requests refused with 503
// usage_store_unavailable (they have no usage record).
func (s *Server) RefusedUnrecorded() uint64 { return s.gate.refused.Load() }

// ledgerFailOpen reports whether the gateway serves while its ledger cannot
// commit; readiness then stays true (the operator chose availability).
func (s *Server) ledgerFailOpen() bool { return s.gate.failOpen.Load() }
