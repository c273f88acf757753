package peers

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/llmgw/llmgw/gateway/usage"
)

// validatingImporter checks each record as the ledger does and keeps the
// batches it accepted.
type validatingImporter struct{ accepted int }

func (v *validatingImporter) Import(_ context.Context, recs []usage.Record) (int, error) {
	for i := range recs {
		if err := usage.ValidateImport(&recs[i]); err != nil {
			return 0, err
		}
	}
	v.accepted += len(recs)
	return len(recs), nil
}

// FuzzImportBody: whatever body a peer sends, the handler answers 200 only
// for a batch every record of which the ledger accepts, 400 otherwise, and
// never panics.
func FuzzImportBody(f *testing.F) {
	f.Add([]byte(`{"records":[]}`))
	f.Add([]byte(`{"records":[{"request_id":"req_1","key_id":"k","status":"success","created_at_us":1,"finished_at_us":2}]}`))
	f.Add([]byte(`{"records":[{"request_id":"req_1","status":"in_progress","created_at_us":1}]}`))
	f.Add([]byte(`{"records":[{"request_id":"","cost_picos":-1}]}`))
	f.Add([]byte(`{"records":null,"extra":1}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		imp := &validatingImporter{}
		h := ImportHandler(imp, "tok", slog.New(slog.DiscardHandler))
		req := httptest.NewRequest(http.MethodPost, RecordsPath, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK:
		case http.StatusBadRequest:
			if imp.accepted != 0 {
				t.Fatalf("400 after %d records were accepted", imp.accepted)
			}
		default:
			t.Fatalf("HTTP %d for a body: %s", rec.Code, rec.Body)
		}
	})
}
