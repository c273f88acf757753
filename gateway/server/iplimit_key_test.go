package server_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/server"
	"github.com/llmgw/llmgw/gateway/usage"
)

// A valid key is governed by its own limits: 50 requests a second from one
// address, far above that address's limit (1 rpm, burst 5) and within the
// key's, are never refused by address.
func TestValidKeyIsNotLimitedByAddress(t *testing.T) {
	h := newHarness(t)
	h.srv.SetAbuseLimitsForTest(server.Options{ClientIPRPM: 1, ClientIPBurst: burst})
	body := chatBody("chat-alpha", false, "")
	tick := time.NewTicker(20 * time.Millisecond) // 50 a second
	defer tick.Stop()
	for i := range 100 {
		<-tick.C
		if r := h.fromAddr("127.0.0.1", http.MethodPost, "/v1/chat/completions", "", body, "Bearer "+h.keyA); r.status != http.StatusOK {
			t.Fatalf("request %d with a valid key: %d %s", i, r.status, r.body)
		}
	}
	if r := h.fromAddr("127.0.0.1", http.MethodGet, "/v1/models", "", "", "Bearer "+h.keyA); r.status != http.StatusOK {
		t.Fatalf("models with a valid key after the load: %d %s", r.status, r.body)
	}
}

// Of 10,000 requests from one address whose key fails authentication, the
// burst is answered 401 (the key was looked up: a disabled key's record
// names it) and every other one is refused by address before any key
// lookup (its record names no key), each with its one record.
func TestFailedAuthenticationIsLimitedByAddress(t *testing.T) {
	const flood, ipBurst = 10_000, 100
	h := newHarness(t, func(s *snapshot.Snapshot) {
		for i := range s.Keys {
			if s.Keys[i].ID == "key-b" {
				s.Keys[i].Disabled = true
			}
		}
	})
	h.srv.SetAbuseLimitsForTest(server.Options{ClientIPRPM: 1, ClientIPBurst: ipBurst})
	total0, _, err := h.ledger.Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1,
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}}).DialContext}}
	body := chatBody("chat-alpha", false, "")
	byCode := map[string]int{}
	for i := range flood {
		req, _ := http.NewRequest(http.MethodPost, h.gw.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+h.keyB)
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		r := response{status: resp.StatusCode, header: resp.Header, body: b}
		code := r.errorBody(t).Error.Code
		byCode[code]++
		if i < ipBurst && code != "key_disabled" || i >= ipBurst && code != "client_ip_rate_limited" {
			t.Fatalf("request %d: %d %s", i, r.status, b)
		}
		if i == ipBurst-1 || i == ipBurst || i == flood-1 {
			rec := h.record(r.header.Get("X-Request-Id"))
			if wantKey := map[bool]string{true: "key-b", false: ""}[i < ipBurst]; rec.Status != usage.StatusRejected || rec.KeyID != wantKey {
				t.Fatalf("request %d: record %s key %q, want rejected with key %q", i, rec.Status, rec.KeyID, wantKey)
			}
		}
	}
	total, byStatus, err := h.ledger.Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if total-total0 != flood || byStatus[usage.StatusRejected] < flood {
		t.Fatalf("%d records (%v) for %d requests", total-total0, byStatus, flood)
	}
	if byCode["key_disabled"] != ipBurst || byCode["client_ip_rate_limited"] != flood-ipBurst {
		t.Fatalf("answers %v", byCode)
	}
}
