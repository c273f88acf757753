package server_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
)

// 9. Every outcome leaves exactly one final record; concurrent load leaves
// records == requests; the database holds no prompt, completion or key text.
func TestExactlyOneRecordPerRequest(t *testing.T) {
	keyC, prefixC, hashC, err := keyformat.Generate()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(s *snapshot.Snapshot) {
		s.Keys = append(s.Keys, snapshot.Key{ID: "key-c", Prefix: prefixC, Hash: hashC, Models: []string{"*"},
			RateLimit: snapshot.RateLimit{RPM: 1, Burst: 1}})
		// The concurrent load below (64 at once, under -race, on a shared
		// 2-core machine) must not meet the harness's 1 s attempt timeout:
		// this test is about records, not about timeouts.
		for i := range s.Aliases {
			s.Aliases[i].Timeouts = snapshot.Timeouts{TotalMs: 60000, AttemptMs: 30000, FirstChunkMs: 30000, IdleMs: 30000}
		}
	})
	type expect struct {
		name, status string
		httpStatus   int
	}
	var ids []string
	var want []expect
	add := func(name string, r response, status string, code int) {
		t.Helper()
		if r.status != code && code != 499 {
			t.Fatalf("%s: HTTP %d, want %d: %s", name, r.status, code, r.body)
		}
		ids = append(ids, r.header.Get("X-Request-Id"))
		want = append(want, expect{name, status, code})
	}
	add("auth failure", h.chat("", chatBody("chat-alpha", false, "")), "rejected", 401)
	add("validation failure", h.chat(h.keyA, `{"model":"chat-alpha","messages":`), "rejected", 400)
	add("success (uses key C's only token)", h.chat(keyC, chatBody("chat-alpha", false, "")), "success", 200)
	add("gateway 429", h.chat(keyC, chatBody("chat-alpha", false, "")), "rejected", 429)
	add("provider failure", h.chat(h.keyA, chatBody("chat-restricted", false, "alpha:status=503")), "error", 502)
	add("stream interruption", h.chat(h.keyA, chatBody("chat-alpha", true, "alpha:error_after=1")), "partial", 200)

	// Client cancel: read the first event of a slow stream, then hang up.
	cancelID := h.cancelAfterFirstBytes(h.keyA, chatBody("chat-alpha", true, "alpha:chunks=8 alpha:chunk_delay_ms=300"))
	ids = append(ids, cancelID)
	want = append(want, expect{"client cancel", "canceled", 499})
	waitFor(t, 3*time.Second, func() bool {
		r, err := h.ledger.Get(context.Background(), cancelID)
		return err == nil && r.Status != "in_progress"
	})

	for i, id := range ids {
		rec := h.record(id)
		if rec.Status != want[i].status || rec.HTTPStatus != want[i].httpStatus {
			t.Fatalf("%s: record status %s/%d, want %s/%d", want[i].name, rec.Status, rec.HTTPStatus, want[i].status, want[i].httpStatus)
		}
	}
	total, _, err := h.ledger.Count(context.Background())
	if err != nil || total != len(ids) {
		t.Fatalf("ledger holds %d records after %d requests (%v)", total, len(ids), err)
	}
	// The canceled stream's upstream call was cancelled too: the mock saw a
	// disconnect long before its 8×300 ms answer would have finished.
	cancelRec := h.record(cancelID)
	if cancelRec.LatencyMs > 1500 {
		t.Fatalf("canceled stream finalized after %d ms", cancelRec.LatencyMs)
	}

	// Concurrent load on both keys, streaming and not.
	const n = 300
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]bool{}
	sem := make(chan struct{}, 64)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			key := h.keyA
			if i%2 == 1 {
				key = h.keyB
			}
			r := h.chat(key, chatBody("chat-alpha", i%3 == 0, ""))
			if r.status != 200 {
				t.Errorf("load request %d: %d %s", i, r.status, r.body)
			}
			mu.Lock()
			seen[r.header.Get("X-Request-Id")] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("%d distinct request ids for %d requests", len(seen), n)
	}
	total, byStatus, err := h.ledger.Count(context.Background())
	if err != nil || total != len(ids)+n || byStatus["in_progress"] != 0 {
		t.Fatalf("ledger: %d records (%v), want %d, none in progress (%v)", total, byStatus, len(ids)+n, err)
	}
	for id := range seen {
		if h.record(id).Status != "success" {
			t.Fatalf("load record %s not success", id)
		}
	}

	// Scan the database files' bytes for anything that must not be stored.
	var db []byte
	// -begins is the ledger's journal: each request's Begin and final
	// record as lines, until the file is rewritten past 4 MiB.
	if b, err := os.ReadFile(h.dbPath + "-begins"); err != nil || len(b) == 0 {
		t.Fatalf("journal to scan: %d bytes, %v", len(b), err)
	}
	for _, suffix := range []string{"", "-wal", "-shm", "-begins"} {
		b, err := os.ReadFile(h.dbPath + suffix)
		if err == nil {
			db = append(db, b...)
		}
	}
	if len(db) == 0 {
		t.Fatal("no database bytes to scan")
	}
	for _, forbidden := range []string{"Tell me something deterministic", "You are terse", "says:", "@mock", h.keyA, h.keyB, keyC, alphaSecret, betaSecret} {
		if bytes.Contains(db, []byte(forbidden)) {
			t.Fatalf("database contains %q", forbidden)
		}
	}
	if keyformat.LooksLikeKey(string(db)) {
		t.Fatal("database contains something shaped like a plaintext key")
	}
	fmt.Fprintf(os.Stderr, "ledger scan: %d bytes clean, %d records\n", len(db), total)
}
