package telemetry

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// otelEnv are the variables Setup, the SDK and the exporters read; every
// test starts with all of them unset, whatever the machine's environment.
var otelEnv = []string{
	"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
	"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
	"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
}

// setEnv sets env (and unsets the rest of otelEnv) for the test, and puts
// otel's globals back when it ends: Setup sets them.
func setEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, k := range otelEnv {
		t.Setenv(k, env[k])
	}
	t.Cleanup(func() {
		otel.SetTracerProvider(noop.NewTracerProvider())
	})
}

func TestReadConfig(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		enabled  bool
		protocol string
		err      string
	}{
		{"nothing set: off", nil, false, "", ""},
		{"a protocol without an endpoint: off", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, false, "", ""},
		{"an endpoint: grpc by default", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"}, true, ProtocolGRPC, ""},
		{"the traces endpoint alone", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, true, ProtocolHTTPProtobuf, ""},
		{"the traces protocol wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, true, ProtocolHTTPProtobuf, ""},
		{"a blank endpoint is none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}, false, "", ""},
		{"an endpoint without scheme", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317"}, false, "",
			"OTEL_EXPORTER_OTLP_ENDPOINT: not a URL"},
		{"https endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://otel.example:443"}, true, ProtocolGRPC, ""},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_SDK_DISABLED": "true"}, false, "", ""},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_TRACES_EXPORTER": "none"}, false, "", ""},
		{"exporter otlp", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_TRACES_EXPORTER": "otlp"}, true, ProtocolGRPC, ""},
		{"exporter zipkin", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_TRACES_EXPORTER": "zipkin"},
			false, "", "OTEL_TRACES_EXPORTER"},
		{"http/json", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
			false, "", "OTEL_EXPORTER_OTLP_PROTOCOL=\"http/json\": unknown OTLP protocol"},
		{"unknown traces protocol", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "thrift"},
			false, "", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=\"thrift\": unknown OTLP protocol"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := readConfig(func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.enabled != tc.enabled || c.protocol != tc.protocol {
				t.Fatalf("enabled %v protocol %q, want %v %q", c.enabled, c.protocol, tc.enabled, tc.protocol)
			}
		})
	}
}

// No endpoint: a no-op provider, whose spans record nothing, and a
// shutdown with nothing to do; otel's global provider is left alone.
func TestSetupWithoutEndpointIsNoop(t *testing.T) {
	setEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_SERVICE_NAME": "x"})
	before := otel.GetTracerProvider()
	tp, shutdown, err := Setup(t.Context(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tp.(noop.TracerProvider); !ok {
		t.Fatalf("provider %T, want noop.TracerProvider", tp)
	}
	if _, sp := tp.Tracer(TracerName).Start(t.Context(), "s"); sp.IsRecording() || sp.SpanContext().IsValid() {
		t.Fatal("a no-op provider's span records or has ids")
	}
	if err := shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if otel.GetTracerProvider() != before {
		t.Fatal("a no-op setup replaced otel's global provider")
	}
}

// An unknown protocol is Setup's error, naming the variable and the value.
func TestSetupUnknownProtocol(t *testing.T) {
	setEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})
	tp, _, err := Setup(t.Context(), nil)
	if !errors.Is(err, ErrUnknownProtocol) || !strings.Contains(err.Error(), "http/json") {
		t.Fatalf("error %v, want ErrUnknownProtocol naming http/json", err)
	}
	if tp != nil {
		t.Fatalf("a provider (%T) with the error", tp)
	}
}

// collector is an OTLP/HTTP receiver: it keeps each POST /v1/traces.
type collector struct {
	mu       sync.Mutex
	bodies   [][]byte
	headers  []http.Header
	rejected []string // requests it could not take
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		c.rejected = append(c.rejected, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		w.WriteHeader(http.StatusNotFound)
		return
	}
	c.bodies, c.headers = append(c.bodies, b), append(c.headers, r.Header.Clone())
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse
}

func (c *collector) all() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Join(c.bodies, nil)
}

// http/protobuf: the spans reach the endpoint at /v1/traces as protobuf,
// batched and flushed by shutdown, with the resource (the default service
// name or the environment's, OTEL_RESOURCE_ATTRIBUTES) and the headers of
// OTEL_EXPORTER_OTLP_HEADERS; the provider became otel's global.
func TestSetupHTTPProtobufExports(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		service string
	}{
		{"default service name", nil, DefaultServiceName},
		{"OTEL_SERVICE_NAME", map[string]string{"OTEL_SERVICE_NAME": "gw-eu-1", "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=staging"}, "gw-eu-1"},
		{"service.name in OTEL_RESOURCE_ATTRIBUTES", map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.name=from-attrs,deployment.environment.name=staging"}, "from-attrs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			col := &collector{}
			srv := httptest.NewServer(col)
			defer srv.Close()
			env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
				"OTEL_EXPORTER_OTLP_HEADERS": "x-collector-token=t0k3n"}
			for k, v := range tc.env {
				env[k] = v
			}
			setEnv(t, env)
			tp, shutdown, err := Setup(t.Context(), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			if otel.GetTracerProvider() != tp {
				t.Error("the provider is not otel's global")
			}
			names := []string{"span-one", "span-two", "span-three"}
			for _, n := range names {
				_, sp := tp.Tracer(TracerName).Start(t.Context(), n)
				if !sp.IsRecording() {
					t.Fatal("the default sampler dropped a root span")
				}
				sp.End()
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if err := shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			got := col.all()
			if len(col.rejected) > 0 || len(got) == 0 {
				t.Fatalf("received %d bytes; rejected %q", len(got), col.rejected)
			}
			for _, want := range append(names, tc.service) {
				if !bytes.Contains(got, []byte(want)) {
					t.Errorf("the export lacks %q", want)
				}
			}
			if tc.service != DefaultServiceName && bytes.Contains(got, []byte(DefaultServiceName)) {
				t.Errorf("the export still names %s", DefaultServiceName)
			}
			if tc.env["OTEL_RESOURCE_ATTRIBUTES"] != "" && !bytes.Contains(got, []byte("staging")) {
				t.Error("the export lacks OTEL_RESOURCE_ATTRIBUTES")
			}
			if h := col.headers[0].Get("X-Collector-Token"); h != "t0k3n" {
				t.Errorf("header from OTEL_EXPORTER_OTLP_HEADERS = %q", h)
			}
		})
	}
}

// grpc (the default protocol): the exporter sends to the endpoint over
// HTTP/2. The listener here is no gRPC server; the HTTP/2 client preface
// arriving on it is what shows the gRPC exporter exports there.
func TestSetupGRPCExports(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	preface := make(chan string, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, _ := bufio.NewReader(conn).ReadString('\n')
		preface <- line
	}()
	setEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + ln.Addr().String()})
	tp, shutdown, err := Setup(t.Context(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	_, sp := tp.Tracer(TracerName).Start(t.Context(), "span-grpc")
	sp.End()
	// The export fails (nobody answers gRPC here); shutdown returns once
	// its deadline passes.
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	_ = shutdown(ctx)
	select {
	case got := <-preface:
		if !strings.HasPrefix(got, "PRI * HTTP/2.0") {
			t.Fatalf("the endpoint got %q, want the HTTP/2 preface", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the gRPC exporter never connected to the endpoint")
	}
}

// The sampler is the environment's: always_off leaves spans unrecorded
// (their ids still exist, for propagation).
func TestSetupReadsTheSampler(t *testing.T) {
	col := &collector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	setEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
		"OTEL_TRACES_SAMPLER": "always_off"})
	tp, shutdown, err := Setup(t.Context(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = shutdown(t.Context()) }()
	_, sp := tp.Tracer(TracerName).Start(t.Context(), "dropped")
	defer sp.End()
	if sp.IsRecording() || !sp.SpanContext().IsValid() {
		t.Fatalf("recording %v, valid %v: want a valid span that does not record", sp.IsRecording(), sp.SpanContext().IsValid())
	}
}

// Propagator reads and writes W3C traceparent and tracestate.
func TestPropagatorIsW3CTraceContext(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	in := http.Header{"Traceparent": {tp}, "Tracestate": {"vendor=abc"}}
	ctx := Propagator.Extract(context.Background(), propagationCarrier(in))
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsRemote() || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.TraceState().String() != "vendor=abc" {
		t.Fatalf("extracted %+v", sc)
	}
	out := http.Header{}
	Propagator.Inject(ctx, propagationCarrier(out))
	if out.Get("Traceparent") != tp || out.Get("Tracestate") != "vendor=abc" {
		t.Fatalf("injected %v", out)
	}
	if f := Propagator.Fields(); len(f) != 2 {
		t.Fatalf("fields %v, want traceparent and tracestate only", f)
	}
}
