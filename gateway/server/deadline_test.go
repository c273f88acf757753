package server_test

import (
	"net/http"
	"testing"

	"github.com/llmgw/llmgw/api/snapshot"
)

// The alias's total deadline bounds a stream before its first content (the
// answer names the deadline, not the attempt timeout, and no fallback is
// tried) and after it (a stream that keeps sending within its idle timeout
// is still cut at the deadline: one error event, then [DONE], a partial
// record).
func TestTotalDeadlineBoundsAStream(t *testing.T) {
	// The attempt timeout may not exceed the total; the first-chunk and idle
	// timeouts are far beyond it.
	long := snapshot.Timeouts{TotalMs: 600, AttemptMs: 600, FirstChunkMs: 10_000, IdleMs: 10_000}
	h := newHarness(t, func(s *snapshot.Snapshot) {
		s.Aliases = append(s.Aliases, snapshot.Alias{Name: "chat-deadline", Primary: snapshot.Route{Provider: "alpha", Model: "a"},
			Fallbacks: []snapshot.Route{{Provider: "beta", Model: "b"}}, Timeouts: long})
		s.Keys[0].Models = []string{"*"}
	})

	t.Run("before the first content", func(t *testing.T) {
		r := h.chat(h.keyA, chatBody("chat-deadline", true, "alpha:delay_ms=3000"))
		e := r.errorBody(t)
		if r.status != http.StatusGatewayTimeout || e.Error.Type != "provider_timeout" || e.Error.Code != "gateway_deadline_exceeded" {
			t.Fatalf("got %d %s/%s, want 504 provider_timeout/gateway_deadline_exceeded", r.status, e.Error.Type, e.Error.Code)
		}
		rec := h.record(r.header.Get("X-Request-Id"))
		if rec.Status != "error" || rec.Fallbacks != 0 || len(rec.Attempts) != 1 || rec.Attempts[0].Outcome != "timeout" {
			t.Fatalf("record %+v", rec)
		}
		if c := mockCalls(t, h.beta); c.Total != 0 {
			t.Fatalf("the fallback was called %d times after the total deadline", c.Total)
		}
	})

	t.Run("after the first content", func(t *testing.T) {
		// 20 pieces 100 ms apart: 2 s of a stream that never idles.
		r := h.chat(h.keyA, chatBody("chat-deadline", true, "alpha:chunks=20 alpha:chunk_delay_ms=100"))
		if r.status != http.StatusOK {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		s := summarize(t, sseEvents(t, r.body))
		if s.done != 1 || !s.doneIsLast || len(s.errors) != 1 || s.contentN == 0 || s.contentN >= 20 {
			t.Fatalf("summary %+v: want some content, one error event and one [DONE] last", s)
		}
		if e := s.errors[0].Error; e.Type != "stream_error" || e.Code != "upstream_timeout" {
			t.Fatalf("error event %+v", e)
		}
		rec := h.record(r.header.Get("X-Request-Id"))
		if rec.Status != "partial" || rec.Fallbacks != 0 || len(rec.Attempts) != 1 || rec.Attempts[0].Outcome != "timeout" {
			t.Fatalf("record %+v", rec)
		}
	})
}
