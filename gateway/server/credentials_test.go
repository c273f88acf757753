package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/usage"
)

// One provider whose credential cannot be read does not block the snapshot:
// its routes are passed over (no call), an alias left with it alone answers
// 503 provider_unavailable, /health says degraded, and once the credential
// can be read the gateway picks it up by itself, with no snapshot change.
func TestUnreadableCredentialMakesOnlyItsProviderUnavailable(t *testing.T) {
	zero := 0
	h := newHarness(t, func(s *snapshot.Snapshot) {
		for i := range s.Providers {
			if s.Providers[i].Name == "beta" {
				s.Providers[i].Credential = &snapshot.Credential{File: "late-beta.key"}
			}
		}
		s.Aliases = append(s.Aliases, snapshot.Alias{Name: "beta-only",
			Primary: snapshot.Route{Provider: "beta", Model: "beta-small"}, MaxFallbacks: &zero})
		s.Keys[0].Models = append(s.Keys[0].Models, "beta-only")
	})
	dir := filepath.Dir(h.dbPath)
	if _, err := os.Stat(filepath.Join(dir, "late-beta.key")); !os.IsNotExist(err) {
		t.Fatalf("the credential file must not exist yet: %v", err)
	}

	if r := h.chat(h.keyA, chatBody("chat-alpha", false, "")); r.status != http.StatusOK {
		t.Fatalf("chat-alpha with beta's credential unreadable: %d %s", r.status, r.body)
	}
	r := h.chat(h.keyA, chatBody("chat-beta", false, ""))
	if r.status != http.StatusOK || r.header.Get("X-Llmgw-Provider") != "alpha" {
		t.Fatalf("chat-beta should be served by its fallback alpha: %d provider %q", r.status, r.header.Get("X-Llmgw-Provider"))
	}
	if rec := h.record(r.header.Get("X-Request-Id")); len(rec.Attempts) != 1 || rec.Attempts[0].Provider != "alpha" {
		t.Fatalf("chat-beta's record: attempts %+v, want alpha only (beta passed over, never called)", rec.Attempts)
	}
	for _, stream := range []bool{false, true} {
		r = h.chat(h.keyA, chatBody("beta-only", stream, ""))
		if e := r.errorBody(t); r.status != http.StatusServiceUnavailable || e.Error.Code != "provider_unavailable" {
			t.Fatalf("beta-only (stream %v): %d %s, want 503 provider_unavailable", stream, r.status, r.body)
		}
		h.assertNoSecrets(string(r.body))
		if strings.Contains(string(r.body), "late-beta.key") {
			t.Fatalf("the error names the credential file: %s", r.body)
		}
		rec := h.record(r.header.Get("X-Request-Id"))
		if rec.Status != usage.StatusError || rec.HTTPStatus != http.StatusServiceUnavailable ||
			len(rec.Attempts) != 1 || rec.Attempts[0].Outcome != usage.OutcomeUnavailable {
			t.Fatalf("beta-only's record: %+v", rec)
		}
	}
	if c := mockCalls(t, h.beta); c.Total != 0 {
		t.Fatalf("mock beta was called %d times while its credential was unreadable", c.Total)
	}

	var health struct {
		Status    string `json:"status"`
		Providers []struct {
			Name            string `json:"name"`
			Status          string `json:"status"`
			CredentialError string `json:"credential_error"`
		} `json:"providers"`
	}
	provider := func(name string) (status, credErr string) {
		for _, p := range health.Providers {
			if p.Name == name {
				return p.Status, p.CredentialError
			}
		}
		t.Fatalf("provider %s not in /health", name)
		return "", ""
	}
	data := h.do(http.MethodGet, "/health", "", "")
	if err := json.Unmarshal(data.body, &health); err != nil {
		t.Fatal(err)
	}
	if st, ce := provider("beta"); health.Status != "degraded" || st != "down" || ce != "" {
		t.Fatalf("data port /health: %s; want degraded, beta down, no reason", data.body)
	}
	if st, _ := provider("alpha"); st != "up" {
		t.Fatalf("data port /health: alpha %q", st)
	}
	mgmt := httptest.NewRecorder()
	h.srv.ManagementHealthHandler().ServeHTTP(mgmt, httptest.NewRequest(http.MethodGet, "/health", nil))
	health.Providers = nil
	if err := json.Unmarshal(mgmt.Body.Bytes(), &health); err != nil {
		t.Fatal(err)
	}
	if _, ce := provider("beta"); !strings.Contains(ce, "late-beta.key") {
		t.Fatalf("management /health does not say why beta is down: %s", mgmt.Body.String())
	}

	// The operator writes the file: picked up by the retry, no reload.
	version := h.srv.Version()
	if err := os.WriteFile(filepath.Join(dir, "late-beta.key"), []byte(betaSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool {
		return h.chat(h.keyA, chatBody("beta-only", false, "")).status == http.StatusOK
	})
	if h.srv.Version() != version {
		t.Fatal("the snapshot changed; the credential should have been picked up without one")
	}
	health.Providers = nil
	data = h.do(http.MethodGet, "/health", "", "")
	if err := json.Unmarshal(data.body, &health); err != nil {
		t.Fatal(err)
	}
	if st, _ := provider("beta"); health.Status != "ok" || st != "up" {
		t.Fatalf("/health after the credential was fixed: %s", data.body)
	}
	if !strings.Contains(h.logs.String(), "provider credential readable again") {
		t.Fatal("no log line for the provider's return")
	}
}

// A credential that was read once stays in use when a later re-read fails
// (a Secret briefly unreadable, a file being replaced): a transient error
// never takes a working provider down.
func TestFailedCredentialRereadKeepsTheLastGoodOne(t *testing.T) {
	h := newHarness(t)
	if r := h.chat(h.keyA, chatBody("chat-beta", false, "")); r.status != http.StatusOK || r.header.Get("X-Llmgw-Provider") != "beta" {
		t.Fatalf("chat-beta before: %d via %q", r.status, r.header.Get("X-Llmgw-Provider"))
	}
	if err := os.Remove(filepath.Join(filepath.Dir(h.dbPath), "mock-beta.key")); err != nil {
		t.Fatal(err)
	}
	if err := h.srv.Refresh(t.Context()); err != nil {
		t.Fatalf("refresh with the file gone: %v (the last good credential should be kept)", err)
	}
	if r := h.chat(h.keyA, chatBody("chat-beta", false, "")); r.status != http.StatusOK || r.header.Get("X-Llmgw-Provider") != "beta" {
		t.Fatalf("chat-beta after a failed re-read: %d via %q", r.status, r.header.Get("X-Llmgw-Provider"))
	}
	if !strings.Contains(h.logs.String(), "keeping the last good one") {
		t.Fatal("no warning that the re-read failed")
	}
}
