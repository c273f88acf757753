package server_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/gateway/peers"
	"github.com/llmgw/llmgw/gateway/server"
	"github.com/llmgw/llmgw/gateway/usage"
)

// TestUsageSummaryAcrossReplicas: two replicas, each holding some of a
// key's records, answer the same totals whichever is asked, and a third
// replica that is down makes the answer partial, never silently smaller.
func TestUsageSummaryAcrossReplicas(t *testing.T) {
	plain, snap := oneKeySnapshot(t)
	const token = "peer-token"
	addrs := map[string]string{} // gw-N.peers:9090 → the replica's management listener
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if a, ok := addrs[addr]; ok {
			addr = a
		} else {
			addr = "127.0.0.1:1" // gw-2 is down
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}}
	created := time.Now().Add(-time.Minute)
	type replica struct {
		srv *server.Server
		api *httptest.Server
	}
	var reps []replica
	for i, costs := range [][]money.Picos{{1_000_000, 2}, {30_000_000_000}} {
		name := "gw-" + string(rune('0'+i))
		l, err := usage.Open(t.Context(), t.TempDir()+"/u.db", usage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		for j, c := range costs {
			rec := usage.Record{RequestID: usage.NewRequestID(), KeyID: "key-a", Status: usage.StatusSuccess,
				Provider: "alpha", ProviderModel: "m", InputTokens: 10 + j, CachedInputTokens: 1, OutputTokens: 5,
				ReasoningTokens: 2, Cost: c, Currency: "USD", CreatedAt: created}
			if err := l.Finish(t.Context(), rec); err != nil {
				t.Fatal(err)
			}
		}
		set, err := peers.New(peers.Config{Self: name, Service: "peers", Replicas: 3, Port: 9090, Token: token, Client: client})
		if err != nil {
			t.Fatal(err)
		}
		srv, err := server.New(server.Options{Ledger: l, Peers: set})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Apply(t.Context(), snap); err != nil {
			t.Fatal(err)
		}
		mgmt := http.NewServeMux()
		mgmt.Handle("GET "+peers.Path, srv.PeerUsageHandler(token))
		ms := httptest.NewServer(mgmt)
		t.Cleanup(ms.Close)
		addrs[name+".peers:9090"] = strings.TrimPrefix(ms.URL, "http://")
		api := httptest.NewServer(srv.Handler())
		t.Cleanup(api.Close)
		reps = append(reps, replica{srv, api})
	}
	for _, rep := range reps {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, rep.api.URL+"/v1/usage/summary", nil)
		req.Header.Set("Authorization", "Bearer "+plain)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Requests          int      `json:"requests"`
			InputTokens       int      `json:"input_tokens"`
			CachedInputTokens int      `json:"cached_input_tokens"`
			OutputTokens      int      `json:"output_tokens"`
			ReasoningTokens   int      `json:"reasoning_tokens"`
			Cost              string   `json:"cost"`
			Currency          string   `json:"currency"`
			Partial           bool     `json:"partial"`
			MissingReplicas   []string `json:"missing_replicas"`
		}
		err = json.NewDecoder(resp.Body).Decode(&s)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, %v", resp.StatusCode, err)
		}
		if s.Requests != 3 || s.InputTokens != 31 || s.CachedInputTokens != 3 || s.OutputTokens != 15 ||
			s.ReasoningTokens != 6 || s.Cost != "0.030001000002" || s.Currency != "USD" ||
			!s.Partial || len(s.MissingReplicas) != 1 || s.MissingReplicas[0] != "gw-2" {
			t.Fatalf("summary %+v", s)
		}
	}
	// The peer endpoint refuses a caller without the token.
	resp, err := http.Get("http://" + addrs["gw-0.peers:9090"] + peers.Path + "?view=summary&key_id=key-a")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("peer summary without token: %d", resp.StatusCode)
	}
}
