package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/provider"
	"github.com/llmgw/llmgw/gateway/usage"
)

// The fallback rule the route loop runs, with the budget around it.
func TestNextStep(t *testing.T) {
	const F, S = stepFallback, stepStop
	tests := []struct {
		name                               string
		kind                               failKind
		sent                               bool
		attempts, maxFallbacks, routesLeft int
		want                               step
	}{
		{"timeout, budget left", failTimeout, false, 1, 1, 1, F},
		{"connection", failConnection, false, 1, 1, 1, F},
		{"stream failed before content", failStream, false, 1, 1, 1, F},
		{"429", failRateLimited, false, 1, 1, 1, F},
		{"5xx", failUpstream, false, 1, 1, 1, F},
		{"400 never", failRejected, false, 1, 3, 3, S},
		{"401/403 never", failUpstreamAuth, false, 1, 3, 3, S},
		{"other status", failStatus, false, 1, 3, 3, S},
		{"malformed response", failProtocol, false, 1, 3, 3, S},
		{"total deadline passed", failDeadline, false, 1, 3, 3, S},
		{"client gone", failCanceled, false, 1, 3, 3, S},

		{"commit point: content was sent", failStream, true, 1, 3, 3, S},
		{"commit point: timeout after content", failTimeout, true, 1, 3, 3, S},
		{"commit point: connection after content", failConnection, true, 1, 3, 3, S},

		{"maxFallbacks 0", failTimeout, false, 1, 0, 2, S},
		{"budget spent", failUpstream, false, 2, 1, 1, S},
		{"second fallback of three", failUpstream, false, 2, 3, 2, F},
		{"third fallback of three", failUpstream, false, 3, 3, 1, F},
		{"budget of three spent", failUpstream, false, 4, 3, 0, S},
		{"no route left", failConnection, false, 1, 1, 0, S},
	}
	for _, tc := range tests {
		if got := nextStep(tc.kind, tc.sent, tc.attempts, tc.maxFallbacks, tc.routesLeft); got != tc.want {
			t.Errorf("%s: nextStep = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// What the adapters report, named by classify and judged by nextStep on a
// fresh budget (primary failed, one fallback allowed and listed). The cancel
// causes are the gateway's own timeouts: the adapter saw only a cancellation,
// and they still fall back.
func TestFallbackByFailure(t *testing.T) {
	live := func() context.Context { return context.Background() }
	causedBy := func(cause error) context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		return ctx
	}
	// The total deadline's context ended the attempt.
	expired := func() context.Context { return causedBy(context.DeadlineExceeded) }
	// The alias's total deadline: passed, or a minute away.
	passed, ahead := time.Now().Add(-time.Second), time.Now().Add(time.Minute)
	status := func(code int) error { return &provider.Error{Kind: provider.KindStatus, StatusCode: code} }
	kind := func(k provider.Kind) error { return &provider.Error{Kind: k} }
	tests := []struct {
		name         string
		err          error
		total        time.Time
		actx         context.Context
		clientGone   bool
		wantKind     failKind
		wantFallback bool
	}{
		{"upstream timeout", kind(provider.KindTimeout), ahead, live(), false, failTimeout, true},
		{"connection failure", kind(provider.KindConnection), ahead, live(), false, failConnection, true},
		{"error event or cut before content", kind(provider.KindStream), ahead, live(), false, failStream, true},
		{"not an *Error: a connection failure", errors.New("boom"), ahead, live(), false, failConnection, true},
		{"429", status(429), ahead, live(), false, failRateLimited, true},
		{"500", status(500), ahead, live(), false, failUpstream, true},
		{"502", status(502), ahead, live(), false, failUpstream, true},
		{"503", status(503), ahead, live(), false, failUpstream, true},
		{"529 overloaded", status(529), ahead, live(), false, failUpstream, true},
		{"400", status(400), ahead, live(), false, failRejected, false},
		{"401", status(401), ahead, live(), false, failUpstreamAuth, false},
		{"403", status(403), ahead, live(), false, failUpstreamAuth, false},
		{"404", status(404), ahead, live(), false, failStatus, false},
		{"307 redirect", status(307), ahead, live(), false, failStatus, false},
		{"malformed", kind(provider.KindProtocol), ahead, live(), false, failProtocol, false},
		{"adapter canceled", kind(provider.KindCanceled), ahead, live(), false, failCanceled, false},
		{"attempt timeout", kind(provider.KindCanceled), ahead, causedBy(errAttemptTimeout), false, failTimeout, true},
		{"first-chunk timeout", kind(provider.KindCanceled), ahead, causedBy(errFirstChunkTimeout), false, failTimeout, true},
		{"idle timeout", kind(provider.KindCanceled), ahead, causedBy(errIdleTimeout), false, failTimeout, true},
		{"total deadline", kind(provider.KindTimeout), passed, expired(), false, failDeadline, false},
		{"total deadline hides a retryable 503", status(503), passed, live(), false, failDeadline, false},
		{"client gone", kind(provider.KindCanceled), ahead, live(), true, failCanceled, false},
		{"client gone hides a retryable 503", status(503), ahead, live(), true, failCanceled, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
			if tc.clientGone {
				ctx, cancel := context.WithCancel(r.Context())
				cancel()
				r = r.WithContext(ctx)
			}
			x := &exchange{r: r, deadline: tc.total}
			f := x.classify(tc.actx, snapshot.Route{Provider: "alpha"}, tc.err, false)
			if f.kind != tc.wantKind {
				t.Fatalf("kind %d, want %d", f.kind, tc.wantKind)
			}
			if got := nextStep(f.kind, f.sent, 1, 1, 1) == stepFallback; got != tc.wantFallback {
				t.Fatalf("fallback %v, want %v", got, tc.wantFallback)
			}
			if f.err == nil {
				t.Fatal("a failure without its provider error")
			}
		})
	}
}

// The failures table, row by row as the README's fault matrix states it.
func TestFailureTable(t *testing.T) {
	tests := []struct {
		kind                    failKind
		outcome                 string
		blame                   bool
		status                  int
		typ, code               string
		streamCode, afterRecord string
	}{
		{failTimeout, usage.OutcomeTimeout, true, 504, typeProviderTimeout, "upstream_timeout", "upstream_timeout", statusPartial},
		{failDeadline, usage.OutcomeTimeout, true, 504, typeProviderTimeout, "gateway_deadline_exceeded", "upstream_timeout", statusPartial},
		{failConnection, usage.OutcomeConnection, true, 502, typeProvider, "upstream_unavailable", "upstream_interrupted", statusPartial},
		{failStream, usage.OutcomeStreamError, true, 502, typeProvider, "upstream_error", "upstream_interrupted", statusPartial},
		{failProtocol, usage.OutcomeProtocol, true, 502, typeProvider, "upstream_bad_response", "upstream_interrupted", statusPartial},
		{failRateLimited, usage.OutcomeStatus, true, 429, typeProvider, "upstream_rate_limited", "upstream_interrupted", statusPartial},
		{failUpstream, usage.OutcomeStatus, true, 502, typeProvider, "upstream_error", "upstream_interrupted", statusPartial},
		{failRejected, usage.OutcomeStatus, false, 400, typeProvider, "upstream_rejected_request", "upstream_interrupted", statusPartial},
		{failUpstreamAuth, usage.OutcomeStatus, true, 502, typeProvider, "upstream_auth_failed", "upstream_interrupted", statusPartial},
		{failStatus, usage.OutcomeStatus, false, 502, typeProvider, "upstream_rejected", "upstream_interrupted", statusPartial},
		{failCanceled, usage.OutcomeCanceled, false, 499, "client_canceled", "", "", statusCanceled},
		{failUnavailable, usage.OutcomeUnavailable, false, 503, typeProvider, "provider_unavailable", "upstream_interrupted", statusPartial},
	}
	if len(tests) != int(numFailKinds) {
		t.Fatalf("%d rows tested, %d kinds", len(tests), numFailKinds)
	}
	for _, tc := range tests {
		row := failures[tc.kind]
		b, a := row.before, row.after
		wantBefore := statusError
		if tc.kind == failCanceled {
			wantBefore = statusCanceled
		}
		if row.outcome != tc.outcome || row.blame != tc.blame || b.record != wantBefore || b.status != tc.status ||
			b.typ != tc.typ || b.code != tc.code || a.code != tc.streamCode || a.record != tc.afterRecord {
			t.Errorf("kind %d: row %+v", tc.kind, row)
		}
		if tc.kind != failCanceled && (a.status != http.StatusOK || a.typ != typeStream || a.message == "" || b.message == "") {
			t.Errorf("kind %d: after answer %+v", tc.kind, a)
		}
	}
}

func TestFailureAPIError(t *testing.T) {
	route := snapshot.Route{Provider: "alpha"}
	tests := []struct {
		kind       failKind
		err        provider.Error
		message    string
		retryAfter time.Duration
	}{
		{failRateLimited, provider.Error{StatusCode: 429, RetryAfter: 7 * time.Second, Message: "slow down"},
			"provider alpha is rate limiting the gateway", 7 * time.Second},
		{failUpstream, provider.Error{StatusCode: 503, RetryAfter: time.Second},
			"provider alpha answered HTTP 503", 0},
		{failRejected, provider.Error{StatusCode: 400, Message: "max_tokens too large"},
			"provider alpha rejected the request: max_tokens too large", 0},
		{failRejected, provider.Error{StatusCode: 400}, "provider alpha rejected the request", 0},
		{failUpstreamAuth, provider.Error{StatusCode: 403},
			"provider alpha rejected the gateway's credentials (HTTP 403); this is a gateway configuration problem", 0},
		{failDeadline, provider.Error{}, "the model alias's total deadline passed before a provider answered", 0},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.kind), func(t *testing.T) {
			e := (&failure{kind: tc.kind, route: route, err: &tc.err}).apiError()
			if e.message != tc.message || e.retryAfter != tc.retryAfter || e.status != failures[tc.kind].before.status {
				t.Fatalf("got %+v", e)
			}
		})
	}
}
