package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/provider"
	"github.com/llmgw/llmgw/gateway/usage"
)

// Causes for cancelling an attempt, so that a cancelled read can be told
// apart from the client going away.
var (
	errAttemptTimeout    = errors.New("attempt timeout")
	errFirstChunkTimeout = errors.New("first chunk timeout")
	errIdleTimeout       = errors.New("stream idle timeout")
)

// httpStatusClientClosed is recorded (never sent) when the client disconnected.
const httpStatusClientClosed = 499

// failKind is what went wrong with an attempt, exactly as finely as the
// gateway's decisions and answers differ.
type failKind uint8

const (
	failTimeout      failKind = iota // response headers, attempt, first-chunk or idle timeout
	failDeadline                     // the alias's total deadline passed
	failConnection                   // refused, reset, DNS, a JSON body cut midway
	failStream                       // an error event, a cut or a truncated stream
	failProtocol                     // data the gateway could not read
	failRateLimited                  // upstream 429
	failUpstream                     // upstream 5xx
	failRejected                     // upstream 400: the request itself
	failUpstreamAuth                 // upstream 401/403: the gateway's credential
	failStatus                       // any other non-2xx; redirects are never followed
	failCanceled                     // the client went away
	failUnavailable                  // not called: the gateway could not read the provider's credential
	numFailKinds
)

// failure is one attempt's classified failure.
type failure struct {
	kind  failKind
	route snapshot.Route
	err   *provider.Error // status code, Retry-After, the provider's message
	sent  bool            // past the commit point: the client has this route's content
}

// answer is how an exchange that ends on a failure is recorded and answered.
// message may use {provider}, {status} (the upstream's HTTP status) and
// {detail} (": " and the provider's redacted message, or nothing).
type answer struct {
	record     string // the final record's status
	status     int    // HTTP status: sent before the commit point, recorded always
	typ, code  string // the error body's type and code; typ is also the record's error_type
	message    string
	retryAfter bool // pass on the provider's Retry-After
}

// failureRow is everything the gateway derives from one kind of failure.
type failureRow struct {
	outcome  string // the attempt's outcome in the record
	fallback bool   // may another route help (nextStep has the full rule)
	blame    bool   // counts against the provider's passive health
	before   answer // the exchange ends on it before the commit point: a JSON error
	after    answer // it cuts a committed stream: one error event, then [DONE]
}

// The after answers of a committed stream: its record counts what was relayed.
var (
	streamStalled = answer{record: statusPartial, status: http.StatusOK, typ: typeStream, code: "upstream_timeout",
		message: "the provider's stream stalled or exceeded the deadline; the answer is incomplete"}
	streamInterrupted = answer{record: statusPartial, status: http.StatusOK, typ: typeStream, code: "upstream_interrupted",
		message: "the provider's stream failed after it had started; the answer is incomplete"}
	clientGone = answer{record: statusCanceled, status: httpStatusClientClosed, typ: "client_canceled"}
)

// failures is the one table from a failure to its attempt outcome, fallback
// class, health effect, record status and the caller's answer;
// docs/protocol.md's fault matrix documents it.
var failures = [numFailKinds]failureRow{
	failTimeout: {outcome: usage.OutcomeTimeout, fallback: true, blame: true, after: streamStalled,
		before: answer{record: statusError, status: http.StatusGatewayTimeout, typ: typeProviderTimeout, code: "upstream_timeout",
			message: "provider {provider} did not answer in time"}},
	failDeadline: {outcome: usage.OutcomeTimeout, fallback: false, blame: true, after: streamStalled,
		before: answer{record: statusError, status: http.StatusGatewayTimeout, typ: typeProviderTimeout, code: "gateway_deadline_exceeded",
			message: "the model alias's total deadline passed before a provider answered"}},
	failConnection: {outcome: usage.OutcomeConnection, fallback: true, blame: true, after: streamInterrupted,
		before: answer{record: statusError, status: http.StatusBadGateway, typ: typeProvider, code: "upstream_unavailable",
			message: "provider {provider} could not be reached"}},
	failStream: {outcome: usage.OutcomeStreamError, fallback: true, blame: true, after: streamInterrupted,
		before: answer{record: statusError, status: http.StatusBadGateway, typ: typeProvider, code: "upstream_error",
			message: "provider {provider} failed before sending any content"}},
	failProtocol: {outcome: usage.OutcomeProtocol, fallback: false, blame: true, after: streamInterrupted,
		before: answer{record: statusError, status: http.StatusBadGateway, typ: typeProvider, code: "upstream_bad_response",
			message: "provider {provider} sent a response the gateway could not read"}},
	failRateLimited: {outcome: usage.OutcomeStatus, fallback: true, blame: true, after: streamInterrupted,
		before: answer{record: statusError, status: http.StatusTooManyRequests, typ: typeProvider, code: "upstream_rate_limited",
			message: "provider {provider} is rate limiting the gateway", retryAfter: true}},
	failUpstream: {outcome: usage.OutcomeStatus, fallback: true, blame: true, after: streamInterrupted,
		before: answer{record: statusError, status: http.StatusBadGateway, typ: typeProvider, code: "upstream_error",
			message: "provider {provider} answered HTTP {status}"}},
	// The caller's request is at fault: it gets the provider's reason, and
	// another provider would refuse it too.
	failRejected: {outcome: usage.OutcomeStatus, fallback: false, blame: false, after: streamInterrupted,
		before: answer{record: statusError, status: http.StatusBadRequest, typ: typeProvider, code: "upstream_rejected_request",
			message: "provider {provider} rejected the request{detail}"}},
	// A rejected gateway credential is the gateway's misconfiguration, so the
	// caller gets 502, never 401; it does speak about the provider's health.
	failUpstreamAuth: {outcome: usage.OutcomeStatus, fallback: false, blame: true, after: streamInterrupted,
		before: answer{record: statusError, status: http.StatusBadGateway, typ: typeProvider, code: "upstream_auth_failed",
			message: "provider {provider} rejected the gateway's credentials (HTTP {status}); this is a gateway configuration problem"}},
	failStatus: {outcome: usage.OutcomeStatus, fallback: false, blame: false, after: streamInterrupted,
		before: answer{record: statusError, status: http.StatusBadGateway, typ: typeProvider, code: "upstream_rejected",
			message: "provider {provider} answered HTTP {status}"}},
	failCanceled: {outcome: usage.OutcomeCanceled, fallback: false, blame: false, before: clientGone, after: clientGone},
	// Only the last route the alias may use ends on it: earlier ones are
	// passed over. It is the gateway's configuration, not the provider's health.
	failUnavailable: {outcome: usage.OutcomeUnavailable, fallback: true, blame: false, after: streamInterrupted,
		before: answer{record: statusError, status: http.StatusServiceUnavailable, typ: typeProvider, code: "provider_unavailable",
			message: "provider {provider} is unavailable: the gateway cannot read its credential; this is a gateway configuration problem"}},
}

// classify names an attempt's failure. The client going away explains any
// failure, then the alias's total deadline; the attempt context's cancel
// cause names the gateway's other timeouts, which the adapter only saw as a
// cancellation.
func (x *exchange) classify(actx context.Context, rt snapshot.Route, err error, sent bool) *failure {
	var pe *provider.Error
	if !errors.As(err, &pe) {
		pe = &provider.Error{Kind: provider.KindConnection, Message: "upstream call failed", Err: err}
	}
	f := &failure{route: rt, err: pe, sent: sent}
	switch cause := context.Cause(actx); {
	case x.r.Context().Err() != nil:
		f.kind = failCanceled
	case x.pastDeadline():
		// The total deadline's context ended the attempt, or the provider's
		// answer came after the deadline, before its timer fired.
		f.kind = failDeadline
		f.err = &provider.Error{Kind: provider.KindTimeout, Message: context.DeadlineExceeded.Error(), Err: err}
	case errors.Is(cause, errAttemptTimeout), errors.Is(cause, errFirstChunkTimeout), errors.Is(cause, errIdleTimeout):
		f.kind = failTimeout
		f.err = &provider.Error{Kind: provider.KindTimeout, Message: cause.Error(), Err: err}
	default:
		f.kind = kindOf(pe)
	}
	return f
}

func (x *exchange) pastDeadline() bool {
	return !x.deadline.IsZero() && !time.Now().Before(x.deadline)
}

func kindOf(pe *provider.Error) failKind {
	switch pe.Kind {
	case provider.KindTimeout:
		return failTimeout
	case provider.KindConnection:
		return failConnection
	case provider.KindStream:
		return failStream
	case provider.KindCanceled:
		return failCanceled
	case provider.KindStatus:
		switch code := pe.StatusCode; {
		case code == http.StatusTooManyRequests:
			return failRateLimited
		case code >= 500:
			return failUpstream
		case code == http.StatusBadRequest:
			return failRejected
		case code == http.StatusUnauthorized || code == http.StatusForbidden:
			return failUpstreamAuth
		default:
			return failStatus
		}
	default:
		return failProtocol
	}
}

// apiError is the JSON error answering a failure before the commit point.
func (f *failure) apiError() *apiError {
	a := &failures[f.kind].before
	detail := ""
	if f.err.Message != "" {
		// A provider may quote the request back (OpenAI names an argument
		// it does not know): a gateway key in it is redacted like any.
		detail = ": " + keyformat.Redact(f.err.Message)
	}
	e := &apiError{status: a.status, typ: a.typ, code: a.code, message: strings.NewReplacer(
		"{provider}", f.route.Provider, "{status}", strconv.Itoa(f.err.StatusCode), "{detail}", detail).Replace(a.message)}
	if a.retryAfter {
		e.retryAfter = f.err.RetryAfter
	}
	return e
}
