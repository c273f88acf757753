package server_test

import (
	"net/http"
	"testing"

	"github.com/llmgw/llmgw/api/keyformat"
)

// Each record carries its own key's fingerprint, computed once per key and
// snapshot: two keys used in turn, each more than once, never swap theirs.
func TestRecordsCarryTheirKeysFingerprint(t *testing.T) {
	h := newHarness(t)
	want := map[string]string{}
	for _, k := range h.snap.Keys {
		want[k.ID] = keyformat.Fingerprint(k.Hash)
	}
	if len(want) < 2 || want[h.snap.Keys[0].ID] == want[h.snap.Keys[1].ID] {
		t.Fatalf("the demo snapshot should hold two keys with different hashes: %v", want)
	}
	seen := map[string]int{}
	for i := range 6 {
		key := h.keyA
		if i%2 == 1 {
			key = h.keyB
		}
		r := h.chat(key, chatBody("chat-alpha", i%3 == 0, ""))
		if r.status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, r.status, r.body)
		}
		rec := h.record(r.header.Get("X-Request-Id"))
		if fp, ok := want[rec.KeyID]; !ok || rec.KeyFingerprint != fp {
			t.Fatalf("request %d: record of key %q has fingerprint %q, want %q", i, rec.KeyID, rec.KeyFingerprint, fp)
		}
		seen[rec.KeyID]++
	}
	if len(seen) != 2 {
		t.Fatalf("records by key: %v, want both keys", seen)
	}
}
