package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
)

// During a rotation's grace both keys authenticate as the same key id: one
// history, each record with the fingerprint of the key used. After the
// grace (a hot reload here, or just time) the previous key gets 401
// key_rotated, distinct from an unknown key's invalid_api_key.
func TestRotatedKeyGrace(t *testing.T) {
	newPlain, newPrefix, newHash, err := keyformat.Generate()
	if err != nil {
		t.Fatal(err)
	}
	var oldHash string
	h := newHarness(t, func(s *snapshot.Snapshot) {
		for i := range s.Keys {
			if k := &s.Keys[i]; k.ID == "key-a" {
				oldHash = k.Hash
				k.Previous = &snapshot.PreviousKey{Prefix: k.Prefix, Hash: k.Hash, Until: time.Now().Add(time.Hour)}
				k.Prefix, k.Hash = newPrefix, newHash
			}
		}
	})
	oldPlain := h.keyA
	body := chatBody("chat-alpha", false, "")
	for _, tc := range []struct {
		name, key, hash string
	}{{"new key", newPlain, newHash}, {"previous key in its grace", oldPlain, oldHash}} {
		r := h.chat(tc.key, body)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.name, r.status, r.body)
		}
		rec := h.record(r.header.Get("X-Request-Id"))
		if rec.KeyID != "key-a" || rec.KeyFingerprint != keyformat.Fingerprint(tc.hash) {
			t.Fatalf("%s: record key %q fingerprint %q, want key-a %q", tc.name, rec.KeyID, rec.KeyFingerprint, keyformat.Fingerprint(tc.hash))
		}
	}
	if n, m := h.usageCount(newPlain), h.usageCount(oldPlain); n != 2 || m != 2 {
		t.Fatalf("GET /v1/usage lists %d records with the new key, %d with the previous one; want 2 and 2 (one history)", n, m)
	}

	ended := h.snap.Clone()
	for i := range ended.Keys {
		if k := &ended.Keys[i]; k.ID == "key-a" {
			k.Previous = &snapshot.PreviousKey{Prefix: k.Previous.Prefix, Hash: k.Previous.Hash, Until: time.Now().Add(-time.Second)}
		}
	}
	if err := h.srv.Apply(context.Background(), ended); err != nil {
		t.Fatal(err)
	}
	r := h.chat(oldPlain, body)
	wantError(t, r, http.StatusUnauthorized, "authentication_error", "key_rotated")
	if rec := h.record(r.header.Get("X-Request-Id")); rec.KeyID != "key-a" || rec.KeyFingerprint != keyformat.Fingerprint(oldHash) {
		t.Fatalf("key_rotated record: key %q fingerprint %q", rec.KeyID, rec.KeyFingerprint)
	}
	wantError(t, h.do(http.MethodGet, "/v1/models", oldPlain, ""), http.StatusUnauthorized, "authentication_error", "key_rotated")
	if r := h.chat(newPlain, body); r.status != http.StatusOK {
		t.Fatalf("new key after the grace: %d %s", r.status, r.body)
	}
	// A key that was never issued is still invalid_api_key.
	other, _, _, _ := keyformat.Generate()
	wantError(t, h.chat(other, body), http.StatusUnauthorized, "authentication_error", "invalid_api_key")
}
