package server

// The chat request path, top to bottom: handleChat → serve (ledger gate
// (ledgergate.go), client-address limit, readiness, concurrency, authentication, rate limit, body, validation, model access) →
// route (route.go: the fallback loop and its policy, with failures named by
// the table in failure.go) → completeJSON (complete_json.go) or relaySSE
// (relay_sse.go).

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/tokens"
	"github.com/llmgw/llmgw/gateway/telemetry"
	"github.com/llmgw/llmgw/gateway/translate"
	"github.com/llmgw/llmgw/gateway/usage"
)

// Final record statuses: the ledger's vocabulary ("in_progress" and
// "interrupted" are written by the ledger itself).
const (
	statusSuccess  = usage.StatusSuccess
	statusPartial  = usage.StatusPartial  // a stream cut after the commit point
	statusError    = usage.StatusError    // every route failed or a provider rejected the request
	statusRejected = usage.StatusRejected // the gateway refused before any provider was called
	statusCanceled = usage.StatusCanceled // the client went away
)

// exchange is one request in flight (chat or embeddings): the state it was admitted under,
// its usage record, and the writer.
type exchange struct {
	s        *Server
	w        http.ResponseWriter
	r        *http.Request
	st       *state
	start    time.Time
	rec      usage.Record
	ing      *ingress // the endpoint: how its requests are read and answered
	bodyHeld int64    // bytes of the body budget the request holds (bodybudget.go)
	p        *parsedRequest
	alias    *snapshot.Alias
	cands    []candidate    // the alias's routes that can carry the request (carry.go)
	meta     translate.Meta // what the translators write into answers
	done     bool
	hold     *quotaHold    // the request's quota reservation (quota.go)
	deadline time.Time     // the alias's total deadline, from admission
	times    exchangeTimes // for the histograms (exchange_metrics.go)
	// ctx is the request's context with its trace context (tracing.go);
	// span its server span and attempt the running attempt's client span,
	// nil when tracing is off or the span has ended.
	ctx     context.Context
	span    trace.Span
	attempt trace.Span
	// finish is why the model stopped, as the answering provider said it
	// (translate.Answer.FinishReason, Chunk.FinishReason), for the server
	// span; "" when it said none.
	finish string
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	s.handleExchange(w, r, &chatIngress)
}

// parseFunc reads and validates one endpoint's request body.
type parseFunc func(body []byte, lim limits, countTokens func(string) int) (*parsedRequest, *apiError)

// ingress is an endpoint that routes through aliases to providers: its
// name (the record's endpoint, the message of its log line), the API its
// callers speak, and how its requests are read.
type ingress struct {
	endpoint string
	api      callerAPI
	parse    parseFunc
}

// The endpoints that route to providers, named as records and /v1/usage
// name them.
var (
	chatIngress       = ingress{endpoint: usage.EndpointChat, api: apiOpenAI, parse: parseChatRequest}
	embeddingsIngress = ingress{endpoint: usage.EndpointEmbeddings, api: apiOpenAI, parse: parseEmbeddingRequest}
	messagesIngress   = ingress{endpoint: usage.EndpointMessages, api: apiAnthropic, parse: parseMessagesRequest}
	responsesIngress  = ingress{endpoint: usage.EndpointResponses, api: apiResponses, parse: parseResponsesRequest}
)

// handleExchange serves one request of an endpoint that routes through
// aliases to providers: one exchange, one record.
func (s *Server) handleExchange(w http.ResponseWriter, r *http.Request, ing *ingress) {
	x := &exchange{s: s, w: w, r: r, st: s.state.Load(), start: s.now(), ing: ing}
	x.rec = usage.Record{RequestID: requestID(w), ClientRequestID: clientRequestID(r),
		Status: usage.StatusInProgress, CreatedAt: x.start, Endpoint: ing.endpoint, Session: sessionOf(r)}
	if x.rec.ClientRequestID != "" {
		w.Header()[hdrClientRequestID] = []string{x.rec.ClientRequestID}
	}
	if ing.api == apiAnthropic {
		w.Header()[hdrAnthropicRequestID] = []string{x.rec.RequestID}
	}
	x.startSpan()
	n := s.inflight.Add(1)
	s.metrics.inflight.Inc()
	defer func() {
		x.releaseBody()
		s.inflight.Add(-1)
		s.metrics.inflight.Dec()
		if !x.done { // a path that did not finalize (a panic): still one final record
			x.rec.ErrorType = typeInternal
			x.finalize(statusError, http.StatusInternalServerError)
		}
		x.observeEnd()
	}()
	x.serve(n)
}

// serve admits the request, then hands it to the JSON or the SSE path
// under the alias's total deadline, which bounds every attempt, fallbacks
// and the relay included.
func (x *exchange) serve(inflight int64) {
	if !x.admitChat(inflight) {
		return
	}
	x.deadline = time.Now().Add(ms(x.alias.Timeouts.TotalMs))
	ctx, cancel := context.WithDeadline(x.runContext(), x.deadline)
	defer cancel()
	if x.p.stream {
		x.relaySSE(ctx)
	} else {
		x.completeJSON(ctx)
	}
}

// admitChat runs every check before a provider is called, answering and
// recording a refusal itself; true when the request may go on, with x.p and
// x.alias set.
func (x *exchange) admitChat(inflight int64) bool {
	s, st := x.s, x.st
	// A ledger that cannot commit comes before everything: nothing the
	// gateway does for a request it cannot record may happen.
	if aerr := s.checkLedger(); aerr != nil {
		x.refuseUnrecorded(aerr)
		return false
	}
	// The edge (edges.go) leaves the header limit of chat to us: the
	// refusal is a chat request's answer and gets its record.
	if aerr := checkHeaderBytes(x.r); aerr != nil {
		x.begin()
		x.reject(aerr)
		return false
	}
	// The client-address limit comes next: an address whose requests kept
	// failing authentication is refused before its key is even looked up,
	// so a flood without a valid key costs one record per request and
	// nothing else. Only failed authentications draw from it (authenticate).
	if aerr := s.checkClientIP(x.r); aerr != nil {
		x.begin()
		x.reject(aerr)
		return false
	}
	if st == nil {
		x.begin()
		x.reject(&apiError{status: http.StatusServiceUnavailable, typ: typeOverloaded, code: "not_ready",
			message: "the gateway has no configuration loaded yet", retryAfter: time.Second})
		return false
	}
	lim := st.snap.Limits
	if inflight > int64(lim.MaxConcurrent) {
		x.begin()
		x.reject(&apiError{status: http.StatusServiceUnavailable, typ: typeOverloaded, code: "gateway_overloaded",
			message: "the gateway is at its concurrent request limit; retry shortly", retryAfter: time.Second})
		return false
	}
	key, hash, aerr := s.authenticate(st, x.r)
	if key != nil {
		x.rec.KeyID, x.rec.KeyFingerprint = key.ID, st.fingerprint(hash)
		x.rec.Group, x.rec.Owners = key.Group, st.owners(key)
	}
	x.begin()
	if aerr != nil {
		x.reject(aerr)
		return false
	}
	if aerr := x.checkRate(key); aerr != nil {
		x.reject(aerr)
		return false
	}
	if aerr := x.reserveBody(lim.MaxBodyBytes); aerr != nil {
		x.reject(aerr)
		return false
	}
	t0 := x.elapsed()
	body, aerr := readBody(x.w, x.r, lim.MaxBodyBytes)
	x.times.clientBody = x.elapsed() - t0 // the client's pace, not the gateway's
	if aerr != nil {
		x.reject(aerr)
		return false
	}
	p, aerr := x.ing.parse(body, limits{maxMessages: lim.MaxMessages, maxContentChars: lim.MaxContentChars}, tokens.Count)
	if aerr != nil {
		x.reject(aerr)
		return false
	}
	x.p = p
	x.rec.Alias, x.rec.Stream = p.alias, p.stream
	alias, aerr := authorizeModel(st, key, p.alias)
	if aerr != nil {
		x.reject(aerr)
		return false
	}
	x.alias = alias
	x.meta = translate.Meta{Alias: p.alias, ID: x.ing.api.answerID(x.rec.RequestID), Created: x.start.Unix(), IncludeUsage: p.includeUsage}
	if aerr := x.carry(); aerr != nil {
		x.reject(aerr)
		return false
	}
	if aerr := x.admit(key); aerr != nil {
		x.reject(aerr)
		return false
	}
	return true
}

func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, *apiError) {
	if e := checkContentEncoding(r.Header); e != nil {
		return nil, e
	}
	if r.ContentLength > max {
		return nil, errBodyTooLarge(max)
	}
	body, err := readAll(http.MaxBytesReader(w, r.Body, max), r.ContentLength)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, errBodyTooLarge(max)
		}
		return nil, errInvalid("invalid_body", "", "could not read the request body")
	}
	// Read to its end, the body is closed here: net/http otherwise checks
	// an open one for unread bytes as the response head goes out, a copy
	// into io.Discard (a reader allocated and a pooled buffer) for every
	// request (TestReadBodyClosesTheBody).
	r.Body.Close()
	return body, nil
}

// errBodyTooLarge is the 413 of a body over max, naming the limit.
func errBodyTooLarge(max int64) *apiError {
	return &apiError{status: http.StatusRequestEntityTooLarge, typ: typeInvalidRequest, code: "body_too_large",
		message: "request body exceeds the gateway's limit of " + byteSize(max) + " (limits.maxBodyBytes)"}
}

// byteSize writes n bytes as a person would: MiB or KiB when it is a whole
// number of them.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// readAll is io.ReadAll with the buffer sized from the request's
// Content-Length (one byte more, for the read that sees the end): a body
// is read in one allocation of its size instead of doubling from 512
// bytes, which for a long prompt left several times its size behind.
// Without a length (chunked) it starts at io.ReadAll's 512 bytes.
func readAll(r io.Reader, length int64) ([]byte, error) {
	n := 512
	if length >= 0 {
		n = int(length) + 1 // the caller bounds length
	}
	b := make([]byte, 0, n)
	for {
		m, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+m]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow as append does
		}
	}
}

func clientRequestID(r *http.Request) string {
	id := header(r.Header, hdrClientRequestID)
	if id == "" {
		id = header(r.Header, hdrRequestID)
	}
	return safeID(id)
}

// begin makes the in_progress record durable before any provider call or
// response byte. It runs right after authentication (an in-memory lookup),
// so that a record recovered after a crash already belongs to its key and
// shows up in that key's /v1/usage. A Begin that fails (the ledger cannot
// write) leaves the request to its final record, which Finish inserts on
// its own (and logs if it cannot).
func (x *exchange) begin() {
	// A failed Begin needs no handling here: the ledger marks itself not
	// writable (the ledger gate then refuses or counts requests as its
	// fail-open setting says), and Finish alone still leaves the one record.
	_ = x.s.ledger.Begin(x.rec)
}

// reject answers a request the gateway refused before calling any provider.
func (x *exchange) reject(e *apiError) {
	x.rec.ErrorType = e.typ
	x.finalize(statusRejected, e.status)
	x.ing.api.writeError(x.w, e, x.rec.RequestID)
}

// canceled closes the record of a client that went away; there is nobody
// left to answer.
func (x *exchange) canceled() {
	x.settle(&failures[failCanceled].before)
}

// settle finalizes the record as a failure's answer says.
func (x *exchange) settle(a *answer) {
	x.rec.ErrorType = a.typ
	x.finalize(a.record, a.status)
}

// finalize writes the one final record. It runs before the response's last
// byte so a caller that has its answer can read its record at once.
func (x *exchange) finalize(status string, httpStatus int) {
	if x.done {
		return
	}
	x.done = true
	x.rec.Status, x.rec.HTTPStatus = status, httpStatus
	x.rec.FinishedAt = x.s.now()
	x.rec.LatencyMs = x.rec.FinishedAt.Sub(x.start).Milliseconds()
	x.priceRecord()
	x.settleQuota()
	// The client may be gone; the record must still be written.
	ctx, cancel := x.detached(10 * time.Second)
	defer cancel()
	if err := x.s.ledger.Finish(ctx, x.rec); err != nil {
		x.s.log.Error("usage record not finalized", "request_id", x.rec.RequestID, "err", err)
	}
	// Only a configured alias becomes a metric label: the requested name is
	// caller input and would make label cardinality unbounded.
	label := ""
	if x.alias != nil {
		label = x.alias.Name
	}
	x.s.metrics.request(x.ing.endpoint, label, status, httpStatus)
	x.logLine(status, httpStatus)
	x.endSpan(status, httpStatus)
}

// logLine writes the request's one log line, named after its endpoint:
// the fields of its final record, and its trace_id and span_id when it has
// a trace context (tracing.go).
func (x *exchange) logLine(status string, httpStatus int) {
	var buf [14]slog.Attr // on the stack: the two trace attributes fit without a second array
	attrs := append(buf[:0], slog.String("request_id", x.rec.RequestID),
		slog.String("key_id", x.rec.KeyID), slog.String("alias", x.rec.Alias), slog.String("provider", x.rec.Provider),
		slog.String("status", status), slog.Int("http_status", httpStatus), slog.String("error_type", x.rec.ErrorType),
		slog.Int("fallbacks", x.rec.Fallbacks), slog.Bool("stream", x.rec.Stream), slog.Int("input_tokens", x.rec.InputTokens),
		slog.Int("output_tokens", x.rec.OutputTokens), slog.Int64("latency_ms", x.rec.LatencyMs))
	attrs = telemetry.AppendLogAttrs(attrs, x.spanContext())
	x.s.log.LogAttrs(context.Background(), slog.LevelInfo, x.ing.endpoint, attrs...)
}

// detached is a context for work the request needs done even if its client
// hangs up (the final record, the quota store), bounded by d instead.
func (x *exchange) detached(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(x.r.Context()), d)
}
