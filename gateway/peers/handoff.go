package peers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/gateway/usage"
)

// The hand-off protocol: a replica leaving the StatefulSet (or an `llmgw
// ledger import` Job holding a stranded volume) POSTs its final records,
// in batches, to a replica that stays, on the management port:
//
//	POST /peer/v1/records    Authorization: Bearer <peer token>
//	{"records":[HandoffRecord...]}
//	→ 200 {"received":n,"added":m}
//
// The receiver commits the whole batch before it answers, skipping the
// records it already has, so a batch sent again (the answer was lost, the
// sender died before deleting it) is added once. Only after a 200 does the
// sender delete the batch from its own ledger. A marker in the sender's
// ledger names the receiver until the sender is empty: a hand-off cut
// short is finished later with that same receiver, never split between two
// (a batch committed at the first and not yet deleted would be counted by
// both).

// RecordsPath is the receiver's hand-off endpoint on the management port.
const RecordsPath = "/peer/v1/records"

// MaxRecordsBody bounds a hand-off request's body (413 beyond it).
const MaxRecordsBody = 32 << 20

// DefaultHandoffBatch is how many records one request carries by default.
const DefaultHandoffBatch = 500

// ErrHandoffElsewhere is HandOff's error when the ledger's marker names a
// receiver other than the one asked: an earlier hand-off must be finished
// with its own receiver first.
var ErrHandoffElsewhere = errors.New("peers: this ledger is being handed to another receiver")

// HandoffRecord is a usage record on the hand-off wire: every column of
// usage.Record, times as integer microseconds since the epoch (the ledger's
// own precision; 0 for none), cost as exact pico-units (money.Picos).
type HandoffRecord struct {
	RequestID         string            `json:"request_id"`
	ClientRequestID   string            `json:"client_request_id,omitzero"`
	Endpoint          string            `json:"endpoint,omitzero"`
	Session           string            `json:"session,omitzero"`
	Group             string            `json:"group,omitzero"`
	Owners            map[string]string `json:"owners,omitzero"`
	KeyID             string            `json:"key_id,omitzero"`
	KeyFingerprint    string            `json:"key_fingerprint,omitzero"`
	Alias             string            `json:"alias,omitzero"`
	Provider          string            `json:"provider,omitzero"`
	ProviderModel     string            `json:"provider_model,omitzero"`
	Status            string            `json:"status"`
	HTTPStatus        int               `json:"http_status,omitzero"`
	ErrorType         string            `json:"error_type,omitzero"`
	Fallbacks         int               `json:"fallbacks,omitzero"`
	Attempts          []HandoffAttempt  `json:"attempts,omitzero"`
	Stream            bool              `json:"stream,omitzero"`
	InputTokens       int               `json:"input_tokens,omitzero"`
	OutputTokens      int               `json:"output_tokens,omitzero"`
	CachedInputTokens int               `json:"cached_input_tokens,omitzero"`
	ReasoningTokens   int               `json:"reasoning_tokens,omitzero"`
	CostPicos         int64             `json:"cost_picos,omitzero"`
	Currency          string            `json:"currency,omitzero"`
	LatencyMs         int64             `json:"latency_ms,omitzero"`
	CreatedAtUs       int64             `json:"created_at_us"`
	FinishedAtUs      int64             `json:"finished_at_us"`
}

// HandoffAttempt is one upstream attempt of a HandoffRecord.
type HandoffAttempt struct {
	Provider   string `json:"provider,omitzero"`
	Model      string `json:"model,omitzero"`
	Outcome    string `json:"outcome,omitzero"`
	StatusCode int    `json:"status_code,omitzero"`
	LatencyMs  int64  `json:"latency_ms,omitzero"`
}

// handoffBody is a hand-off request's body.
type handoffBody struct {
	Records []HandoffRecord `json:"records"`
}

// HandoffAnswer is the receiver's answer to a batch: how many records it
// got and how many of them it did not have yet.
type HandoffAnswer struct {
	Received int `json:"received"`
	Added    int `json:"added"`
}

func recordOf(r usage.Record) HandoffRecord {
	h := HandoffRecord{
		RequestID: r.RequestID, ClientRequestID: r.ClientRequestID, Endpoint: r.Endpoint, Session: r.Session,
		Group: r.Group, Owners: r.Owners, KeyID: r.KeyID, KeyFingerprint: r.KeyFingerprint, Alias: r.Alias,
		Provider: r.Provider, ProviderModel: r.ProviderModel, Status: r.Status, HTTPStatus: r.HTTPStatus,
		ErrorType: r.ErrorType, Fallbacks: r.Fallbacks, Stream: r.Stream,
		InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CachedInputTokens: r.CachedInputTokens,
		ReasoningTokens: r.ReasoningTokens, CostPicos: int64(r.Cost), Currency: r.Currency, LatencyMs: r.LatencyMs,
		CreatedAtUs: micros(r.CreatedAt), FinishedAtUs: micros(r.FinishedAt),
	}
	if len(r.Attempts) > 0 {
		h.Attempts = make([]HandoffAttempt, len(r.Attempts))
		for i, a := range r.Attempts {
			h.Attempts[i] = HandoffAttempt{Provider: a.Provider, Model: a.Model, Outcome: a.Outcome, StatusCode: a.StatusCode, LatencyMs: a.LatencyMs}
		}
	}
	return h
}

func (h HandoffRecord) usage() usage.Record {
	r := usage.Record{
		RequestID: h.RequestID, ClientRequestID: h.ClientRequestID, Endpoint: h.Endpoint, Session: h.Session,
		Group: h.Group, Owners: h.Owners, KeyID: h.KeyID, KeyFingerprint: h.KeyFingerprint, Alias: h.Alias,
		Provider: h.Provider, ProviderModel: h.ProviderModel, Status: h.Status, HTTPStatus: h.HTTPStatus,
		ErrorType: h.ErrorType, Fallbacks: h.Fallbacks, Stream: h.Stream,
		InputTokens: h.InputTokens, OutputTokens: h.OutputTokens, CachedInputTokens: h.CachedInputTokens,
		ReasoningTokens: h.ReasoningTokens, Cost: money.Picos(h.CostPicos), Currency: h.Currency, LatencyMs: h.LatencyMs,
		CreatedAt: fromMicros(h.CreatedAtUs), FinishedAt: fromMicros(h.FinishedAtUs),
	}
	if len(h.Owners) == 0 {
		r.Owners = nil // an empty object and none are one thing in the ledger
	}
	if len(h.Attempts) > 0 {
		r.Attempts = make([]usage.Attempt, len(h.Attempts))
		for i, a := range h.Attempts {
			r.Attempts[i] = usage.Attempt{Provider: a.Provider, Model: a.Model, Outcome: a.Outcome, StatusCode: a.StatusCode, LatencyMs: a.LatencyMs}
		}
	}
	return r
}

func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromMicros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

// HandoffLedger is what HandOff needs of the sender's ledger
// (*usage.Ledger).
type HandoffLedger interface {
	ExportBatch(ctx context.Context, after string, n int) ([]usage.Record, error)
	Forget(ctx context.Context, ids []string) error
	SetHandoff(ctx context.Context, to string) error
	Handoff(ctx context.Context) (to string, ok bool, err error)
	ClearHandoff(ctx context.Context) error
}

// HandoffConfig says where HandOff sends the records.
type HandoffConfig struct {
	// To is the receiver's management base URL, e.g.
	// http://llmgw-gateway-0.llmgw-gateway-peers:9090.
	To    string
	Token string // the peers' token
	// Client defaults to one with a 30s timeout a request.
	Client *http.Client
	Batch  int // records a request (default DefaultHandoffBatch)
	Logger *slog.Logger
}

// HandoffStats is what a HandOff moved.
type HandoffStats struct {
	Sent    int // records the receiver acknowledged (and this ledger deleted)
	Added   int // of them, records the receiver did not have yet
	Batches int // acknowledged requests
}

// Present is how many of the records sent the receiver already had (from an
// earlier attempt).
func (s HandoffStats) Present() int { return s.Sent - s.Added }

// HandOff moves every final record of l to the receiver cfg.To and leaves
// l without them and without a marker. It refuses (ErrHandoffElsewhere) a
// ledger whose marker names another receiver. A request that fails for a
// reason that may pass (no connection, 5xx, 429) is tried again with a
// short backoff until ctx ends, which the caller bounds (a pod's
// termination grace period); any other failure ends the hand-off.
//
// On failure, what was acknowledged is deleted and the rest stays in l with
// the marker, so HandOff called again with the same receiver, in this
// process or after a restart, finishes the job without counting a record
// twice. The marker is removed again only when this call set it and no
// batch can be at the receiver unacknowledged (the receiver could not be
// reached at all, or refused the request): then another receiver may be
// chosen.
func HandOff(ctx context.Context, l HandoffLedger, cfg HandoffConfig) (HandoffStats, error) {
	var st HandoffStats
	to, err := ReceiverBase(cfg.To)
	if err != nil {
		return st, err
	}
	cfg.To = to
	if cfg.Token == "" {
		return st, errors.New("peers: hand-off: a peer token is required")
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultHandoffBatch
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	prev, started, err := l.Handoff(ctx)
	if err != nil {
		return st, fmt.Errorf("peers: hand-off: %w", err)
	}
	if started && prev != to {
		return st, fmt.Errorf("%w: its marker names %s, not %s: finish that hand-off first", ErrHandoffElsewhere, prev, to)
	}
	if !started {
		if err := l.SetHandoff(ctx, to); err != nil {
			return st, fmt.Errorf("peers: hand-off: %w", err)
		}
	}
	h := handoff{cfg: cfg, batch: cfg.Batch}
	if err := h.run(ctx, l, &st); err != nil {
		if !started && !h.inDoubt {
			h.release(ctx, l)
		}
		cfg.Logger.Warn("usage hand-off stopped", "to", to, "sent", st.Sent, "added", st.Added, "err", err)
		return st, err
	}
	if err := l.ClearHandoff(ctx); err != nil {
		return st, fmt.Errorf("peers: hand-off: every record moved, but: %w", err)
	}
	cfg.Logger.Info("usage records handed off", "to", to, "sent", st.Sent, "added", st.Added,
		"already_present", st.Present(), "batches", st.Batches, "replay", started)
	return st, nil
}

// ReceiverBase checks a receiver's base URL (http or https, a host, no
// query) and returns it without a trailing slash: the form HandOff keeps in
// the marker and compares with it.
func ReceiverBase(to string) (string, error) {
	to = strings.TrimRight(strings.TrimSpace(to), "/")
	u, err := url.Parse(to)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("peers: hand-off: receiver %q is not an http(s) base URL like http://gw-0.peers:9090", to)
	}
	return to, nil
}

// handoff is one HandOff's progress.
type handoff struct {
	cfg   HandoffConfig
	batch int // shrinks when the receiver finds a request too large
	// inDoubt: a batch may be committed at the receiver and is still in
	// this ledger (sent, answer not read or not acted on).
	inDoubt bool
}

func (h *handoff) run(ctx context.Context, l HandoffLedger, st *HandoffStats) error {
	var forgotten map[string]bool // the last batch deleted
	for {
		// Always from the start: what was acknowledged is gone, and a
		// record finished late with a smaller id is not left behind.
		recs, err := l.ExportBatch(ctx, "", h.batch)
		if err != nil {
			return fmt.Errorf("peers: hand-off: %w", err)
		}
		if len(recs) == 0 {
			return nil
		}
		if forgotten[recs[0].RequestID] {
			// Forget did not delete: sending the batch again would loop,
			// and the receiver has it.
			h.inDoubt = true
			return fmt.Errorf("peers: hand-off: record %s is still here after it was deleted", recs[0].RequestID)
		}
		ans, err := h.send(ctx, recs)
		var se *statusError
		if errors.As(err, &se) && se.code == http.StatusRequestEntityTooLarge && len(recs) > 1 {
			h.batch = len(recs) / 2 // nothing was written: the same records, in smaller requests
			h.cfg.Logger.Warn("usage hand-off: batch too large for the receiver, halving it", "to", h.cfg.To, "batch", h.batch)
			continue
		}
		if err != nil {
			return err
		}
		if ans.Received != len(recs) || ans.Added < 0 || ans.Added > ans.Received {
			return fmt.Errorf("peers: hand-off to %s: sent %d records, the receiver answered %+v", h.cfg.To, len(recs), ans)
		}
		batchIDs := make([]string, len(recs))
		for i, r := range recs {
			batchIDs[i] = r.RequestID
		}
		if err := l.Forget(ctx, batchIDs); err != nil {
			return fmt.Errorf("peers: hand-off: the receiver has %d records, deleting them here: %w", len(recs), err)
		}
		forgotten = make(map[string]bool, len(batchIDs))
		for _, id := range batchIDs {
			forgotten[id] = true
		}
		h.inDoubt = false
		st.Sent += len(recs)
		st.Added += ans.Added
		st.Batches++
		h.cfg.Logger.Debug("usage hand-off: batch acknowledged", "to", h.cfg.To, "records", len(recs), "added", ans.Added)
	}
}

// Backoff between tries of one batch.
const (
	firstBackoff = 100 * time.Millisecond
	maxBackoff   = 2 * time.Second
)

// send POSTs recs until the receiver acknowledges them, a failure that
// will not pass, or ctx's end.
func (h *handoff) send(ctx context.Context, recs []usage.Record) (HandoffAnswer, error) {
	body := handoffBody{Records: make([]HandoffRecord, len(recs))}
	for i, r := range recs {
		body.Records[i] = recordOf(r)
	}
	// A name with invalid UTF-8 (the ledger keeps what it was given)
	// travels with U+FFFD in its place rather than blocking the hand-off.
	b, err := json.Marshal(&body, jsontext.AllowInvalidUTF8(true), json.Deterministic(true))
	if err != nil {
		return HandoffAnswer{}, fmt.Errorf("peers: hand-off: encode: %w", err)
	}
	wait := firstBackoff
	for try := 1; ; try++ {
		ans, err := h.post(ctx, b)
		if err == nil {
			return ans, nil
		}
		if !retryable(err) {
			return HandoffAnswer{}, fmt.Errorf("peers: hand-off to %s: %w", h.cfg.To, err)
		}
		if ctx.Err() == nil {
			h.cfg.Logger.Warn("usage hand-off: request failed, trying again", "to", h.cfg.To, "try", try, "in", wait.String(), "err", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return HandoffAnswer{}, fmt.Errorf("peers: hand-off to %s: %w (last try: %w)", h.cfg.To, ctx.Err(), err)
		}
		wait = min(2*wait, maxBackoff)
	}
}

// post sends one request. Unless the request never left (no connection)
// or the receiver refused it, the batch may be committed there: inDoubt.
func (h *handoff) post(ctx context.Context, body []byte) (HandoffAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.cfg.To+RecordsPath, bytes.NewReader(body))
	if err != nil {
		return HandoffAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+h.cfg.Token)
	resp, err := h.cfg.Client.Do(req)
	if err != nil {
		var oe *net.OpError
		if !errors.As(err, &oe) || oe.Op != "dial" {
			h.inDoubt = true
		}
		return HandoffAnswer{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		if resp.StatusCode >= 500 {
			h.inDoubt = true // a 4xx is a refusal before any write; a 5xx may come from anywhere
		}
		return HandoffAnswer{}, &statusError{code: resp.StatusCode, msg: strings.TrimSpace(string(msg))}
	}
	h.inDoubt = true
	var ans HandoffAnswer
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if err == nil {
		err = json.Unmarshal(raw, &ans)
	}
	if err != nil {
		return HandoffAnswer{}, &answerError{err: err}
	}
	return ans, nil
}

// release removes the marker this HandOff set, when no batch can be at the
// receiver unacknowledged: a hand-off that never reached its receiver must
// not pin the ledger to it. ctx may have ended; the removal is local and
// quick.
func (h *handoff) release(ctx context.Context, l HandoffLedger) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := l.ClearHandoff(cctx); err != nil {
		h.cfg.Logger.Warn("usage hand-off: marker not removed", "to", h.cfg.To, "err", err)
	}
}

// statusError is a receiver's answer other than 200.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string {
	if e.msg == "" {
		return fmt.Sprintf("HTTP %d", e.code)
	}
	return fmt.Sprintf("HTTP %d: %s", e.code, e.msg)
}

// answerError is a 200 whose body is not a HandoffAnswer: the receiver
// speaks another protocol, and asking again will not change it.
type answerError struct{ err error }

func (e *answerError) Error() string { return "unreadable answer: " + e.err.Error() }
func (e *answerError) Unwrap() error { return e.err }

// retryable says whether a failed request may succeed if sent again: no
// connection, a receiver that could not commit or is overloaded. A refusal
// (401, 400, 404...) or a garbled answer will not change.
func retryable(err error) bool {
	var se *statusError
	if errors.As(err, &se) {
		return se.code >= 500 || se.code == http.StatusTooManyRequests || se.code == http.StatusRequestTimeout
	}
	var ae *answerError
	return !errors.As(err, &ae)
}

// Importer is what ImportHandler needs of the receiver's ledger
// (*usage.Ledger).
type Importer interface {
	Import(ctx context.Context, recs []usage.Record) (int, error)
}

// ImportHandler serves RecordsPath: it checks the peers' token, decodes
// the batch strictly (unknown members refused: a field this version would
// drop must not be dropped silently), and imports it into l, all of it or
// none. Answers: 401 without the token, 405 for a method other than POST,
// 413 past MaxRecordsBody, 400 for a malformed body or an invalid record,
// 503 while the ledger cannot commit (the sender tries again), 200 with a
// HandoffAnswer once the batch is committed.
func ImportHandler(l Importer, token string, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Authorized(r, token) {
			w.Header().Set("WWW-Authenticate", "Bearer")
			handoffError(w, http.StatusUnauthorized, "peer token required")
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			handoffError(w, http.StatusMethodNotAllowed, "POST only")
			return
		}
		raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRecordsBody))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				handoffError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes: send smaller batches", MaxRecordsBody))
				return
			}
			handoffError(w, http.StatusBadRequest, "reading the body: "+err.Error())
			return
		}
		var body handoffBody
		if err := json.Unmarshal(raw, &body, json.RejectUnknownMembers(true)); err != nil {
			handoffError(w, http.StatusBadRequest, "malformed body: "+err.Error())
			return
		}
		if body.Records == nil {
			handoffError(w, http.StatusBadRequest, `malformed body: "records" is required`)
			return
		}
		recs := make([]usage.Record, len(body.Records))
		for i, h := range body.Records {
			recs[i] = h.usage()
		}
		added, err := l.Import(r.Context(), recs)
		switch {
		case err == nil:
		case errors.Is(err, usage.ErrInvalidRecord):
			log.Warn("usage hand-off: batch refused", "remote", r.RemoteAddr, "records", len(recs), "err", err)
			handoffError(w, http.StatusBadRequest, err.Error())
			return
		case errors.Is(err, usage.ErrNotWritable), errors.Is(err, usage.ErrClosed),
			errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			log.Warn("usage hand-off: batch not committed", "remote", r.RemoteAddr, "records", len(recs), "err", err)
			w.Header().Set("Retry-After", "1")
			handoffError(w, http.StatusServiceUnavailable, "the usage ledger cannot commit now")
			return
		default:
			log.Error("usage hand-off: import failed", "remote", r.RemoteAddr, "records", len(recs), "err", err)
			handoffError(w, http.StatusInternalServerError, "import failed")
			return
		}
		log.Info("usage hand-off: batch received", "remote", r.RemoteAddr, "received", len(recs), "added", added)
		handoffJSON(w, http.StatusOK, HandoffAnswer{Received: len(recs), Added: added})
	})
}

// handoffError writes {"error":{"message":...}}.
func handoffError(w http.ResponseWriter, code int, msg string) {
	type detail struct {
		Message string `json:"message"`
	}
	handoffJSON(w, code, struct {
		Error detail `json:"error"`
	}{detail{msg}})
}

func handoffJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v, jsontext.AllowInvalidUTF8(true))
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":{"message":"encoding the answer failed"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}
