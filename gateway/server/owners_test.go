package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/llmgw/llmgw/api/snapshot"
)

// Owner labels of a key and its group are on every record of the key (the
// key's win over the group's), listed by GET /v1/usage, and
// /v1/usage/summary totals the key's records by one of them.
func TestOwnersOnEveryRecord(t *testing.T) {
	h := newHarness(t, withPrices, func(s *snapshot.Snapshot) {
		s.Groups = []snapshot.Group{{Name: "platform", Owners: map[string]string{"team": "platform", "cost-center": "cc-7"}}}
		for i := range s.Keys {
			if k := &s.Keys[i]; k.ID == "key-a" {
				k.Group, k.Owners = "platform", map[string]string{"team": "search"}
			}
		}
	})
	for range 2 {
		if r := h.chat(h.keyA, chatBody("chat-alpha", false, "")); r.status != http.StatusOK {
			t.Fatalf("chat: %d %s", r.status, r.body)
		}
	}
	r := h.chat(h.keyA, chatBody("no-such-model", false, "")) // refused after authentication: still attributed
	rec := h.record(r.header.Get("X-Request-Id"))
	want := map[string]string{"team": "search", "cost-center": "cc-7"}
	if rec.Group != "platform" || len(rec.Owners) != 2 || rec.Owners["team"] != "search" || rec.Owners["cost-center"] != "cc-7" {
		t.Fatalf("record group %q owners %v, want platform %v", rec.Group, rec.Owners, want)
	}
	var page struct {
		Data []struct {
			Group  string            `json:"group"`
			Owners map[string]string `json:"owners"`
		} `json:"data"`
	}
	if r := h.do(http.MethodGet, "/v1/usage", h.keyA, ""); r.status != http.StatusOK || json.Unmarshal(r.body, &page) != nil || len(page.Data) != 3 {
		t.Fatalf("GET /v1/usage: %d %s", r.status, r.body)
	}
	for _, item := range page.Data {
		if item.Group != "platform" || item.Owners["team"] != "search" || item.Owners["cost-center"] != "cc-7" {
			t.Fatalf("listed record group %q owners %v", item.Group, item.Owners)
		}
	}
	// The key of another owner sees nothing of key-a's labels.
	if r := h.do(http.MethodGet, "/v1/usage/summary?group_by=owner.team", h.keyB, ""); r.status != http.StatusOK {
		t.Fatalf("key-b summary: %d %s", r.status, r.body)
	}
	var sum struct {
		GroupBy  string `json:"group_by"`
		Requests int64  `json:"requests"`
		Groups   []struct {
			Owner    *string `json:"owner"`
			Requests int64   `json:"requests"`
		} `json:"groups"`
	}
	r = h.do(http.MethodGet, "/v1/usage/summary?group_by=owner.cost-center", h.keyA, "")
	if r.status != http.StatusOK || json.Unmarshal(r.body, &sum) != nil {
		t.Fatalf("summary: %d %s", r.status, r.body)
	}
	if sum.GroupBy != "owner.cost-center" || sum.Requests != 3 || len(sum.Groups) != 1 || sum.Groups[0].Owner == nil ||
		*sum.Groups[0].Owner != "cc-7" || sum.Groups[0].Requests != 3 {
		t.Fatalf("summary by owner.cost-center: %s", r.body)
	}
	for _, bad := range []string{"owner.", "owner.bad%20label", "owner.a/b/c", "team"} {
		r := h.do(http.MethodGet, "/v1/usage/summary?group_by="+bad, h.keyA, "")
		wantError(t, r, http.StatusBadRequest, "invalid_request_error", "invalid_value")
	}
}
