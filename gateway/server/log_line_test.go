package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Every chat request leaves one Info line "chat" whose fields are its final
// record's, and no source location (the line is handed to the handler
// without the caller's PC).
func TestRequestLogLineMatchesItsRecord(t *testing.T) {
	h := newHarness(t)
	for _, stream := range []bool{false, true} {
		r := h.do(http.MethodPost, "/v1/chat/completions", h.keyA, chatBody("chat-alpha", stream, ""))
		if r.status != http.StatusOK {
			t.Fatalf("stream=%v: status %d: %s", stream, r.status, r.body)
		}
		id := r.header.Get("X-Request-Id")
		rec := h.record(id)
		var lines []map[string]any
		for _, l := range strings.Split(h.logs.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "chat" && m["request_id"] == id {
				lines = append(lines, m)
			}
		}
		if len(lines) != 1 {
			t.Fatalf("stream=%v: %d chat lines for %s, want 1", stream, len(lines), id)
		}
		got := lines[0]
		want := map[string]any{
			"level": "INFO", "key_id": rec.KeyID, "alias": rec.Alias, "provider": rec.Provider,
			"status": rec.Status, "http_status": float64(rec.HTTPStatus), "error_type": rec.ErrorType,
			"fallbacks": float64(rec.Fallbacks), "stream": rec.Stream, "input_tokens": float64(rec.InputTokens),
			"output_tokens": float64(rec.OutputTokens), "latency_ms": float64(rec.LatencyMs),
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("stream=%v: %s = %v, want %v (the record's)", stream, k, got[k], v)
			}
		}
		if _, ok := got["source"]; ok {
			t.Errorf("stream=%v: the line has a source: %v", stream, got["source"])
		}
		if _, ok := got["time"].(string); !ok {
			t.Errorf("stream=%v: the line has no time: %v", stream, got)
		}
	}
}
