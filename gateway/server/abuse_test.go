package server_test

import (
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/server"
	"github.com/llmgw/llmgw/gateway/usage"
)

// fromAddr sends one request from the given loopback source address, with
// optional X-Forwarded-For, and any number of Authorization values.
func (h *harness) fromAddr(src, method, path, xff, body string, auth ...string) response {
	h.t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	req, err := http.NewRequest(method, h.gw.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	for _, a := range auth {
		req.Header.Add("Authorization", a)
	}
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	h.assertNoSecrets(string(b))
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// wantError checks an error response's status, shape and code.
func wantError(t *testing.T, r response, status int, typ, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	e := r.errorBody(t)
	if e.Error.Type != typ || e.Error.Code != code {
		t.Fatalf("error %s/%s, want %s/%s", e.Error.Type, e.Error.Code, typ, code)
	}
	if status == http.StatusTooManyRequests && r.header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
}

const (
	wrongKey = "Bearer lgw_zzzzzzzzzz_not-a-real-key-but-shaped-enough-0000"
	burst    = 5
)

// An unauthenticated flood from one address is refused after the burst,
// before authentication, with one rejected record per chat request and no
// provider call; other addresses are unaffected, and X-Forwarded-For from an
// untrusted peer does not escape the bucket.
func TestUnauthenticatedFloodIsLimitedPerClientIP(t *testing.T) {
	h := newHarness(t)
	// 1 rpm: no token comes back while the test runs, however slow the machine.
	h.srv.SetAbuseLimitsForTest(server.Options{ClientIPRPM: 1, ClientIPBurst: burst})
	body := chatBody("chat-alpha", false, "")
	const flood = 30
	limited := 0
	for i := 0; i < flood; i++ {
		r := h.fromAddr("127.0.0.1", http.MethodPost, "/v1/chat/completions", "", body, wrongKey)
		if i < burst {
			wantError(t, r, http.StatusUnauthorized, "authentication_error", "invalid_api_key")
		} else {
			wantError(t, r, http.StatusTooManyRequests, "rate_limit_error", "client_ip_rate_limited")
			limited++
		}
		rec := h.record(r.header.Get("X-Request-Id"))
		if rec.Status != usage.StatusRejected || rec.HTTPStatus != r.status || rec.KeyID != "" {
			t.Fatalf("request %d: record %s/%d key %q, want rejected/%d without key", i, rec.Status, rec.HTTPStatus, rec.KeyID, r.status)
		}
	}
	if limited != flood-burst {
		t.Fatalf("%d of %d limited, want %d", limited, flood, flood-burst)
	}
	// A spoofed X-Forwarded-For from an untrusted peer changes nothing; the
	// read endpoints share the address bucket, even with a valid key.
	wantError(t, h.fromAddr("127.0.0.1", http.MethodPost, "/v1/chat/completions", "198.51.100.1", body, "Bearer "+h.keyA),
		http.StatusTooManyRequests, "rate_limit_error", "client_ip_rate_limited")
	wantError(t, h.fromAddr("127.0.0.1", http.MethodGet, "/v1/models", "", "", "Bearer "+h.keyA),
		http.StatusTooManyRequests, "rate_limit_error", "client_ip_rate_limited")
	wantError(t, h.fromAddr("127.0.0.1", http.MethodGet, "/v1/usage", "", "", "Bearer "+h.keyA),
		http.StatusTooManyRequests, "rate_limit_error", "client_ip_rate_limited")
	// Health endpoints are not limited.
	if r := h.fromAddr("127.0.0.1", http.MethodGet, "/healthz", "", ""); r.status != http.StatusOK {
		t.Fatalf("/healthz under the limit: %d", r.status)
	}
	if c := mockCalls(t, h.alpha).Total + mockCalls(t, h.beta).Total; c != 0 {
		t.Fatalf("providers called %d times by unauthenticated or limited requests", c)
	}
	// Another client address is unaffected.
	if r := h.fromAddr("127.0.0.2", http.MethodPost, "/v1/chat/completions", "", body, "Bearer "+h.keyA); r.status != http.StatusOK {
		t.Fatalf("chat from another address: %d %s", r.status, r.body)
	}
	if r := h.fromAddr("127.0.0.2", http.MethodGet, "/v1/models", "", "", "Bearer "+h.keyB); r.status != http.StatusOK {
		t.Fatalf("models from another address: %d %s", r.status, r.body)
	}
}

// Behind a trusted proxy, the X-Forwarded-For client is the one counted.
func TestClientIPLimitBehindTrustedProxy(t *testing.T) {
	h := newHarness(t)
	h.srv.SetAbuseLimitsForTest(server.Options{ClientIPRPM: 1, ClientIPBurst: burst,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	body := chatBody("chat-alpha", false, "")
	for i := 0; i < burst; i++ {
		wantError(t, h.fromAddr("127.0.0.1", http.MethodPost, "/v1/chat/completions", "203.0.113.7", body, wrongKey),
			http.StatusUnauthorized, "authentication_error", "invalid_api_key")
	}
	// The same client through another proxy hop is still the same client;
	// a forged left-most entry does not help.
	wantError(t, h.fromAddr("127.0.0.2", http.MethodPost, "/v1/chat/completions", "10.0.0.1, 203.0.113.7", body, wrongKey),
		http.StatusTooManyRequests, "rate_limit_error", "client_ip_rate_limited")
	if r := h.fromAddr("127.0.0.1", http.MethodPost, "/v1/chat/completions", "203.0.113.8", body, "Bearer "+h.keyA); r.status != http.StatusOK {
		t.Fatalf("another client behind the proxy: %d %s", r.status, r.body)
	}
}

// GET /v1/usage and GET /v1/models share a per-key bucket of their own,
// independent of the key's chat bucket and of other keys.
func TestReadEndpointsHaveTheirOwnKeyBucket(t *testing.T) {
	// Both keys' own limits are below the read floor, which then sizes
	// their read buckets.
	h := newHarness(t, func(s *snapshot.Snapshot) {
		for i := range s.Keys {
			s.Keys[i].RateLimit = snapshot.RateLimit{RPM: 1, Burst: 2}
		}
	})
	const readBurst = 3
	h.srv.SetAbuseLimitsForTest(server.Options{ReadRPM: 1, ReadBurst: readBurst})
	body := chatBody("chat-alpha", false, "")
	// Key B's chat bucket runs dry; its read bucket is untouched.
	for i := 0; i < 2; i++ {
		if r := h.chat(h.keyB, body); r.status != http.StatusOK {
			t.Fatalf("chat %d: %d %s", i, r.status, r.body)
		}
	}
	wantError(t, h.chat(h.keyB, body), http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded")
	paths := []string{"/v1/usage?limit=500", "/v1/models", "/v1/usage"}
	for i := 0; i < readBurst; i++ {
		if r := h.do(http.MethodGet, paths[i], h.keyB, ""); r.status != http.StatusOK {
			t.Fatalf("GET %s within the read burst: %d %s", paths[i], r.status, r.body)
		}
	}
	for _, p := range []string{"/v1/usage", "/v1/models"} {
		wantError(t, h.do(http.MethodGet, p, h.keyB, ""), http.StatusTooManyRequests, "rate_limit_error", "read_rate_limit_exceeded")
	}
	// Key A: its read bucket is its own, and an exhausted read bucket does
	// not touch chat.
	for i := 0; i < readBurst; i++ {
		if r := h.do(http.MethodGet, "/v1/models", h.keyA, ""); r.status != http.StatusOK {
			t.Fatalf("key A models %d: %d %s", i, r.status, r.body)
		}
	}
	wantError(t, h.do(http.MethodGet, "/v1/usage", h.keyA, ""), http.StatusTooManyRequests, "rate_limit_error", "read_rate_limit_exceeded")
	if r := h.chat(h.keyA, body); r.status != http.StatusOK {
		t.Fatalf("key A chat after its read bucket ran dry: %d %s", r.status, r.body)
	}
}

// Two Authorization headers are refused, whichever comes first, on every
// authenticated endpoint; the chat request still gets its one record.
func TestTwoAuthorizationHeadersAre401(t *testing.T) {
	h := newHarness(t)
	body := chatBody("chat-alpha", false, "")
	for _, auth := range [][]string{
		{"Bearer " + h.keyA, "Bearer " + h.keyB},
		{"Bearer " + h.keyA, wrongKey},
		{wrongKey, "Bearer " + h.keyA},
		{"Bearer " + h.keyA, "Bearer " + h.keyA},
	} {
		r := h.fromAddr("127.0.0.1", http.MethodPost, "/v1/chat/completions", "", body, auth...)
		wantError(t, r, http.StatusUnauthorized, "authentication_error", "multiple_authorization_headers")
		if rec := h.record(r.header.Get("X-Request-Id")); rec.Status != usage.StatusRejected || rec.KeyID != "" {
			t.Fatalf("record %s key %q, want rejected without key", rec.Status, rec.KeyID)
		}
		for _, p := range []string{"/v1/models", "/v1/usage"} {
			wantError(t, h.fromAddr("127.0.0.1", http.MethodGet, p, "", "", auth...),
				http.StatusUnauthorized, "authentication_error", "multiple_authorization_headers")
		}
	}
	if c := mockCalls(t, h.alpha).Total; c != 0 {
		t.Fatalf("provider called %d times", c)
	}
}

// A key whose own rate limit is above the read floor reads at its own rate:
// the floor never makes a generous key's reads scarcer than its chats.
func TestReadBucketFollowsALargerKeyLimit(t *testing.T) {
	h := newHarness(t) // keys at 6000 rpm, burst 1000
	h.srv.SetAbuseLimitsForTest(server.Options{ReadRPM: 1, ReadBurst: 3})
	for i := 0; i < 10; i++ {
		if r := h.do(http.MethodGet, "/v1/models", h.keyA, ""); r.status != http.StatusOK {
			t.Fatalf("models %d with a 1000-burst key over a 3-burst floor: %d %s", i, r.status, r.body)
		}
	}
}
