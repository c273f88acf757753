// Package telemetry sets up the gateway's OpenTelemetry traces, configured
// the standard way, by the OTEL_* environment variables every OpenTelemetry
// SDK reads:
//
//   - OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT: where
//     spans go. With neither set, tracing is off: a no-op provider, nothing
//     started, nothing done per request.
//   - OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL:
//     "grpc" (the default) or "http/protobuf"; anything else is an error.
//   - OTEL_SERVICE_NAME (default "llmgw-gateway") and
//     OTEL_RESOURCE_ATTRIBUTES: the resource.
//   - OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (default
//     parentbased_always_on), read by the SDK; OTEL_BSP_* by its batch
//     span processor; OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION,
//     _CERTIFICATE, _INSECURE... by the exporters.
//   - OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn tracing off
//     whatever the endpoint.
//
// Context crosses process boundaries as W3C trace context (traceparent and
// tracestate): Propagator.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// DefaultServiceName is the resource's service.name unless OTEL_SERVICE_NAME
// (or service.name in OTEL_RESOURCE_ATTRIBUTES) says otherwise.
const DefaultServiceName = "llmgw-gateway"

// TracerName is the instrumentation scope of the gateway's spans.
const TracerName = "github.com/llmgw/llmgw/gateway"

// The OTLP protocols the gateway can export with.
const (
	ProtocolGRPC         = "grpc"
	ProtocolHTTPProtobuf = "http/protobuf"
)

// ErrUnknownProtocol is the error of an OTLP protocol the gateway cannot
// export with (http/json among them: the Go SDK has no exporter for it).
var ErrUnknownProtocol = errors.New("unknown OTLP protocol")

// Setup returns the tracer provider the environment configures and the
// function that flushes and stops it (call it on shutdown, with a deadline).
// With no OTLP endpoint set it returns a no-op provider: no exporter, no
// goroutine, and spans that cost nothing. When tracing is on it also makes
// the provider and the W3C propagator otel's globals, and routes the SDK's
// own errors (a collector that is down) to log, so that libraries that
// trace through the globals join the gateway's traces.
func Setup(ctx context.Context, log *slog.Logger) (trace.TracerProvider, func(context.Context) error, error) {
	if log == nil {
		log = slog.Default()
	}
	cfg, err := readConfig(os.Getenv)
	if err != nil {
		return nil, nil, err
	}
	if !cfg.enabled {
		return noop.NewTracerProvider(), func(context.Context) error { return nil }, nil
	}
	exp, err := newExporter(ctx, cfg.protocol)
	if err != nil {
		return nil, nil, err
	}
	res, err := newResource(ctx)
	if err != nil {
		// A partial resource (a detector that failed) is still usable.
		log.Warn("opentelemetry resource incomplete", "err", err)
	}
	// The sampler is the SDK's: it reads OTEL_TRACES_SAMPLER(_ARG) itself,
	// parentbased_always_on when unset. The batcher reads OTEL_BSP_*.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(Propagator)
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("opentelemetry", "err", err)
	}))
	log.Info("tracing enabled", "protocol", cfg.protocol, "endpoint_var", cfg.endpointVar)
	return tp, tp.Shutdown, nil
}

// config is what Setup decides from the environment itself; everything
// else the SDK and the exporters read on their own.
type config struct {
	enabled     bool
	protocol    string
	endpointVar string // the variable that set the endpoint, for the log line (its value may carry credentials)
}

// readConfig reads whether tracing is on and with which protocol.
func readConfig(getenv func(string) string) (config, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return config{}, nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "", "otlp":
	case "none":
		return config{}, nil
	default:
		return config{}, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: only otlp and none are supported", exp)
	}
	var c config
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if e := strings.TrimSpace(getenv(v)); e != "" {
			// The exporters would ignore an endpoint that is no URL and
			// export to localhost instead: refuse it here.
			if u, err := url.Parse(e); err != nil || u.Host == "" {
				return config{}, fmt.Errorf("%s: not a URL with a host, such as http://collector:4317", v)
			}
			c.enabled, c.endpointVar = true, v
			break
		}
	}
	if !c.enabled {
		return config{}, nil
	}
	c.protocol = ProtocolGRPC
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		p := strings.TrimSpace(getenv(v))
		if p == "" {
			continue
		}
		switch p {
		case ProtocolGRPC, ProtocolHTTPProtobuf:
			c.protocol = p
		default:
			return config{}, fmt.Errorf("%s=%q: %w (want %s or %s)", v, p, ErrUnknownProtocol, ProtocolGRPC, ProtocolHTTPProtobuf)
		}
		break
	}
	return c, nil
}

// newExporter is the OTLP exporter of protocol; it reads its endpoint,
// headers, TLS, timeout and compression from the environment. Neither
// connects here: gRPC dials lazily, HTTP on the first export.
func newExporter(ctx context.Context, protocol string) (sdktrace.SpanExporter, error) {
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch protocol {
	case ProtocolGRPC:
		exp, err = otlptracegrpc.New(ctx)
	case ProtocolHTTPProtobuf:
		exp, err = otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("%q: %w", protocol, ErrUnknownProtocol)
	}
	if err != nil {
		return nil, fmt.Errorf("creating the OTLP %s trace exporter: %w", protocol, err)
	}
	return exp, nil
}

// newResource describes the process: service.name (DefaultServiceName
// unless the environment names it), OTEL_RESOURCE_ATTRIBUTES, the host and
// the SDK. Later detectors win, so the environment overrides the default.
func newResource(ctx context.Context) (*resource.Resource, error) {
	return resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", DefaultServiceName)),
		resource.WithFromEnv(),
		resource.WithHost(),
		resource.WithTelemetrySDK(),
	)
}
