package telemetry

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Propagator is how trace context crosses process boundaries: W3C trace
// context, the traceparent and tracestate headers. The gateway extracts it
// from a caller's request and injects it into its provider requests
// (gateway/provider uses the same propagator). Baggage is not propagated:
// it is caller data, and nothing of the caller's goes to a provider
// unless the gateway chose it.
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// The log attributes of a span: the names most log pipelines (and the
// OpenTelemetry log data model's JSON mapping) correlate traces by.
const (
	LogTraceID = "trace_id"
	LogSpanID  = "span_id"
)

// AppendLogAttrs appends trace_id and span_id of sc to attrs when sc is
// valid (a span of the gateway's, or a caller's trace context the gateway
// continued with tracing off), and returns attrs unchanged otherwise.
func AppendLogAttrs(attrs []slog.Attr, sc trace.SpanContext) []slog.Attr {
	if !sc.IsValid() {
		return attrs
	}
	return append(attrs, slog.String(LogTraceID, sc.TraceID().String()), slog.String(LogSpanID, sc.SpanID().String()))
}

// LogHandler wraps h so that every record logged with a context carrying a
// valid span context (Logger.InfoContext and the like) gets trace_id and
// span_id (inside any group the logger has opened with WithGroup). Records
// logged without a context, or with one without a span, are passed on
// untouched.
func LogHandler(h slog.Handler) slog.Handler { return &logHandler{h} }

type logHandler struct{ slog.Handler }

func (l *logHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx != nil {
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			r = r.Clone()
			r.AddAttrs(slog.String(LogTraceID, sc.TraceID().String()), slog.String(LogSpanID, sc.SpanID().String()))
		}
	}
	return l.Handler.Handle(ctx, r)
}

func (l *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logHandler{l.Handler.WithAttrs(attrs)}
}

func (l *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{l.Handler.WithGroup(name)}
}
