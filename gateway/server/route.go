package server

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/provider"
	"github.com/llmgw/llmgw/gateway/translate"
	"github.com/llmgw/llmgw/gateway/usage"
)

// route tries the routes that can carry the request (x.cands, the primary
// first) in order, until an attempt succeeds or nextStep says stop. attempt
// calls one route and returns its failure (nil: it answered); every attempt
// lands in the record. route returns the failure the exchange ends on, nil
// after a success.
//
// A route whose provider's circuit breaker refuses the call is passed over
// without an attempt, as if it had failed at once, except the last route the
// request may use (last): a request always reaches a provider.
func (x *exchange) route(ctx context.Context, attempt func(context.Context, *candidate) *failure) *failure {
	last := len(x.cands) - 1
	for i := range x.cands {
		c := &x.cands[i]
		rt := c.route
		if _, down := x.st.unavailable[rt.Provider]; down {
			// No credential, no call: pass it over like an open breaker,
			// and end on it (recorded, never sent) when it is the last.
			x.skipped(rt.Provider, skipCredential)
			if i < last {
				continue
			}
			f := &failure{kind: failUnavailable, route: rt, err: &provider.Error{StatusCode: http.StatusServiceUnavailable}}
			x.addAttempt(rt, f, x.s.now(), nil)
			return f
		}
		t, skip := x.s.breakers.admit(rt.Provider, i >= last)
		if skip {
			x.skipped(rt.Provider, skipCircuitOpen)
			continue
		}
		actx := ctx
		if t != nil && x.p.stream {
			actx = withTicket(ctx, t) // a stream is judged at its commit point
		}
		t0 := x.s.now()
		x.times.attemptStart = t0
		f := attempt(x.startAttempt(actx, c), c)
		x.addAttempt(rt, f, t0, t)
		if f == nil {
			return nil
		}
		if nextStep(f.kind, f.sent, i+1, maxFallbacks(x.alias), last-i) == stepStop {
			return f
		}
	}
	// Unreachable: the last route is never passed over.
	return &failure{kind: failUnavailable, route: x.cands[last].route, err: &provider.Error{StatusCode: http.StatusServiceUnavailable}}
}

// step is the route loop's move after a failed attempt.
type step uint8

const (
	stepStop     step = iota // the exchange ends on this failure
	stepFallback             // try the next route
)

// nextStep is the fallback rule, and the only one. A failure that says
// nothing against the request itself (a timeout, a connection failure, a
// stream that failed before its first content, an upstream 429 or 5xx: the
// fallback column of the failures table) moves on to the next route, but
// only while nothing has reached the client (after the commit point the
// provider never changes), while the alias allows another fallback
// (attempts-1 of its maxFallbacks are spent) and while a route is left.
// Everything else, a provider's 400/401/403 above all, is answered as is.
func nextStep(k failKind, sent bool, attempts, maxFallbacks, routesLeft int) step {
	if sent || !failures[k].fallback || attempts > maxFallbacks || routesLeft < 1 {
		return stepStop
	}
	return stepFallback
}

// maxFallbacks is the alias's fallback budget; Normalize makes the documented
// default explicit, this only guards a snapshot that skipped it.
func maxFallbacks(a *snapshot.Alias) int {
	if a.MaxFallbacks == nil {
		return snapshot.DefaultMaxFallbacks
	}
	return *a.MaxFallbacks
}

// addAttempt records one upstream call (f nil: it succeeded) and feeds the
// provider's passive health and its circuit breaker (t).
func (x *exchange) addAttempt(rt snapshot.Route, f *failure, t0 time.Time, t *ticket) {
	outcome, code, blame := usage.OutcomeOK, http.StatusOK, true
	if f != nil {
		row := &failures[f.kind]
		outcome, blame = row.outcome, row.blame
		if !f.sent { // once committed, the upstream's answer was a 200
			code = f.err.StatusCode
		}
	}
	x.endAttempt(outcome, code)
	now := x.s.now()
	x.times.upstream += now.Sub(t0)
	x.rec.Attempts = append(x.rec.Attempts, usage.Attempt{Provider: rt.Provider, Model: rt.Model,
		Outcome: outcome, StatusCode: code, LatencyMs: now.Sub(t0).Milliseconds()})
	x.rec.Provider, x.rec.ProviderModel = rt.Provider, rt.Model
	x.rec.Fallbacks = len(x.rec.Attempts) - 1
	x.s.metrics.attempt(rt.Provider, outcome)
	if blame {
		x.s.health.observe(rt.Provider, f == nil, now)
	}
	cause := outcome
	if outcome == usage.OutcomeStatus {
		cause += " " + strconv.Itoa(code)
	}
	t.report(breakerVerdict(f), cause)
}

// answerFailure ends an exchange whose routes failed before anything was
// sent: one JSON error, naming the provider that failed last.
func (x *exchange) answerFailure(f *failure) {
	if f.kind == failCanceled {
		x.canceled()
		return
	}
	x.w.Header()[hdrProvider] = []string{f.route.Provider}
	x.settle(&failures[f.kind].before)
	// A provider's 401 or 403 is about the gateway's credential, not the
	// caller's key: it stays the gateway's upstream_auth_failed, lest the
	// client ask its user for a new key.
	if x.passesErrors(f) && f.err.Kind == provider.KindStatus && f.err.Body != nil &&
		f.err.StatusCode != http.StatusUnauthorized && f.err.StatusCode != http.StatusForbidden {
		writeProviderError(x.w, f.err)
		return
	}
	x.ing.api.writeError(x.w, f.apiError(), x.rec.RequestID)
}

// passesErrors: the caller gets the errors of f's provider as that
// provider wrote them, because it speaks the provider's protocol and its
// client matches on their wording (Claude Code's recovery does). Only
// Anthropic callers do: an OpenAI caller gets the gateway's own errors,
// which name the provider that failed.
func (x *exchange) passesErrors(f *failure) bool {
	return x.ing.api == apiAnthropic && x.st.protocols[f.route.Provider] == translate.ProtocolAnthropic
}

// writeProviderError writes a provider's error answer as the provider sent
// it (its status, its Retry-After, its body with the provider's URL and
// credential and any gateway key redacted).
func writeProviderError(w http.ResponseWriter, e *provider.Error) {
	h := w.Header()
	h["Content-Type"] = jsonType
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(retryAfterSeconds(e.RetryAfter), 10))
	}
	w.WriteHeader(e.StatusCode)
	_, _ = w.Write([]byte(keyformat.Redact(string(e.Body))))
}

// streamError is the error event of a stream that failed after its commit
// point: a, the failures table's answer, or for a caller that gets its
// provider's errors (passesErrors) the error event the provider sent, its
// type and message as the provider wrote them.
func (x *exchange) streamError(f *failure, a *answer) *apiError {
	e := &apiError{typ: a.typ, code: a.code, message: a.message}
	if x.passesErrors(f) && f.err.Kind == provider.KindStream && f.err.Type != "" {
		e.upstreamType, e.message = f.err.Type, keyformat.Redact(f.err.Message)
	}
	return e
}
