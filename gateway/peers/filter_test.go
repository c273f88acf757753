package peers

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/gateway/usage"
)

// filterCluster serves three siblings of gw-0 that record the query they
// were asked and answer with it: gw-1 says it applied what was asked (a
// current replica), gw-2 says nothing about it (a replica older than
// filters), gw-3 says it applied something else.
func filterCluster(t *testing.T) (client *http.Client, asked func() map[string]url.Values) {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]url.Values{}
	asked = func() map[string]url.Values { // and forget them
		mu.Lock()
		defer mu.Unlock()
		out := seen
		seen = map[string]url.Values{}
		return out
	}
	addrs := map[string]string{}
	for _, name := range []string{"gw-1", "gw-2", "gw-3"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			mu.Lock()
			seen[name] = q
			mu.Unlock()
			body := map[string]any{"object": "list", "data": []json.RawMessage{json.RawMessage(`{"request_id":"req_1"}`)}, "has_more": false}
			switch name {
			case "gw-1":
				body["applied"] = Applied{Endpoint: q.Get("endpoint"), Session: q.Get("session"), GroupBy: q.Get("group_by")}
			case "gw-3":
				body["applied"] = Applied{Endpoint: "chat"}
			}
			_ = json.NewEncoder(w).Encode(body)
		}))
		t.Cleanup(srv.Close)
		addrs[name+".peers:9090"] = strings.TrimPrefix(srv.URL, "http://")
	}
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addrs[addr])
	}}}, asked
}

// TestFilteredQueriesCountOnlyRepliesThatApplyThem: the filter and the
// grouping reach every sibling as query parameters; a sibling that does not
// say it applied exactly them is missing, so an older replica's unfiltered
// records or totals never enter a filtered answer. Without a filter every
// sibling's answer stands, as before filters existed.
func TestFilteredQueriesCountOnlyRepliesThatApplyThem(t *testing.T) {
	client, asked := filterCluster(t)
	s, err := New(Config{Self: "gw-0", Service: "peers", Replicas: 4, Port: 9090, Token: "tok", Client: client})
	if err != nil {
		t.Fatal(err)
	}
	replicas := func(pages []Page) []string {
		var out []string
		for _, p := range pages {
			out = append(out, p.Replica)
		}
		slices.Sort(out)
		return out
	}
	summaryReplicas := func(pages []SummaryPage) []string {
		var out []string
		for _, p := range pages {
			out = append(out, p.Replica)
		}
		slices.Sort(out)
		return out
	}
	f := usage.Filter{Endpoint: usage.EndpointMessages, Session: "sess 1/ü?"}
	ctx := context.Background()
	from, to := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		run         func() (answered, missing []string)
		wantQuery   url.Values // parameters every sibling must have been sent
		wantMissing []string
	}{
		{"filtered listing", func() ([]string, []string) {
			p, m := s.Usage(ctx, "key-a", f, 10, "")
			return replicas(p), m
		}, url.Values{"endpoint": {f.Endpoint}, "session": {f.Session}}, []string{"gw-2", "gw-3"}},
		{"grouped summary", func() ([]string, []string) {
			p, m := s.Summary(ctx, "key-a", usage.Filter{}, usage.GroupBySession, from, to)
			return summaryReplicas(p), m
		}, url.Values{"group_by": {usage.GroupBySession}, "view": {SummaryView}}, []string{"gw-2", "gw-3"}},
		{"filtered summary", func() ([]string, []string) {
			p, m := s.Summary(ctx, "key-a", usage.Filter{Endpoint: usage.EndpointChat}, "", from, to)
			return summaryReplicas(p), m
		}, url.Values{"endpoint": {usage.EndpointChat}}, []string{"gw-2"}}, // gw-3's answer is for chat, as asked
		{"unfiltered listing", func() ([]string, []string) {
			p, m := s.Usage(ctx, "key-a", usage.Filter{}, 10, "")
			return replicas(p), m
		}, url.Values{}, []string{"gw-3"}}, // gw-3 applied a filter nobody asked for
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked()
			answered, missing := tc.run()
			sent := asked()
			slices.Sort(missing)
			if !slices.Equal(missing, tc.wantMissing) {
				t.Fatalf("missing %v, want %v (answered %v)", missing, tc.wantMissing, answered)
			}
			if len(answered)+len(missing) != 3 {
				t.Fatalf("answered %v and missing %v: want every sibling in one of them", answered, missing)
			}
			for _, name := range []string{"gw-1", "gw-2", "gw-3"} {
				q := sent[name]
				for k, v := range tc.wantQuery {
					if !slices.Equal(q[k], v) {
						t.Errorf("%s was asked %s=%q, want %q", name, k, q[k], v)
					}
				}
				for _, k := range []string{"endpoint", "session", "group_by"} {
					if _, want := tc.wantQuery[k]; !want && q.Has(k) {
						t.Errorf("%s was asked %s=%q, want no such parameter", name, k, q.Get(k))
					}
				}
			}
		})
	}
}
