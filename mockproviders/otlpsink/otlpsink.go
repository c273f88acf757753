// Package otlpsink is the smallest OTLP trace receiver a test can query:
// it takes OTLP/HTTP exports (POST /v1/traces, protobuf or JSON), keeps the
// newest spans in memory and answers GET /mock/spans with them as JSON. The
// kind e2e suite runs it (`llmgw mockprovider --flavor otlp`) as the
// gateways' trace endpoint, built from this repository like the mocks,
// instead of an OpenTelemetry Collector image that could not be pulled.
package otlpsink

import (
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Paths of the sink.
const (
	TracesPath = "/v1/traces"
	SpansPath  = "/mock/spans"
	ResetPath  = "/mock/reset"
)

// maxSpans bounds what the sink keeps (the oldest go first); maxBody an
// export's body.
const (
	maxSpans = 20_000
	maxBody  = 16 << 20
)

// Span is one received span as GET /mock/spans shows it. Ids are lower-case
// hex; attribute values are strings, numbers, booleans or lists of them.
type Span struct {
	Service      string         `json:"service"`
	TraceID      string         `json:"trace_id"`
	SpanID       string         `json:"span_id"`
	ParentSpanID string         `json:"parent_span_id"`
	Name         string         `json:"name"`
	Kind         string         `json:"kind"` // SPAN_KIND_SERVER, SPAN_KIND_CLIENT...
	Start        time.Time      `json:"start"`
	End          time.Time      `json:"end"`
	Attributes   map[string]any `json:"attributes"`
	Events       []Event        `json:"events,omitzero"`
	StatusCode   string         `json:"status_code"` // STATUS_CODE_UNSET, _OK, _ERROR
	StatusText   string         `json:"status_message,omitzero"`
}

// Event is a span event.
type Event struct {
	Name       string         `json:"name"`
	Attributes map[string]any `json:"attributes"`
}

// Spans is the body of GET /mock/spans.
type Spans struct {
	Spans []Span `json:"spans"`
}

// Sink is the receiver. The zero value is not usable: use New.
type Sink struct {
	mu    sync.Mutex
	spans []Span
}

// New is an empty sink.
func New() *Sink { return &Sink{} }

// Handler serves the sink's paths and /healthz.
func (s *Sink) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+TracesPath, s.export)
	mux.HandleFunc("GET "+SpansPath, s.list)
	mux.HandleFunc("POST "+ResetPath, func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		s.spans = nil
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	return mux
}

// export takes one ExportTraceServiceRequest.
func (s *Sink) export(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var req coltracepb.ExportTraceServiceRequest
	asJSON := ct == "application/json"
	if asJSON {
		err = protojson.Unmarshal(body, &req)
	} else {
		err = proto.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, "malformed export: "+err.Error(), http.StatusBadRequest)
		return
	}
	got := flatten(&req)
	s.mu.Lock()
	s.spans = append(s.spans, got...)
	if n := len(s.spans); n > maxSpans {
		s.spans = append([]Span(nil), s.spans[n-maxSpans:]...)
	}
	s.mu.Unlock()
	var out []byte
	if asJSON {
		out, err = protojson.Marshal(&coltracepb.ExportTraceServiceResponse{})
	} else {
		out, err = proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ct)
	_, _ = w.Write(out)
}

// list answers the spans kept, those of one trace with ?trace_id=.
func (s *Sink) list(w http.ResponseWriter, r *http.Request) {
	want := r.URL.Query().Get("trace_id")
	s.mu.Lock()
	out := Spans{Spans: []Span{}}
	for _, sp := range s.spans {
		if want == "" || sp.TraceID == want {
			out.Spans = append(out.Spans, sp)
		}
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if err := json.MarshalWrite(w, out); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// flatten turns an export into Spans, each with its resource's
// service.name.
func flatten(req *coltracepb.ExportTraceServiceRequest) []Span {
	var out []Span
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				out = append(out, spanOf(service, sp))
			}
		}
	}
	return out
}

func spanOf(service string, sp *tracepb.Span) Span {
	out := Span{Service: service, TraceID: hex.EncodeToString(sp.GetTraceId()), SpanID: hex.EncodeToString(sp.GetSpanId()),
		ParentSpanID: hex.EncodeToString(sp.GetParentSpanId()), Name: sp.GetName(), Kind: sp.GetKind().String(),
		Start: time.Unix(0, int64(sp.GetStartTimeUnixNano())).UTC(), End: time.Unix(0, int64(sp.GetEndTimeUnixNano())).UTC(),
		Attributes: attributes(sp.GetAttributes()), StatusCode: sp.GetStatus().GetCode().String(), StatusText: sp.GetStatus().GetMessage()}
	for _, e := range sp.GetEvents() {
		out.Events = append(out.Events, Event{Name: e.GetName(), Attributes: attributes(e.GetAttributes())})
	}
	return out
}

func attributes(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = value(kv.GetValue())
	}
	return m
}

func value(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, value(e))
		}
		return out
	case nil:
		return nil
	default:
		return fmt.Sprintf("%v", x)
	}
}
