package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/tokens"
	"github.com/llmgw/llmgw/gateway/provider"
	"github.com/llmgw/llmgw/gateway/usage"
)

// Causes for cancelling an attempt, so that a cancelled read can be told
// apart from the client going away.
var (
	errAttemptTimeout    = errors.New("attempt timeout")
	errFirstChunkTimeout = errors.New("first chunk timeout")
	errIdleTimeout       = errors.New("stream idle timeout")
)

// Attempt outcomes recorded per upstream call: the ledger's vocabulary.
const (
	outcomeOK          = usage.OutcomeOK
	outcomeTimeout     = usage.OutcomeTimeout
	outcomeConnection  = usage.OutcomeConnection
	outcomeStatus      = usage.OutcomeStatus
	outcomeStreamError = usage.OutcomeStreamError
	outcomeProtocol    = usage.OutcomeProtocol
	outcomeCanceled    = usage.OutcomeCanceled
)

// routes is the primary followed by at most maxFallbacks fallbacks.
func routes(a *snapshot.Alias) []snapshot.Route {
	n := 1 // the documented default; Normalize makes it explicit
	if a.MaxFallbacks != nil {
		n = *a.MaxFallbacks
	}
	if n > len(a.Fallbacks) {
		n = len(a.Fallbacks)
	}
	out := make([]snapshot.Route, 0, 1+n)
	out = append(out, a.Primary)
	return append(out, a.Fallbacks[:n]...)
}

// attemptFailure is a classified upstream failure before the commit point.
type attemptFailure struct {
	route   snapshot.Route
	outcome string
	err     *provider.Error
}

// classify turns an attempt's error into an outcome, using the attempt
// context's cancel cause to name gateway-imposed timeouts correctly.
func classify(err error, actx context.Context) (string, *provider.Error) {
	var pe *provider.Error
	if !errors.As(err, &pe) {
		pe = &provider.Error{Kind: provider.KindConnection, Message: "upstream call failed", Err: err}
	}
	switch cause := context.Cause(actx); {
	case errors.Is(cause, errAttemptTimeout), errors.Is(cause, errFirstChunkTimeout), errors.Is(cause, errIdleTimeout),
		errors.Is(cause, context.DeadlineExceeded):
		return outcomeTimeout, &provider.Error{Kind: provider.KindTimeout, Message: cause.Error(), Err: err}
	}
	switch pe.Kind {
	case provider.KindTimeout:
		return outcomeTimeout, pe
	case provider.KindConnection:
		return outcomeConnection, pe
	case provider.KindStatus:
		return outcomeStatus, pe
	case provider.KindStream:
		return outcomeStreamError, pe
	case provider.KindCanceled:
		return outcomeCanceled, pe
	default:
		return outcomeProtocol, pe
	}
}

// retryable is the fallback matrix: only failures that say nothing about the
// request itself move on to the next route.
func retryable(outcome string, pe *provider.Error) bool {
	switch outcome {
	case outcomeTimeout, outcomeConnection, outcomeStreamError:
		return true
	case outcomeStatus:
		return pe.StatusCode == http.StatusTooManyRequests || pe.StatusCode >= 500
	default:
		return false
	}
}

func (x *exchange) addAttempt(rt snapshot.Route, outcome string, code int, t0 time.Time) {
	x.rec.Attempts = append(x.rec.Attempts, usage.Attempt{Provider: rt.Provider, Model: rt.Model,
		Outcome: outcome, StatusCode: code, LatencyMs: x.s.now().Sub(t0).Milliseconds()})
	x.rec.Provider, x.rec.ProviderModel = rt.Provider, rt.Model
	x.rec.Fallbacks = len(x.rec.Attempts) - 1
	x.s.metrics.attempt(rt.Provider, outcome)
	if outcome == outcomeOK || providerFault(outcome, code) {
		x.s.health.observe(rt.Provider, outcome == outcomeOK, x.s.now())
	}
}

// providerFault says whether an attempt's failure speaks about the provider's
// health. A client that went away, or a 4xx caused by the request itself, does
// not; a rejected gateway credential (401/403) and rate limiting do.
func providerFault(outcome string, code int) bool {
	switch outcome {
	case outcomeCanceled:
		return false
	case outcomeStatus:
		return code >= 500 || code == http.StatusTooManyRequests || code == http.StatusUnauthorized || code == http.StatusForbidden
	default:
		return true
	}
}

// complete runs a non-streaming request through the routes.
func (x *exchange) complete(ctx context.Context) {
	var last *attemptFailure
	for _, rt := range routes(x.alias) {
		ad := x.st.adapters[rt.Provider]
		actx, cancel := context.WithTimeoutCause(ctx, ms(x.alias.Timeouts.AttemptMs), errAttemptTimeout)
		req := x.p.req
		req.Model = rt.Model
		t0 := x.s.now()
		comp, err := ad.Complete(actx, &req)
		if err == nil {
			cancel()
			x.addAttempt(rt, outcomeOK, http.StatusOK, t0)
			x.succeedJSON(comp)
			return
		}
		outcome, pe := classify(err, actx)
		cancel()
		if x.r.Context().Err() != nil {
			x.addAttempt(rt, outcomeCanceled, 0, t0)
			x.canceled()
			return
		}
		x.addAttempt(rt, outcome, pe.StatusCode, t0)
		last = &attemptFailure{route: rt, outcome: outcome, err: pe}
		if !retryable(outcome, pe) || ctx.Err() != nil {
			break
		}
	}
	x.w.Header().Set("X-Llmgw-Provider", last.route.Provider)
	x.fail(mapFailure(last, ctx))
}

func (x *exchange) succeedJSON(c *provider.Completion) {
	in, out := x.p.inputTokens, tokens.Count(c.Text)
	if c.HasUsage {
		in, out = c.Usage.InputTokens, c.Usage.OutputTokens
	}
	x.rec.InputTokens, x.rec.OutputTokens = in, out
	body := encodeCompletion(x.rec.RequestID, x.start.Unix(), x.p.alias, c.Text, finishReason(c.FinishReason), in, out)
	x.waitBegun()
	x.finalize(statusSuccess, http.StatusOK)
	h := x.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Llmgw-Provider", x.rec.Provider)
	x.w.WriteHeader(http.StatusOK)
	_, _ = x.w.Write(body)
}

func finishReason(r string) string {
	if r == "" {
		return "stop"
	}
	return r
}

// mapFailure is the documented mapping of the last upstream failure to the
// gateway's answer. A provider's 401/403 is the gateway's misconfiguration,
// so the caller gets 502, never 401.
func mapFailure(f *attemptFailure, total context.Context) *apiError {
	name := f.route.Provider
	pe := f.err
	if errors.Is(total.Err(), context.DeadlineExceeded) {
		return &apiError{status: http.StatusGatewayTimeout, typ: typeProviderTimout, code: "gateway_deadline_exceeded",
			message: "the model alias's total deadline passed before a provider answered"}
	}
	switch f.outcome {
	case outcomeTimeout:
		return &apiError{status: http.StatusGatewayTimeout, typ: typeProviderTimout, code: "upstream_timeout",
			message: fmt.Sprintf("provider %s did not answer in time", name)}
	case outcomeConnection:
		return &apiError{status: http.StatusBadGateway, typ: typeProvider, code: "upstream_unavailable",
			message: fmt.Sprintf("provider %s could not be reached", name)}
	case outcomeStreamError:
		return &apiError{status: http.StatusBadGateway, typ: typeProvider, code: "upstream_error",
			message: fmt.Sprintf("provider %s failed before sending any content", name)}
	case outcomeProtocol:
		return &apiError{status: http.StatusBadGateway, typ: typeProvider, code: "upstream_bad_response",
			message: fmt.Sprintf("provider %s sent a response the gateway could not read", name)}
	}
	code := pe.StatusCode
	switch {
	case code == http.StatusTooManyRequests:
		return &apiError{status: http.StatusTooManyRequests, typ: typeProvider, code: "upstream_rate_limited",
			message: fmt.Sprintf("provider %s is rate limiting the gateway", name), retryAfter: pe.RetryAfter}
	case code >= 500:
		return &apiError{status: http.StatusBadGateway, typ: typeProvider, code: "upstream_error",
			message: fmt.Sprintf("provider %s answered HTTP %d", name, code)}
	case code == http.StatusBadRequest:
		msg := fmt.Sprintf("provider %s rejected the request", name)
		if pe.Message != "" {
			msg += ": " + pe.Message
		}
		return &apiError{status: http.StatusBadRequest, typ: typeProvider, code: "upstream_rejected_request", message: msg}
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return &apiError{status: http.StatusBadGateway, typ: typeProvider, code: "upstream_auth_failed",
			message: fmt.Sprintf("provider %s rejected the gateway's credentials (HTTP %d); this is a gateway configuration problem", name, code)}
	default:
		return &apiError{status: http.StatusBadGateway, typ: typeProvider, code: "upstream_rejected",
			message: fmt.Sprintf("provider %s answered HTTP %d", name, code)}
	}
}
