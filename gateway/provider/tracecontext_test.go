package provider

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// A request sent in a trace context carries it to the provider as W3C
// traceparent (and tracestate when there is one), on every protocol and
// both paths; a request without one carries none, and the headers the
// adapter shares between requests never keep one.
func TestTraceContextReachesTheProvider(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, err := trace.ParseTraceState("vendor=abc")
	if err != nil {
		t.Fatal(err)
	}
	sampled := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts})
	unsampled := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, Remote: true})
	tests := []struct {
		name                  string
		sc                    trace.SpanContext
		traceparent, tracestr string
	}{
		{"sampled with tracestate", sampled, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "vendor=abc"},
		{"not sampled", unsampled, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", ""},
		{"no trace context", trace.SpanContext{}, "", ""},
	}
	for _, protocol := range []string{ProtocolOpenAI, ProtocolAnthropic} {
		for _, stream := range []bool{false, true} {
			for _, tc := range tests {
				t.Run(protocol+"/"+tc.name, func(t *testing.T) {
					answer, ct := answerBody(protocol), "application/json"
					if stream {
						answer, ct = streamBody(protocol, "x"), "text/event-stream"
					}
					srv, seen := upstream(t, reply(200, ct, answer))
					a := newAdapter(t, protocol, srv.URL)
					ctx := trace.ContextWithSpanContext(testCtx(t), tc.sc)
					send(t, ctx, a, chatBody(t, protocol, stream), stream)
					h := (<-seen).header
					if g := h.Get("Traceparent"); g != tc.traceparent {
						t.Errorf("traceparent %q, want %q", g, tc.traceparent)
					}
					if g := h.Get("Tracestate"); g != tc.tracestr {
						t.Errorf("tracestate %q, want %q", g, tc.tracestr)
					}
					for _, shared := range baseOf(t, a).headers {
						if shared.Get("Traceparent") != "" || shared.Get("Tracestate") != "" {
							t.Fatalf("the shared headers keep a trace context: %v", shared)
						}
					}
				})
			}
		}
	}
}

// A forwarded caller header and the trace context go together, neither
// replacing the other.
func TestTraceContextWithForwardedHeaders(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	srv, seen := upstream(t, reply(200, "application/json", answerBody(ProtocolAnthropic)))
	a := newAdapter(t, ProtocolAnthropic, srv.URL)
	ctx := trace.ContextWithSpanContext(testCtx(t), sc)
	err := a.Complete(ctx, Call{Op: OpChat, Body: chatBody(t, ProtocolAnthropic, false), Header: http.Header{"Anthropic-Beta": {"b1"}}},
		func([]byte) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	h := (<-seen).header
	if h.Get("Anthropic-Beta") != "b1" || h.Get("Traceparent") == "" {
		t.Fatalf("anthropic-beta %q, traceparent %q: want both", h.Get("Anthropic-Beta"), h.Get("Traceparent"))
	}
}

// send makes one call, a completion or a stream read to its end.
func send(t *testing.T, ctx context.Context, a Adapter, body [][]byte, stream bool) {
	t.Helper()
	if !stream {
		if _, err := complete(ctx, a, body); err != nil {
			t.Fatal(err)
		}
		return
	}
	st, err := startStream(ctx, a, body)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for {
		if _, err := st.Next(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			return
		}
	}
}
