package otlpsink_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmgw/llmgw/mockproviders/otlpsink"
)

// The real OTLP/HTTP exporter of the Go SDK sends to the sink; GET
// /mock/spans shows the spans of one trace with their parent, kind,
// attributes, events and status.
func TestSinkReceivesTheSDKsExport(t *testing.T) {
	srv := httptest.NewServer(otlpsink.New().Handler())
	defer srv.Close()
	exp, err := otlptracehttp.New(t.Context(), otlptracehttp.WithEndpointURL(srv.URL+otlpsink.TracesPath))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("llmgw-gateway"))))
	tr := tp.Tracer("test")
	ctx, parent := tr.Start(context.Background(), "chat chat-alpha", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("gen_ai.request.model", "chat-alpha"), attribute.Int("gen_ai.usage.input_tokens", 7)))
	_, child := tr.Start(ctx, "chat alpha-large", trace.WithSpanKind(trace.SpanKindClient))
	child.SetStatus(codes.Error, "upstream 503")
	child.End()
	parent.AddEvent("provider skipped", trace.WithAttributes(attribute.String("llmgw.provider", "beta")))
	parent.End()
	if err := tp.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	traceID := parent.SpanContext().TraceID().String()

	resp, err := http.Get(srv.URL + otlpsink.SpansPath + "?trace_id=" + traceID)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got otlpsink.Spans
	if err := json.UnmarshalRead(resp.Body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Spans) != 2 {
		t.Fatalf("%d spans, want 2: %+v", len(got.Spans), got)
	}
	byName := map[string]otlpsink.Span{}
	for _, s := range got.Spans {
		byName[s.Name] = s
	}
	p, c := byName["chat chat-alpha"], byName["chat alpha-large"]
	switch {
	case p.Service != "llmgw-gateway" || p.Kind != "SPAN_KIND_SERVER" || p.Attributes["gen_ai.request.model"] != "chat-alpha":
		t.Fatalf("server span %+v", p)
	case p.Attributes["gen_ai.usage.input_tokens"] != float64(7):
		t.Fatalf("input tokens %#v", p.Attributes["gen_ai.usage.input_tokens"])
	case len(p.Events) != 1 || p.Events[0].Name != "provider skipped" || p.Events[0].Attributes["llmgw.provider"] != "beta":
		t.Fatalf("events %+v", p.Events)
	case c.ParentSpanID != p.SpanID || c.TraceID != traceID || c.Kind != "SPAN_KIND_CLIENT" || c.StatusCode != "STATUS_CODE_ERROR":
		t.Fatalf("client span %+v, parent %s", c, p.SpanID)
	}
	// Another trace id: none.
	resp2, err := http.Get(srv.URL + otlpsink.SpansPath + "?trace_id=" + strings.Repeat("0", 31) + "1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	var none otlpsink.Spans
	if err := json.UnmarshalRead(resp2.Body, &none); err != nil || len(none.Spans) != 0 {
		t.Fatalf("another trace: %+v %v", none, err)
	}
}

func TestSinkRefusesAMalformedExport(t *testing.T) {
	srv := httptest.NewServer(otlpsink.New().Handler())
	defer srv.Close()
	resp, err := http.Post(srv.URL+otlpsink.TracesPath, "application/x-protobuf", strings.NewReader("\xff\xff not protobuf"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("HTTP %d for a malformed export", resp.StatusCode)
	}
}
