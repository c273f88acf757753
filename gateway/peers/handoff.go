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
