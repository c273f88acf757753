package peers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/gateway/usage"
)

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
