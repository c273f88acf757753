package server_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/llmgw/llmgw/gateway/peers"
	"github.com/llmgw/llmgw/gateway/server"
	"github.com/llmgw/llmgw/gateway/usage"
)

// TestScaleDownHandsRecordsOff follows a key's records through a scale
// from 2 replicas to 1 and back, with the membership a discovery would
// report: while the scaled-away replica's ledger is stranded every answer
// says partial and names its volume; once its records are handed off to
// gw-0 every answer is whole again, each record listed and counted once.
func TestScaleDownHandsRecordsOff(t *testing.T) {
	const token = "peer-token"
	plain, snap := readableSnapshot(t)
	var roster atomic.Pointer[peers.Membership]
	setRoster := func(replicas int, stranded ...string) {
		m := peers.StaticMembership("gw-0", replicas)
		m.Stranded = stranded
		roster.Store(&m)
	}
	setRoster(2)
	addrs := map[string]string{}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if a, ok := addrs[addr]; ok {
			addr = a
		} else {
			addr = "127.0.0.1:1"
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}}
	var ledgers [2]*usage.Ledger
	var apis, mgmts [2]string
	for i := range 2 {
		name := fmt.Sprintf("gw-%d", i)
		l, err := usage.Open(t.Context(), t.TempDir()+"/u.db", usage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		ledgers[i] = l
		set, err := peers.New(peers.Config{Self: name, Service: "peers", Port: 9090, Token: token, Client: client,
			Roster: func() peers.Membership { return *roster.Load() }})
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
		mgmt.Handle("POST "+peers.RecordsPath, peers.ImportHandler(l, token, nil))
		ms := httptest.NewServer(mgmt)
		t.Cleanup(ms.Close)
		addrs[name+".peers:9090"] = strings.TrimPrefix(ms.URL, "http://")
		mgmts[i] = ms.URL
		api := httptest.NewServer(srv.Handler())
		t.Cleanup(api.Close)
		apis[i] = api.URL
	}
	// 30 records, alternating between the replicas, each costing 1 µUSD.
	var all []string
	created := time.Now().Add(-time.Minute)
	for i := range 30 {
		id := usage.NewRequestID()
		all = append(all, id)
		r := usage.Record{RequestID: id, KeyID: "key-a", Endpoint: "chat", Status: usage.StatusSuccess,
			Cost: 1_000_000, Currency: "USD", CreatedAt: created}
		if err := ledgers[i%2].Finish(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(all)
	// answer is one replica's view: the ids listed, the summary, and what
	// both say is missing.
	type answer struct {
		ids      []string
		requests int64
		cost     string
		partial  bool
		stranded []string
	}
	read := func(api string) answer {
		t.Helper()
		var a answer
		ids, _ := listUsageAllowPartial(t, api, plain, &a.partial, &a.stranded)
		a.ids = slices.Sorted(slices.Values(ids))
		status, body := getJSON(t, api, "/v1/usage/summary?from="+created.Add(-time.Hour).UTC().Format(time.RFC3339), plain)
		var s struct {
			usageTotals
			Partial         bool     `json:"partial"`
			StrandedLedgers []string `json:"stranded_ledgers"`
		}
		if err := json.Unmarshal(body, &s); err != nil || status != http.StatusOK {
			t.Fatalf("summary through %s: %d %s", api, status, body)
		}
		a.requests, a.partial = s.Requests, a.partial || s.Partial
		if s.Cost != nil {
			a.cost = *s.Cost
		}
		if !slices.Equal(s.StrandedLedgers, a.stranded) {
			t.Fatalf("summary names stranded %v, the list %v", s.StrandedLedgers, a.stranded)
		}
		return a
	}
	whole := func(step string, apis ...string) {
		t.Helper()
		for _, api := range apis {
			a := read(api)
			if a.partial || !slices.Equal(a.ids, all) || a.requests != 30 || a.cost != "0.00003" {
				t.Fatalf("%s, through %s: partial %v stranded %v, %d of 30 ids, %d requests costing %s (want whole: 30, 0.00003)",
					step, api, a.partial, a.stranded, len(a.ids), a.requests, a.cost)
			}
		}
	}
	whole("2 replicas", apis[0], apis[1])

	t.Log("scaled to 1: gw-1's ledger is stranded until handed off; gw-0 says so")
	setRoster(1, "data-gw-1")
	a := read(apis[0])
	if !a.partial || !slices.Equal(a.stranded, []string{"data-gw-1"}) || len(a.ids) != 15 || a.requests != 15 {
		t.Fatalf("stranded: partial %v stranded %v, %d ids, %d requests; want partial naming data-gw-1 over gw-0's 15",
			a.partial, a.stranded, len(a.ids), a.requests)
	}

	t.Log("gw-1 hands its records to gw-0")
	st, err := peers.HandOff(t.Context(), ledgers[1], peers.HandoffConfig{To: mgmts[0], Token: token, Batch: 4})
	if err != nil || st.Sent != 15 || st.Added != 15 {
		t.Fatalf("hand-off: %+v, %v; want 15 sent and added", st, err)
	}
	if n, _, err := ledgers[1].Count(t.Context()); err != nil || n != 0 {
		t.Fatalf("gw-1 keeps %d records after the hand-off (%v)", n, err)
	}
	setRoster(1) // the claim is marked handed off
	whole("1 replica after the hand-off", apis[0])

	t.Log("scaled back to 2: gw-1 starts empty; both answer every record once")
	setRoster(2)
	whole("2 replicas again", apis[0], apis[1])

	t.Log("a replayed hand-off of the same records adds nothing")
	var again []usage.Record
	for _, id := range all[:3] {
		r, err := ledgers[0].Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		again = append(again, r)
	}
	if _, err := ledgers[1].Import(t.Context(), again); err != nil {
		t.Fatal(err)
	}
	st, err = peers.HandOff(t.Context(), ledgers[1], peers.HandoffConfig{To: mgmts[0], Token: token})
	if err != nil || st.Sent != 3 || st.Added != 0 {
		t.Fatalf("replayed hand-off: %+v, %v; want 3 sent, 0 added", st, err)
	}
	whole("after the replay", apis[0], apis[1])
}

// listUsageAllowPartial is listUsage that records, instead of failing on,
// a partial page and the stranded ledgers it names.
func listUsageAllowPartial(t *testing.T, base, key string, partial *bool, stranded *[]string) ([]string, int) {
	t.Helper()
	var ids []string
	cursor, pages := "", 0
	for ; pages < 100; pages++ {
		path := "/v1/usage?limit=7"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		status, body := getJSON(t, base, path, key)
		var p struct {
			Data []struct {
				RequestID string `json:"request_id"`
			} `json:"data"`
			HasMore         bool     `json:"has_more"`
			NextCursor      string   `json:"next_cursor"`
			Partial         bool     `json:"partial"`
			StrandedLedgers []string `json:"stranded_ledgers"`
		}
		if err := json.Unmarshal(body, &p); err != nil || status != http.StatusOK {
			t.Fatalf("GET %s: %d %s (%v)", path, status, body, err)
		}
		for _, d := range p.Data {
			ids = append(ids, d.RequestID)
		}
		*partial = *partial || p.Partial
		if len(p.StrandedLedgers) > 0 {
			*stranded = p.StrandedLedgers
		}
		if !p.HasMore {
			break
		}
		cursor = p.NextCursor
	}
	return ids, pages
}
