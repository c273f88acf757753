package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
)

// /health's "degraded" describes the newest snapshot seen. Once a good one
// runs again, even the very version that was already running (a bad
// ConfigMap edit reverted), it clears.
func TestHealthDegradedClearsWhenTheRunningVersionIsSeenAgain(t *testing.T) {
	h := newHarness(t)
	good := h.snap.Clone()
	status := func() (string, string) {
		var body struct {
			Status   string `json:"status"`
			Snapshot struct {
				LastReloadError string `json:"last_reload_error"`
			} `json:"snapshot"`
		}
		r := h.do(http.MethodGet, "/health", "", "")
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatalf("/health: %v: %s", err, r.body)
		}
		return body.Status, body.Snapshot.LastReloadError
	}
	if s, e := status(); s != "ok" || e != "" {
		t.Fatalf("before: status %q, reload error %q", s, e)
	}
	bad := good.Clone()
	bad.Aliases[0].Primary.Provider = "nonexistent"
	if err := h.srv.Apply(context.Background(), bad); err == nil {
		t.Fatal("invalid snapshot applied")
	}
	if s, e := status(); s != "degraded" || e == "" {
		t.Fatalf("after a rejected snapshot: status %q, reload error %q; want degraded with a reason", s, e)
	}
	if err := h.srv.Apply(context.Background(), good); err != nil {
		t.Fatalf("re-applying the running snapshot: %v", err)
	}
	if s, e := status(); s != "ok" || e != "" {
		t.Fatalf("after the running snapshot was seen again: status %q, reload error %q; want ok", s, e)
	}
}
