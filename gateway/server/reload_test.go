package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/api/snapshot"
)

func TestReloadValidThenInvalid(t *testing.T) {
	h := newHarness(t)
	v1 := h.srv.Version()
	next := h.snap.Clone()
	next.Aliases = append(next.Aliases, snapshot.Alias{Name: "chat-new", Primary: snapshot.Route{Provider: "beta", Model: "beta-small"}})
	next.Keys[0].Models = append(next.Keys[0].Models, "chat-new")
	if err := h.srv.Apply(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	if h.srv.Version() == v1 {
		t.Fatal("version did not change")
	}
	if r := h.chat(h.keyA, chatBody("chat-new", false, "")); r.status != 200 || !strings.Contains(string(r.body), "beta/beta-small") {
		t.Fatalf("new alias not served: %d %s", r.status, r.body)
	}
	v2 := h.srv.Version()

	bad := next.Clone()
	bad.Aliases[0].Primary.Provider = "nonexistent"
	if err := h.srv.Apply(context.Background(), bad); err == nil {
		t.Fatal("invalid snapshot applied")
	}
	if h.srv.Version() != v2 {
		t.Fatal("invalid snapshot replaced the running one")
	}
	if r := h.chat(h.keyA, chatBody("chat-new", false, "")); r.status != 200 {
		t.Fatalf("running config lost after a rejected reload: %d", r.status)
	}
	r := h.do(http.MethodGet, "/health", "", "")
	var health struct {
		Status   string `json:"status"`
		Snapshot struct {
			Version         string `json:"version"`
			LastReloadError string `json:"last_reload_error"`
		} `json:"snapshot"`
	}
	_ = json.Unmarshal(r.body, &health)
	if health.Status != "degraded" || health.Snapshot.Version != v2 || health.Snapshot.LastReloadError == "" {
		t.Fatalf("health after rejected reload: %s", r.body)
	}
	// The data port needs no key: it says that a snapshot was rejected, not
	// why (reasons name files, Secrets and config values). The management
	// port says why.
	if strings.Contains(string(r.body), "nonexistent") || strings.Contains(string(r.body), h.dbPath[:strings.LastIndex(h.dbPath, "/")]) {
		t.Fatalf("the data port's /health shows the rejection's details: %s", r.body)
	}
	rec := httptest.NewRecorder()
	h.srv.ManagementHealthHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
	if !strings.Contains(rec.Body.String(), "nonexistent") {
		t.Fatalf("the management port's /health does not say why: %s", rec.Body.String())
	}
}

// A stream in flight finishes on the config it started with, even when a
// reload removes its alias mid-stream.
func TestStreamSurvivesReload(t *testing.T) {
	h := newHarness(t)
	req, _ := http.NewRequest(http.MethodPost, h.gw.URL+"/v1/chat/completions",
		strings.NewReader(chatBody("chat-alpha", true, "alpha:chunks=6 alpha:chunk_delay_ms=100")))
	req.Header.Set("Authorization", "Bearer "+h.keyA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	next := h.snap.Clone()
	next.Aliases = next.Aliases[1:] // chat-alpha removed
	next.Keys[0].Models = []string{"chat-beta", "chat-restricted"}
	next.Keys[1].Models = []string{"chat-beta"}
	if err := h.srv.Apply(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	var rest strings.Builder
	if _, err := br.WriteTo(&rest); err != nil {
		t.Fatal(err)
	}
	s := summarize(t, sseEvents(t, []byte(strings.TrimPrefix(rest.String(), "\n"))))
	if s.done != 1 || len(s.errors) != 0 || s.finish != "stop" {
		t.Fatalf("stream across reload: %+v", s)
	}
	if r := h.chat(h.keyA, chatBody("chat-alpha", false, "")); r.status != http.StatusForbidden {
		t.Fatalf("removed alias still served to new requests: %d", r.status)
	}
}

func TestHardLimits(t *testing.T) {
	h := newHarness(t, func(s *snapshot.Snapshot) {
		s.Limits = snapshot.Limits{MaxBodyBytes: 2048, MaxMessages: 3, MaxContentChars: 500, MaxConcurrent: 1}
	})
	big := `{"model":"chat-alpha","messages":[{"role":"user","content":"` + strings.Repeat("a", 4000) + `"}]}`
	if r := h.chat(h.keyA, big); r.status != http.StatusRequestEntityTooLarge || r.errorBody(t).Error.Code != "body_too_large" {
		t.Fatalf("oversized body: %d %s", r.status, r.body)
	}
	many := `{"model":"chat-alpha","messages":[` + strings.Repeat(`{"role":"user","content":"x"},`, 3) + `{"role":"user","content":"x"}]}`
	if r := h.chat(h.keyA, many); r.status != 400 || r.errorBody(t).Error.Code != "too_many_messages" {
		t.Fatalf("too many messages: %d %s", r.status, r.body)
	}
	long := `{"model":"chat-alpha","messages":[{"role":"user","content":"` + strings.Repeat("a", 501) + `"}]}`
	if r := h.chat(h.keyA, long); r.status != 400 || r.errorBody(t).Error.Code != "content_too_long" {
		t.Fatalf("long content: %d %s", r.status, r.body)
	}

	// maxConcurrent=1: while one stream is open, the next request is 503.
	req, _ := http.NewRequest(http.MethodPost, h.gw.URL+"/v1/chat/completions",
		strings.NewReader(chatBody("chat-alpha", true, "alpha:chunks=4 alpha:chunk_delay_ms=300")))
	req.Header.Set("Authorization", "Bearer "+h.keyA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := h.chat(h.keyB, chatBody("chat-alpha", false, ""))
	if r.status != http.StatusServiceUnavailable || r.errorBody(t).Error.Type != "overloaded_error" || r.header.Get("Retry-After") == "" {
		t.Fatalf("over the concurrency limit: %d %s", r.status, r.body)
	}
	if rec := h.record(r.header.Get("X-Request-Id")); rec.Status != "rejected" || rec.HTTPStatus != 503 {
		t.Fatalf("overload record %+v", rec)
	}
}

func TestUsagePagination(t *testing.T) {
	h := newHarness(t)
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, h.chat(h.keyB, chatBody("chat-alpha", false, "")).header.Get("X-Request-Id"))
	}
	var got []string
	cursor := ""
	for pages := 0; pages < 10; pages++ {
		r := h.do(http.MethodGet, "/v1/usage?limit=2&cursor="+cursor, h.keyB, "")
		var page struct {
			Data []struct {
				RequestID string `json:"request_id"`
			} `json:"data"`
			HasMore    bool   `json:"has_more"`
			NextCursor string `json:"next_cursor"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil || r.status != 200 {
			t.Fatalf("page: %d %s", r.status, r.body)
		}
		for _, d := range page.Data {
			got = append(got, d.RequestID)
		}
		if !page.HasMore {
			break
		}
		cursor = page.NextCursor
	}
	if len(got) != 5 {
		t.Fatalf("paged %d records, want 5", len(got))
	}
	for i := range got { // newest first
		if got[i] != ids[len(ids)-1-i] {
			t.Fatalf("order %v, want reverse of %v", got, ids)
		}
	}
	if r := h.do(http.MethodGet, "/v1/usage?limit=501", h.keyB, ""); r.status != 400 {
		t.Fatalf("limit 501: %d", r.status)
	}
	if r := h.do(http.MethodGet, "/v1/usage?cursor=garbage", h.keyB, ""); r.status != 400 || r.errorBody(t).Error.Code != "invalid_value" {
		t.Fatalf("bad cursor: %d %s", r.status, r.body)
	}
	if r := h.do(http.MethodGet, "/v1/usage", "", ""); r.status != 401 {
		t.Fatalf("usage without key: %d", r.status)
	}
}
