package server

// Traces of model requests (issue 47). Every request to an endpoint that
// routes to providers (chat, embeddings, messages, responses) is one server
// span, "{operation} {alias}", continuing the caller's W3C trace context
// and ended when its record is final (finalize); every provider attempt is
// one client span under it, "{operation} {provider model}", whose context
// the provider receives as traceparent (gateway/provider). A route passed
// over without a call (an open breaker, an unreadable credential) is an
// event on the server span.
//
// Attributes follow the OpenTelemetry GenAI semantic conventions where
// they have a name (gen_ai.*, as of semconv 1.40), llmgw.* otherwise.
// They are the record's fields, the route's names and the provider's
// finish reason (as the translators report it), never the caller's
// key or its hash, and never what the request or the answer says: no
// prompt, message, tool argument or completion text reaches a span,
// whatever the settings.
//
// Tracing off (Options.Tracer nil or a no-op tracer) costs a map lookup per
// request: no span, no attribute, no allocation. A caller's traceparent
// still reaches the provider unchanged then: its context is extracted and
// carried as is. With a tracer whose sampler drops the request, the spans
// exist (their ids go to the provider) but nothing is built for them
// (IsRecording).

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/llmgw/llmgw/gateway/telemetry"
	"github.com/llmgw/llmgw/gateway/usage"
)

// hdrTraceparent is W3C trace context's header (canonical form): its
// presence decides whether a request's trace context is read at all.
const hdrTraceparent = "Traceparent"

// The span attributes.
const (
	attrOperation       = attribute.Key("gen_ai.operation.name")
	attrRequestModel    = attribute.Key("gen_ai.request.model")
	attrResponseModel   = attribute.Key("gen_ai.response.model")
	attrProviderName    = attribute.Key("gen_ai.provider.name")
	attrInputTokens     = attribute.Key("gen_ai.usage.input_tokens")
	attrOutputTokens    = attribute.Key("gen_ai.usage.output_tokens")
	attrFinishReasons   = attribute.Key("gen_ai.response.finish_reasons")
	attrCachedTokens    = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	attrReasoningTokens = attribute.Key("llmgw.usage.reasoning_tokens")
	attrCost            = attribute.Key("llmgw.cost")
	attrCurrency        = attribute.Key("llmgw.cost.currency")
	attrProvider        = attribute.Key("llmgw.provider")
	attrKeyID           = attribute.Key("llmgw.key_id")
	attrRequestID       = attribute.Key("llmgw.request_id")
	attrEndpoint        = attribute.Key("llmgw.endpoint")
	attrStream          = attribute.Key("llmgw.stream")
	attrFallbacks       = attribute.Key("llmgw.fallbacks")
	attrStatus          = attribute.Key("llmgw.status")
	attrOutcome         = attribute.Key("llmgw.attempt.outcome")
	attrFallbackIndex   = attribute.Key("llmgw.fallback_index")
	attrSkipReason      = attribute.Key("llmgw.skip.reason")
	attrHTTPStatus      = attribute.Key("http.response.status_code")
	attrErrorType       = attribute.Key("error.type")
	attrServerAddress   = attribute.Key("server.address")
	attrServerPort      = attribute.Key("server.port")
)

// maxFinishReason bounds a finish reason in a span: every protocol's is a
// short enum ("max_output_tokens" is the longest, 17 bytes).
const maxFinishReason = 64

// Why a route was passed over without a call (llmgw.skip.reason).
const (
	skipCircuitOpen = "circuit_open"
	skipCredential  = "credential_unavailable"
)

// eventSkipped is the server span's event of a route passed over.
const eventSkipped = "provider skipped"

// tracerOf is the tracer a server uses: nil (tracing off, no work per
// request) for none or a no-op one.
func tracerOf(t trace.Tracer) trace.Tracer {
	switch t.(type) {
	case nil, noop.Tracer, *noop.Tracer:
		return nil
	}
	return t
}

// startSpan starts the request's server span, as a child of the caller's
// trace context when it sent one, and sets x.ctx: the context the request's
// attempts run in. Tracing off, x.ctx is the request's own context, with
// the caller's trace context when it sent one (so the provider gets it).
func (x *exchange) startSpan() {
	ctx := x.r.Context()
	if len(x.r.Header[hdrTraceparent]) > 0 {
		ctx = telemetry.Propagator.Extract(ctx, propagation.HeaderCarrier(x.r.Header))
	}
	x.ctx = ctx
	if x.s.tracer == nil {
		return
	}
	op := operationOf(x.ing.endpoint)
	x.ctx, x.span = x.s.tracer.Start(ctx, op, trace.WithSpanKind(trace.SpanKindServer))
	if x.span.IsRecording() {
		x.span.SetAttributes(attrOperation.String(op), attrEndpoint.String(x.ing.endpoint),
			attrRequestID.String(x.rec.RequestID))
	}
}

// runContext is the context the request's work runs in: its server span's
// (startSpan), or the request's own for an exchange that has none.
func (x *exchange) runContext() context.Context {
	if x.ctx != nil {
		return x.ctx
	}
	return x.r.Context()
}

// spanContext is the trace context of the request's log line: its server
// span's, or with tracing off the caller's; invalid without either.
func (x *exchange) spanContext() trace.SpanContext {
	if x.ctx == nil {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(x.ctx)
}

// endSpan puts the final record on the server span and ends it; the
// second call does nothing. A request that failed (any status but
// success) carries the record's error type and the Error status.
func (x *exchange) endSpan(status string, httpStatus int) {
	sp := x.span
	if sp == nil {
		return
	}
	x.span = nil
	if sp.IsRecording() {
		r := &x.rec
		name := operationOf(x.ing.endpoint)
		if x.alias != nil {
			// The configured alias, never the caller's string: span names
			// are grouped by, and must stay as few as the configuration.
			name += " " + x.alias.Name
		}
		sp.SetName(name)
		attrs := make([]attribute.KeyValue, 0, 20)
		attrs = append(attrs, attrStatus.String(status), attrHTTPStatus.Int(httpStatus),
			attrStream.Bool(r.Stream), attrFallbacks.Int(r.Fallbacks))
		if r.Alias != "" {
			attrs = append(attrs, attrRequestModel.String(r.Alias))
		}
		if r.KeyID != "" {
			attrs = append(attrs, attrKeyID.String(r.KeyID))
		}
		if r.Provider != "" {
			attrs = append(attrs, attrProvider.String(r.Provider))
			if p := x.protocolOf(r.Provider); p != "" {
				attrs = append(attrs, attrProviderName.String(p))
			}
		}
		if answered := status == statusSuccess || status == statusPartial; answered && r.ProviderModel != "" {
			attrs = append(attrs, attrResponseModel.String(r.ProviderModel))
		}
		if x.finish != "" {
			// The provider's reason in its own protocol's words ("length",
			// "max_tokens"), not the caller's translation of it: one
			// answer, one choice (n > 1: the first one's). Every protocol
			// makes it a short enum; a provider that sends more is cut.
			attrs = append(attrs, attrFinishReasons.StringSlice([]string{x.finish[:min(len(x.finish), maxFinishReason)]}))
		}
		if x.p != nil { // the request was read: its usage is the record's
			attrs = append(attrs, attrInputTokens.Int(r.InputTokens), attrOutputTokens.Int(r.OutputTokens),
				attrCachedTokens.Int(r.CachedInputTokens), attrReasoningTokens.Int(r.ReasoningTokens))
		}
		if r.Currency != "" {
			attrs = append(attrs, attrCost.String(r.Cost.String()), attrCurrency.String(r.Currency))
		}
		if status != statusSuccess {
			typ := r.ErrorType
			if typ == "" {
				typ = genaiErrOther
			}
			attrs = append(attrs, attrErrorType.String(typ))
			sp.SetStatus(codes.Error, typ)
		}
		sp.SetAttributes(attrs...)
	}
	sp.End()
}

// skipped notes on the server span a route passed over without a call.
func (x *exchange) skipped(provider, reason string) {
	if x.span == nil || !x.span.IsRecording() {
		return
	}
	x.span.AddEvent(eventSkipped, trace.WithAttributes(attrProvider.String(provider), attrSkipReason.String(reason)))
}

// startAttempt starts the client span of one provider attempt under ctx,
// and returns the context the attempt runs in: the provider gets the
// span's trace context from it. Tracing off, ctx is returned as it is.
func (x *exchange) startAttempt(ctx context.Context, c *candidate) context.Context {
	if x.span == nil {
		return ctx
	}
	rt := c.route
	op := operationOf(x.ing.endpoint)
	ctx, sp := x.s.tracer.Start(ctx, op+" "+rt.Model, trace.WithSpanKind(trace.SpanKindClient))
	x.attempt = sp
	if sp.IsRecording() {
		attrs := make([]attribute.KeyValue, 0, 8)
		attrs = append(attrs, attrOperation.String(op), attrProvider.String(rt.Provider),
			attrRequestModel.String(rt.Model), attrFallbackIndex.Int(len(x.rec.Attempts)))
		if p := x.protocolOf(rt.Provider); p != "" {
			attrs = append(attrs, attrProviderName.String(p))
		}
		attrs = x.appendServer(attrs, rt.Provider)
		sp.SetAttributes(attrs...)
	}
	return ctx
}

// appendServer appends server.address and server.port of a provider's
// base URL: its host and port only, never its path, query or user info.
func (x *exchange) appendServer(attrs []attribute.KeyValue, provider string) []attribute.KeyValue {
	if x.st == nil || x.st.idx == nil {
		return attrs
	}
	p, ok := x.st.idx.Provider(provider)
	if !ok {
		return attrs
	}
	u, err := url.Parse(p.BaseURL)
	if err != nil || u.Hostname() == "" {
		return attrs
	}
	attrs = append(attrs, attrServerAddress.String(u.Hostname()))
	port := u.Port()
	switch {
	case port != "":
	case u.Scheme == "https":
		port = "443"
	case u.Scheme == "http":
		port = "80"
	}
	if n, err := strconv.Atoi(port); err == nil {
		attrs = append(attrs, attrServerPort.Int(n))
	}
	return attrs
}

// endAttempt ends the running attempt's client span with its outcome (as
// the record has it) and the provider's HTTP status (0: none). A stream's
// attempt ends at its commit point (committed), like its latency: what
// cuts it later is the server span's to tell.
func (x *exchange) endAttempt(outcome string, code int) {
	sp := x.attempt
	if sp == nil {
		return
	}
	x.attempt = nil
	if sp.IsRecording() {
		sp.SetAttributes(attrOutcome.String(outcome))
		if code > 0 {
			sp.SetAttributes(attrHTTPStatus.Int(code))
		}
		if outcome != usage.OutcomeOK {
			typ := outcome
			if outcome == usage.OutcomeStatus && code > 0 {
				typ = strconv.Itoa(code) // as the HTTP conventions name a status failure
			}
			sp.SetAttributes(attrErrorType.String(typ))
			sp.SetStatus(codes.Error, typ)
		}
	}
	sp.End()
}

// committed ends a stream attempt's client span at its commit point: the
// provider answered, and from here its stream is the request's.
func (x *exchange) committed() {
	x.endAttempt(usage.OutcomeOK, http.StatusOK)
}
