package mockproviders

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Flavor selects the wire protocol a mock speaks.
type Flavor string

// The two flavors of mock provider.
const (
	Alpha Flavor = "alpha" // OpenAI chat-completions protocol
	Beta  Flavor = "beta"  // Anthropic-Messages-style protocol
)

// DefaultChunks is the number of content pieces when neither the server nor the
// request asks for another.
const DefaultChunks = 4

// maxBodyBytes is generous for tests and still bounds a runaway client.
const maxBodyBytes = 8 << 20

// Options configures one mock. The Default* fields apply when a request's
// directive does not set the matching key.
type Options struct {
	Flavor            Flavor
	RequireKey        string // empty: no auth; else alpha wants "Authorization: Bearer <key>", beta "x-api-key: <key>"
	DefaultChunks     int    // 0 means DefaultChunks
	DefaultChunkDelay time.Duration
	DefaultDelay      time.Duration
	Logger            *slog.Logger // nil: discard
}

// protocol is what differs between the chat protocols (alpha's chat
// completions and Responses, beta's Messages); everything else is shared.
// A flavor's own protocol (handler.proto) also authenticates and renders
// errors for every path of that flavor: alpha's two protocols share
// OpenAI's error body and Bearer auth.
type protocol interface {
	path() string
	authorized(r *http.Request, want []byte) bool
	parse(body []byte) (*chatRequest, *apiError)
	writeError(w http.ResponseWriter, e *apiError)
	jsonBody(x *exchange) []byte
	streamHead(x *exchange) [][]byte
	// streamPiece is the event(s) of x.ans.pieces[i].
	streamPiece(x *exchange, i int) []byte
	// streamTail is the events after the last piece, and whether they carry
	// the usage.
	streamTail(x *exchange) ([][]byte, bool)
	streamError(x *exchange) []byte
}

// exchange is one protocol call after validation.
type exchange struct {
	proto   protocol // the protocol the call speaks
	req     *chatRequest
	ans     *answer
	fault   Fault
	noUsage bool
	sent    delivery // what reached the client, for /mock/calls tokens
	seq     int      // Responses streams: the next event's sequence_number
}

type handler struct {
	opts      Options
	proto     protocol   // the flavor's own protocol: auth and error bodies
	endpoints []endpoint // the protocol paths served, the flavor's own first
	keyHash   []byte     // SHA-256 of RequireKey: equal-length constant-time compare, and no plaintext kept
	calls     *callCounter
	log       *slog.Logger
}

// NewHandler returns a complete mock: the protocol endpoint, /healthz,
// GET /mock/calls and POST /mock/reset. All state lives in the handler, so any
// number can run in one process (for example one per httptest.Server).
func NewHandler(opts Options) (http.Handler, error) {
	h := &handler{opts: opts, calls: newCallCounter(), log: opts.Logger}
	switch opts.Flavor {
	case Alpha:
		h.proto = alphaProto{}
		h.endpoints = []endpoint{{alphaProto{}.path(), h.chat(alphaProto{})},
			{responsesProto{}.path(), h.chat(responsesProto{})}, {embeddingsPath, h.embeddings}}
	case Beta:
		h.proto = betaProto{}
		h.endpoints = []endpoint{{betaProto{}.path(), h.chat(betaProto{})}, {countTokensPath, h.countTokens}}
	default:
		return nil, fmt.Errorf("unknown flavor %q (want alpha or beta)", opts.Flavor)
	}
	if h.opts.DefaultChunks == 0 {
		h.opts.DefaultChunks = DefaultChunks
	}
	if h.opts.DefaultChunks < 1 || h.opts.DefaultChunks > MaxChunks {
		return nil, fmt.Errorf("default chunks %d outside 1..%d", opts.DefaultChunks, MaxChunks)
	}
	if opts.DefaultChunkDelay < 0 || opts.DefaultDelay < 0 {
		return nil, errors.New("default delays must not be negative")
	}
	if opts.RequireKey != "" {
		sum := sha256.Sum256([]byte(opts.RequireKey))
		h.keyHash = sum[:]
		h.opts.RequireKey = ""
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	return h, nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/healthz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	case "/mock/calls":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET")
			http.Error(w, "use GET", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(marshal(h.calls.snapshot()), '\n'))
	case "/mock/reset":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			http.Error(w, "use POST", http.StatusMethodNotAllowed)
			return
		}
		h.calls.reset()
		w.WriteHeader(http.StatusNoContent)
	default:
		h.serveProtocol(w, r)
	}
}

// statusWriter remembers the status sent so by_status and the call log report what
// the client saw; Unwrap keeps http.ResponseController (flush) working through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// callState is what the call log and /mock/calls learn of a call as it
// proceeds.
type callState struct {
	req   *chatRequest
	x     *exchange
	fault string
}

// endpoint is one protocol path a mock serves (always POST) and what
// serves it once the call is authenticated and its body read.
type endpoint struct {
	path  string
	serve func(w http.ResponseWriter, r *http.Request, body []byte, c *callState)
}

// paths are the protocol paths this mock serves.
func (h *handler) paths() []string {
	out := make([]string, len(h.endpoints))
	for i, e := range h.endpoints {
		out[i] = e.path
	}
	return out
}

func (h *handler) serveProtocol(rw http.ResponseWriter, r *http.Request) {
	h.calls.arrive(r.URL.Path, r.Header.Get("traceparent"))
	start := time.Now()
	w := &statusWriter{ResponseWriter: rw}
	c := &callState{}
	// Deferred so it also runs when drop_after aborts the handler with a panic.
	defer func() {
		if w.status != 0 {
			h.calls.status(w.status)
		}
		var t Tokens
		user := ""
		if c.x != nil {
			t, user = c.x.tokensOf(h.opts.Flavor), c.x.req.user
		}
		h.calls.finish(user, t)
		attrs := []any{"flavor", h.opts.Flavor, "method", r.Method, "path", r.URL.Path, "status", w.status, "duration", time.Since(start)}
		if c.req != nil {
			attrs = append(attrs, "model", c.req.model, "stream", c.req.stream, "fault", c.fault)
		}
		h.log.Debug("mock call", attrs...)
	}()

	var serve func(http.ResponseWriter, *http.Request, []byte, *callState)
	for _, e := range h.endpoints {
		if r.URL.Path == e.path {
			serve = e.serve
		}
	}
	if serve == nil {
		h.proto.writeError(w, &apiError{status: http.StatusNotFound, message: fmt.Sprintf("unknown path %s (this %s mock serves POST %s)", r.URL.Path, h.opts.Flavor, strings.Join(h.paths(), ", "))})
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.proto.writeError(w, &apiError{status: http.StatusMethodNotAllowed, message: "use POST"})
		return
	}
	if h.keyHash != nil && !h.proto.authorized(r, h.keyHash) {
		h.proto.writeError(w, &apiError{status: http.StatusUnauthorized, message: "invalid or missing API key"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.proto.writeError(w, &apiError{status: http.StatusRequestEntityTooLarge, message: fmt.Sprintf("request body over %d bytes", maxBodyBytes)})
		} else {
			h.proto.writeError(w, badRequest("", "reading body: %v", err))
		}
		return
	}
	serve(w, r, body, c)
}

// chat returns the handler of proto's chat call.
func (h *handler) chat(proto protocol) func(http.ResponseWriter, *http.Request, []byte, *callState) {
	return func(w http.ResponseWriter, r *http.Request, body []byte, c *callState) {
		h.answer(w, r, proto, body, c)
	}
}

// answer serves one chat call of proto: parse, directives, tool choice,
// faults, then the answer as JSON or a stream.
func (h *handler) answer(w http.ResponseWriter, r *http.Request, proto protocol, body []byte, c *callState) {
	req, apiErr := proto.parse(body)
	if apiErr != nil {
		h.proto.writeError(w, apiErr)
		return
	}
	c.req = req
	// Before stripLastUser removes the directive lines: both are what the
	// caller sent.
	h.calls.toolResults(r.URL.Path, lastResults(req))
	rawInput := rawInputTokens(req)
	f, ok := h.directives(w, stripLastUser(req), c)
	if !ok {
		return
	}
	call, apiErr := chooseCall(req, f)
	if apiErr != nil {
		h.rejectDirective(w, apiErr, c)
		return
	}
	h.calls.faults(f.Labels())
	if !h.preamble(w, r, f) {
		return
	}
	chunks := h.opts.DefaultChunks
	if f.Has("chunks") {
		chunks = f.Chunks
	}
	var ans *answer
	if call != nil {
		ans = buildToolAnswer(h.opts.Flavor, req, call, chunks)
	} else {
		ans = buildAnswer(h.opts.Flavor, req, chunks)
	}
	c.x = &exchange{proto: proto, req: req, ans: ans, fault: f, noUsage: f.NoUsage, sent: delivery{rawInput: rawInput}}
	if req.stream {
		h.stream(w, r, c.x)
	} else {
		h.json(w, r, c.x)
	}
}

// directives parses the directive lines for this flavor; a bad directive
// is answered 400 here (ok false).
func (h *handler) directives(w http.ResponseWriter, lines []string, c *callState) (Fault, bool) {
	faults, err := ParseDirectives(strings.Join(lines, "\n"))
	if err != nil {
		h.rejectDirective(w, badRequest("messages", "%v", err), c)
		return Fault{}, false
	}
	f := faults[h.opts.Flavor]
	// The log shows the keys, not the arguments a test scripted.
	labels := f.Labels()
	for i, l := range labels {
		if strings.HasPrefix(l, "args=") {
			labels[i] = "args=..."
		}
	}
	c.fault = strings.Join(labels, " ")
	return f, true
}

func (h *handler) rejectDirective(w http.ResponseWriter, e *apiError, c *callState) {
	c.fault = "invalid"
	h.calls.faults([]string{c.fault})
	h.proto.writeError(w, e)
}

// preamble applies delay_ms and status=; false means the call is over.
func (h *handler) preamble(w http.ResponseWriter, r *http.Request, f Fault) bool {
	delay := h.opts.DefaultDelay
	if f.Has("delay_ms") {
		delay = ms(f.DelayMS)
	}
	if !sleep(r, delay) {
		return false
	}
	if f.Has("status") {
		if f.Has("retry_after") {
			w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
		}
		h.proto.writeError(w, &apiError{status: f.Status, message: fmt.Sprintf("mock fault: status=%d requested by an @mock directive", f.Status)})
		return false
	}
	return true
}

func keyMatches(got string, want []byte) bool {
	sum := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(sum[:], want) == 1
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b := marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }
