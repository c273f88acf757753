package server_test

import (
	"net/http"
	"testing"

	"github.com/llmgw/llmgw/api/snapshot"
)

// A key left without models (the controller dropped every model whose alias
// is not served) still authenticates: its caller learns that the model is
// the problem (403 model_not_allowed, which a key gets for any model outside
// its list, served or not, so that it learns nothing about other aliases),
// never that the key is invalid.
func TestKeyWithoutModelsStillAuthenticates(t *testing.T) {
	h := newHarness(t, func(s *snapshot.Snapshot) { s.Keys[1].Models = nil })
	if r := h.do(http.MethodGet, "/v1/models", h.keyB, ""); r.status != http.StatusOK || string(r.body) == "" {
		t.Fatalf("GET /v1/models: %d %s", r.status, r.body)
	}
	for _, tc := range []struct {
		model  string
		status int
		code   string
	}{
		{"no-such-alias", http.StatusForbidden, "model_not_allowed"},
		{"chat-alpha", http.StatusForbidden, "model_not_allowed"},
	} {
		r := h.chat(h.keyB, chatBody(tc.model, false, ""))
		if e := r.errorBody(t); r.status != tc.status || e.Error.Code != tc.code {
			t.Fatalf("%s: %d %s, want %d %s", tc.model, r.status, r.body, tc.status, tc.code)
		}
	}
}
