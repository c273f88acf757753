package provider

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmgw/llmgw/api/wire/openai"
	"github.com/llmgw/llmgw/gateway/translate"
)

const (
	anthropicVersion      = "2023-06-01"
	defaultConnectTimeout = 10 * time.Second
	userAgent             = "llmgw"
	// maxResponseBytes bounds a non-streamed answer; far above any real completion.
	maxResponseBytes = 16 << 20
	// maxErrorBodyBytes is enough for any real error body; reading a small body to
	// its end also lets the connection be reused.
	maxErrorBodyBytes = 64 << 10
	// idleConnsPerHost keeps enough warm connections for thousands of requests per
	// second to one upstream without re-dialling.
	idleConnsPerHost = 256
	maxRetryAfter    = 24 * time.Hour
)

// base is what both protocols share: the endpoint, the client and the rules that
// keep the URL and credential out of every error.
type base struct {
	name      string
	protocol  string
	targets   [numOps]*http.Request // POST endpoint of each operation, copied for every request (post); nil: none
	client    *http.Client
	transport *http.Transport // nil when the caller shares its own Client
	redactor  *strings.Replacer

	// headers are the request headers, built once: [0] for a JSON answer,
	// [1] for a stream. Every request shares them read-only, as net/http
	// allows (a RoundTripper must not modify the request): five fewer
	// allocations a request. A caller's Client with a cookie jar writes the
	// jar's cookies into the request's map; its requests get a copy (post).
	headers [2]http.Header
}

func newBase(cfg Config, u *url.URL) *base {
	b := &base{name: cfg.Name}
	if cfg.Client != nil {
		c := *cfg.Client
		c.CheckRedirect = noRedirect
		b.client = &c
	} else {
		b.transport = newTransport(cfg)
		b.client = &http.Client{Transport: b.transport, CheckRedirect: noRedirect}
	}
	b.redactor = newRedactor(u, cfg.BaseURL, cfg.Credential)
	return b
}

// setHeaders builds b.headers: the protocol's, then extra (the protocol's own
// and the credential's).
func (b *base) setHeaders(extra [][2]string) {
	for i, accept := range []string{"application/json", "text/event-stream"} {
		h := http.Header{"Content-Type": {"application/json"}, "Accept": {accept}, "User-Agent": {userAgent}}
		for _, kv := range extra {
			h.Set(kv[0], kv[1])
		}
		b.headers[i] = h
	}
}

// noRedirect surfaces 3xx as status errors: following one would send the
// credential to wherever the upstream points (Go keeps x-api-key on cross-host
// redirects) and turn the POST into a GET.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

func newTransport(cfg Config) *http.Transport {
	connect := cfg.ConnectTimeout
	if connect <= 0 {
		connect = defaultConnectTimeout
	}
	d := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          2 * idleConnsPerHost,
		MaxIdleConnsPerHost:   idleConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   connect,
		ResponseHeaderTimeout: cfg.ResponseHeaderTimeout,
		ExpectContinueTimeout: time.Second,
		// Completions are small and streams must not wait on a decompressor's
		// buffering; compression would only cost CPU on the hot path.
		DisableCompression: true,
	}
}

func (b *base) Name() string { return b.name }

func (b *base) Protocol() string { return b.protocol }

// CloseIdleConnections implements IdleCloser. A shared caller Client is left
// alone: its owner decides.
func (b *base) CloseIdleConnections() {
	if b.transport != nil {
		b.transport.CloseIdleConnections()
	}
}

func newRedactor(u *url.URL, raw, credential string) *strings.Replacer {
	secrets := []string{strings.TrimRight(raw, "/"), u.Scheme + "://" + u.Host, u.Host, u.Hostname(), credential}
	// Longest first: at each position Replacer applies the first pair that matches.
	slices.SortFunc(secrets, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b) // equal strings adjacent for Compact
	})
	secrets = slices.Compact(secrets)
	var pairs []string
	for _, s := range secrets {
		if s != "" {
			pairs = append(pairs, s, "[redacted]")
		}
	}
	return strings.NewReplacer(pairs...)
}

// seal completes an error: provider name, and upstream-sourced text redacted and
// clipped. Redaction comes first so clipping cannot leave half a secret behind.
func (b *base) seal(e *Error) *Error {
	e.Provider = b.name
	e.Type = clip(b.redactor.Replace(e.Type), maxTypeLen)
	e.Message = clip(b.redactor.Replace(e.Message), maxMessageLen)
	return e
}

// post sends one request and returns a 2xx response; everything else is an *Error.
func (b *base) post(ctx context.Context, call Call, stream bool) (*http.Response, error) {
	op, body := call.Op, joinSmall(call.Body)
	if ctx == nil || op < 0 || op >= numOps || b.targets[op] == nil { // WithContext would panic; NewRequestWithContext refused it
		return nil, b.seal(&Error{Kind: KindProtocol, Message: "cannot build request"})
	}
	ctx, first := newSentBody(ctx, body)
	// A copy of the template: what NewRequestWithContext would build,
	// without parsing the endpoint again or making a header map that is
	// replaced below. The copies share the template's URL, read-only, as
	// WithContext's copies do.
	req := b.targets[op].WithContext(ctx)
	req.Body = first
	// What NewRequest sets for a bytes.Reader: the length (else the body
	// would go chunked) and GetBody, which lets the transport send the
	// request again on a pooled connection that turned out to be closed
	// before anything was written. Both happen within the round trip; once
	// it returns no retry can come, and body is let go (requestBody).
	req.ContentLength = int64(bodyLen(body))
	req.GetBody = func() (io.ReadCloser, error) { return &requestBody{segs: append([][]byte(nil), body...)}, nil }
	req.Header = b.headers[0]
	if stream {
		req.Header = b.headers[1]
	}
	// The trace context the request runs in (the gateway's attempt span,
	// or with tracing off the caller's own traceparent, passed on
	// unchanged) goes to the provider; without one, nothing is done.
	sc := trace.SpanContextFromContext(ctx)
	if b.client.Jar != nil || len(call.Header) > 0 || sc.IsValid() {
		// http.Client adds the jar's cookies to the request's own map, and
		// forwarded headers and the trace context go over the shared ones:
		// a copy of its own.
		req.Header = forward(req.Header.Clone(), call.Header)
		if sc.IsValid() {
			traceContext.Inject(ctx, propagation.HeaderCarrier(req.Header))
		}
	}
	resp, err := b.send(req)
	body = nil
	if err != nil {
		return nil, b.transportError(ctx, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, b.statusError(resp)
	}
	return resp, nil
}

// forward sets the caller's headers the gateway forwards over h: only the
// names forwardable lists, so that a caller can never set the credential,
// the framing or anything else the adapter owns.
func forward(h, caller http.Header) http.Header {
	for name, v := range caller {
		if forwardable[name] && len(v) > 0 {
			h[name] = v
		}
	}
	return h
}

// traceContext writes a request's trace context into its headers as W3C
// traceparent and tracestate: the propagator of gateway/telemetry
// (telemetry.Propagator), named here rather than taken from otel's
// globals, so that what a provider receives does not depend on what else
// in the process set them.
var traceContext propagation.TextMapPropagator = propagation.TraceContext{}

// forwardable are the caller's headers a provider of the caller's own
// protocol gets (canonical names): Anthropic's API version and beta flags,
// which decide what the body means.
var forwardable = map[string]bool{"Anthropic-Version": true, "Anthropic-Beta": true}

// send is one round trip. With the transport newBase built it calls that
// transport straight: http.Client.Do would only copy the headers for a
// redirect it is told not to follow (noRedirect) and wrap errors in a
// *url.Error that describe unwraps again, about 1 KB and ten allocations a
// request. A caller's own Client (Config.Client) keeps its Jar, Timeout and
// Transport: it goes through Do.
func (b *base) send(req *http.Request) (*http.Response, error) {
	if b.transport != nil {
		return b.transport.RoundTrip(req)
	}
	return b.client.Do(req)
}

// readAll reads a non-streamed answer; a failure midway is a connection failure,
// since nothing of it can have reached the client.
func (b *base) readAll(ctx context.Context, resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, b.transportError(ctx, err)
	}
	if len(body) > maxResponseBytes {
		return nil, b.seal(&Error{Kind: KindProtocol, Message: "response body exceeds 16 MiB"})
	}
	return body, nil
}

// ctxError reports the caller's cancellation or deadline, which explains any
// transport error that follows it.
func (b *base) ctxError(ctx context.Context) *Error {
	switch ctx.Err() {
	case nil:
		return nil
	case context.DeadlineExceeded:
		return b.seal(&Error{Kind: KindTimeout, Message: "deadline exceeded", Err: context.Cause(ctx)})
	default:
		return b.seal(&Error{Kind: KindCanceled, Message: "canceled", Err: context.Cause(ctx)})
	}
}

func (b *base) transportError(ctx context.Context, err error) *Error {
	if e := b.ctxError(ctx); e != nil {
		return e
	}
	kind := KindConnection
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		kind = KindTimeout
	}
	msg := b.redactor.Replace(describe(err))
	return b.seal(&Error{Kind: kind, Message: msg, Err: &causeError{msg: msg, cause: safeCause(err)}})
}

// describe names a transport failure without the addresses Go's errors embed:
// *url.Error carries the URL, *net.OpError the remote address, *net.DNSError the
// host name.
func describe(err error) string {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		switch {
		case dns.IsNotFound:
			return "dns: host not found"
		case dns.IsTimeout:
			return "dns: timeout"
		}
		return "dns: lookup failed"
	}
	var op *net.OpError
	if errors.As(err, &op) {
		inner := op.Err
		var sys *os.SyscallError
		if errors.As(inner, &sys) {
			inner = sys.Err
		}
		return op.Op + ": " + inner.Error()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "connection closed by upstream"
	}
	return err.Error()
}

// causeError is a transport failure's sanitised text. It unwraps only to values
// that cannot contain an address, so errors.Is(err, syscall.ECONNREFUSED) works
// but no chain leads back to the URL.
type causeError struct {
	msg   string
	cause error
}

func (c *causeError) Error() string { return c.msg }
func (c *causeError) Unwrap() error { return c.cause }

func safeCause(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	for _, s := range []error{context.DeadlineExceeded, context.Canceled, os.ErrDeadlineExceeded, io.ErrUnexpectedEOF, io.EOF} {
		if errors.Is(err, s) {
			return s
		}
	}
	return nil
}

func (b *base) statusError(resp *http.Response) *Error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyBytes))
	typ, msg := parseErrorBody(body)
	if strings.TrimSpace(msg) == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	e := b.seal(&Error{
		Kind:       KindStatus,
		StatusCode: resp.StatusCode,
		RetryAfter: retryAfter(resp.Header, time.Now()),
		Type:       typ,
		Message:    msg,
	})
	if len(body) > 0 && jsontext.Value(body).IsValid() {
		e.Body = []byte(b.redactor.Replace(string(body)))
	}
	return e
}

// parseErrorBody reads both protocols' error shapes, OpenAI's
// {"error":{"message","type","code"}} and Anthropic's
// {"type":"error","error":{"type","message"}}, plus the {"error":"text"} and
// {"message":"text"} of assorted proxies. A body that is not JSON is returned
// as the message: a proxy's text page still says what went wrong.
func parseErrorBody(body []byte) (typ, msg string) {
	var env struct {
		Error   jsontext.Value `json:"error"`
		Message string         `json:"message"`
	}
	if err := jsonv2.Unmarshal(body, &env, errorBodyJSON); err != nil {
		return "", string(body)
	}
	if len(env.Error) > 0 {
		var s string
		if jsonv2.Unmarshal(env.Error, &s, errorBodyJSON) == nil {
			return "", s
		}
		// Anthropic's error object has OpenAI's type and message.
		var d openai.ErrorDetail
		if jsonv2.Unmarshal(env.Error, &d, errorBodyJSON) == nil {
			typ := d.Type
			if typ == "" {
				typ = d.CodeString()
			}
			return typ, d.Message
		}
	}
	return "", env.Message
}

// errorBodyJSON reads error bodies as leniently as answers, and matches
// member names without regard to case: proxies write "Message" as often as
// "message".
var errorBodyJSON = jsonv2.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true),
	jsonv2.MatchCaseInsensitiveNames(true))

// retryAfter reads OpenAI's retry-after-ms first (finer), then the standard
// Retry-After as seconds or an HTTP date.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && ms > 0 {
			return capRetry(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 {
			return capRetry(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return capRetry(float64(d))
		}
	}
	return 0
}

func capRetry(ns float64) time.Duration {
	if ns > float64(maxRetryAfter) || ns != ns {
		return maxRetryAfter
	}
	return time.Duration(ns)
}

// Complete implements Adapter.
func (b *base) Complete(ctx context.Context, call Call, read func(raw []byte) error) error {
	resp, err := b.post(ctx, call, false)
	if err != nil {
		return err
	}
	raw, err := b.readAll(ctx, resp)
	if err != nil {
		return err
	}
	if err := read(raw); err != nil {
		return b.seal(answerError(err))
	}
	return nil
}

// answerError is the *Error of a 2xx answer its translator could not read.
func answerError(err error) *Error {
	var f *translate.Failure
	if !errors.As(err, &f) || f.Malformed {
		msg := "malformed response JSON"
		if f != nil && f.Message != "" {
			msg = f.Message
		}
		return &Error{Kind: KindProtocol, Message: msg}
	}
	return &Error{Kind: KindProtocol, Type: f.Type, Message: "error in a 2xx response: " + f.Message}
}

// Stream implements Adapter.
func (b *base) Stream(ctx context.Context, call Call, dec translate.ChatStream) (Stream, error) {
	resp, err := b.post(ctx, call, true)
	if err != nil {
		return nil, err
	}
	return b.openStream(ctx, resp, dec)
}
