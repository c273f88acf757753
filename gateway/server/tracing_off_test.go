package server

import (
	"log/slog"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/telemetry"
	"github.com/llmgw/llmgw/gateway/usage"
)

// Only a tracer that records anything turns tracing on.
func TestTracerOf(t *testing.T) {
	sdk := sdktrace.NewTracerProvider().Tracer("t")
	tests := []struct {
		name string
		in   trace.Tracer
		on   bool
	}{
		{"none", nil, false},
		{"no-op provider's", noop.NewTracerProvider().Tracer("t"), false},
		{"no-op value", noop.Tracer{}, false},
		{"SDK's", sdk, true},
	}
	for _, tc := range tests {
		if got := tracerOf(tc.in) != nil; got != tc.on {
			t.Errorf("%s: on %v, want %v", tc.name, got, tc.on)
		}
	}
}

// With tracing off, everything tracing adds to a request (the server span,
// an attempt, a skip, the log line's trace attributes) allocates nothing.
func TestTracingOffAllocatesNothing(t *testing.T) {
	x := &exchange{s: &Server{}, r: httptest.NewRequest("POST", "/v1/chat/completions", nil), ing: &chatIngress}
	c := &candidate{route: snapshot.Route{Provider: "alpha", Model: "m"}}
	var buf [14]slog.Attr
	n := testing.AllocsPerRun(100, func() {
		x.startSpan()
		_ = x.startAttempt(x.runContext(), c)
		x.skipped("alpha", skipCircuitOpen)
		x.endAttempt(usage.OutcomeOK, 200)
		x.endSpan(statusSuccess, 200)
		_ = telemetry.AppendLogAttrs(buf[:0], x.spanContext())
	})
	if n != 0 {
		t.Fatalf("%v allocations per request with tracing off", n)
	}
}
