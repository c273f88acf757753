package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

func propagationCarrier(h http.Header) propagation.HeaderCarrier { return propagation.HeaderCarrier(h) }

func testSpanContext(t *testing.T) trace.SpanContext {
	t.Helper()
	tid, err := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	if err != nil {
		t.Fatal(err)
	}
	sid, err := trace.SpanIDFromHex("00f067aa0ba902b7")
	if err != nil {
		t.Fatal(err)
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
}

func TestAppendLogAttrs(t *testing.T) {
	base := []slog.Attr{slog.String("request_id", "r1")}
	tests := []struct {
		name string
		sc   trace.SpanContext
		want map[string]string
	}{
		{"valid", testSpanContext(t), map[string]string{"request_id": "r1",
			LogTraceID: "4bf92f3577b34da6a3ce929d0e0e4736", LogSpanID: "00f067aa0ba902b7"}},
		{"none", trace.SpanContext{}, map[string]string{"request_id": "r1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			for _, a := range AppendLogAttrs(base[:1:1], tc.sc) {
				got[a.Key] = a.Value.String()
			}
			if len(got) != len(tc.want) {
				t.Fatalf("attrs %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// AppendLogAttrs on an invalid context appends nothing and allocates
// nothing: it runs on every request with tracing off.
func TestAppendLogAttrsOffAllocatesNothing(t *testing.T) {
	buf := make([]slog.Attr, 1, 4)
	if n := testing.AllocsPerRun(100, func() { _ = AppendLogAttrs(buf, trace.SpanContext{}) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// LogHandler adds trace_id and span_id to records logged with a context
// carrying a span, through WithAttrs too, and leaves the others alone.
func TestLogHandler(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(LogHandler(slog.NewJSONHandler(&out, nil))).With("component", "test")
	ctx := trace.ContextWithSpanContext(context.Background(), testSpanContext(t))
	log.InfoContext(ctx, "with span")
	log.InfoContext(context.Background(), "without span")
	log.Info("no context")
	lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
	if len(lines) != 3 {
		t.Fatalf("%d lines", len(lines))
	}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatal(err)
		}
		_, has := m[LogTraceID]
		if want := i == 0; has != want || m["component"] != "test" {
			t.Fatalf("line %d %s: trace_id present %v, want %v (component kept)", i, l, has, want)
		}
		if i == 0 && (m[LogTraceID] != "4bf92f3577b34da6a3ce929d0e0e4736" || m[LogSpanID] != "00f067aa0ba902b7") {
			t.Fatalf("line %s", l)
		}
	}
}
