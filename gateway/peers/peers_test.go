package peers

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/gateway/usage"
)

// fakeCluster serves named replicas on loopback and resolves
// <name>.<service>:<port> to them, as the headless Service would.
func fakeCluster(t *testing.T, token string, up map[string][]string) *http.Client {
	t.Helper()
	addrs := map[string]string{}
	for name, ids := range up {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != Path || !Authorized(r, token) || r.URL.Query().Get("key_id") != "key-a" {
				http.Error(w, "no", http.StatusUnauthorized)
				return
			}
			var data []json.RawMessage
			for _, id := range ids {
				data = append(data, json.RawMessage(`{"request_id":"`+id+`"}`))
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "has_more": false})
		}))
		t.Cleanup(srv.Close)
		addrs[name+".peers:9090"] = strings.TrimPrefix(srv.URL, "http://")
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if a, ok := addrs[addr]; ok {
			addr = a
		} else {
			addr = "127.0.0.1:1" // nothing listens: a replica that is down
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	return &http.Client{Transport: tr}
}

func TestUsageReportsMissingReplicas(t *testing.T) {
	client := fakeCluster(t, "tok", map[string][]string{"gw-0": {"req_2", "req_1"}, "gw-3": {"req_9"}})
	s, err := New(Config{Self: "gw-1", Service: "peers", Replicas: 4, Port: 9090, Token: "tok", Client: client})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.cfg.Roster().Others(s.cfg.Self); !slices.Equal(got, []string{"gw-0", "gw-2", "gw-3"}) {
		t.Fatalf("others: %v", got)
	}
	pages, missing := s.Usage(context.Background(), "key-a", usage.Filter{}, 10, "")
	if !slices.Equal(missing, []string{"gw-2"}) {
		t.Fatalf("missing: %v, want [gw-2]", missing)
	}
	got := map[string]int{}
	for _, p := range pages {
		got[p.Replica] = len(p.Data)
	}
	if len(got) != 2 || got["gw-0"] != 2 || got["gw-3"] != 1 {
		t.Fatalf("pages: %v", got)
	}
	// A wrong token is refused by every peer: all of them are missing.
	bad, _ := New(Config{Self: "gw-1", Service: "peers", Replicas: 4, Port: 9090, Token: "wrong", Client: client})
	if _, missing := bad.Usage(context.Background(), "key-a", usage.Filter{}, 10, ""); len(missing) != 3 {
		t.Fatalf("wrong token: missing %v, want all three", missing)
	}
}

func TestNewRejects(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no ordinal":  {Self: "gateway", Service: "p", Replicas: 2, Port: 1, Token: "t"},
		"bad ordinal": {Self: "gw-x", Service: "p", Replicas: 2, Port: 1, Token: "t"},
		"no service":  {Self: "gw-0", Replicas: 2, Port: 1, Token: "t"},
		"no replicas": {Self: "gw-0", Service: "p", Port: 1, Token: "t"},
		"bad port":    {Self: "gw-0", Service: "p", Replicas: 2, Port: 70000, Token: "t"},
		"no token":    {Self: "gw-0", Service: "p", Replicas: 2, Port: 1},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestAuthorized(t *testing.T) {
	for _, tc := range []struct {
		header, token string
		want          bool
	}{
		{"Bearer tok", "tok", true},
		{"Bearer tok2", "tok", false},
		{"tok", "tok", false},
		{"", "", false},
		{"Bearer ", "", false},
	} {
		r := httptest.NewRequest(http.MethodGet, Path, nil)
		r.Header.Set("Authorization", tc.header)
		if got := Authorized(r, tc.token); got != tc.want {
			t.Errorf("Authorized(%q, %q) = %v", tc.header, tc.token, got)
		}
	}
}

// Before the replica set is known (the StatefulSet not read yet), no
// sibling is asked and the answer names them all as missing: never a
// shorter list that looks whole.
func TestUnknownReplicaSetIsMissing(t *testing.T) {
	client := fakeCluster(t, "tok", map[string][]string{"gw-0": {"req_1"}})
	s, err := New(Config{Self: "gw-1", Service: "peers", Port: 9090, Token: "tok", Client: client,
		Roster: func() Membership { return Membership{} }})
	if err != nil {
		t.Fatal(err)
	}
	pages, missing := s.Usage(context.Background(), "key-a", usage.Filter{}, 10, "")
	if len(pages) != 0 || !slices.Equal(missing, []string{"gw-*"}) {
		t.Fatalf("usage: pages %v missing %v, want none and [gw-*]", pages, missing)
	}
	sp, missing := s.Summary(context.Background(), "key-a", usage.Filter{}, "", time.Now().Add(-time.Hour), time.Now())
	if len(sp) != 0 || !slices.Equal(missing, []string{"gw-*"}) {
		t.Fatalf("summary: pages %v missing %v, want none and [gw-*]", sp, missing)
	}
}
