package server_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/wire/openai"
	"github.com/llmgw/llmgw/gateway/peers"
	"github.com/llmgw/llmgw/gateway/server"
	"github.com/llmgw/llmgw/gateway/usage"
)

// usageRecord is what these tests read of a /v1/usage record.
type usageRecord struct {
	RequestID string `json:"request_id"`
	KeyID     string `json:"key_id"`
	Cost      string `json:"cost"`
}

type usagePage struct {
	Data            []jsontext.Value `json:"data"`
	HasMore         bool             `json:"has_more"`
	NextCursor      string           `json:"next_cursor"`
	Partial         bool             `json:"partial"`
	MissingReplicas []string         `json:"missing_replicas"`
}

type usageTotals struct {
	Requests int64   `json:"requests"`
	Cost     *string `json:"cost"`
	Currency *string `json:"currency"`
}

type usageGroup struct {
	Endpoint *string `json:"endpoint"`
	Session  *string `json:"session"`
	usageTotals
}

type usageSummary struct {
	Endpoint string `json:"endpoint"`
	Session  string `json:"session"`
	GroupBy  string `json:"group_by"`
	usageTotals
	Groups          []usageGroup `json:"groups"`
	Partial         bool         `json:"partial"`
	MissingReplicas []string     `json:"missing_replicas"`
}

// filterFixture is one record the filter tests seed.
type filterFixture struct {
	key, endpoint, session string
	cost                   money.Picos
}

// filterFixtures cycle through the endpoints (and "", a record from before
// the ledger stored them) and three sessions ("" for none), mostly for
// key-a (every seventh is key-b's); they cost 1, 2, 3… micro-units in
// order.
func filterFixtures(n int) []filterFixture {
	endpoints := append([]string{""}, usage.Endpoints...)
	sessions := []string{"", "claude-1", "codex 2"}
	var out []filterFixture
	for i := range n {
		key := "key-a"
		if i%7 == 6 { // not a multiple of 5 or 3: key-a has every endpoint and session
			key = "key-b"
		}
		out = append(out, filterFixture{key: key, endpoint: endpoints[i%len(endpoints)], session: sessions[i%len(sessions)],
			cost: money.Picos(i+1) * 1_000_000})
	}
	return out
}

// seedFixtures finishes fx, oldest first, in l, a minute ago, and returns
// the request ids in fx's order.
func seedFixtures(t *testing.T, l *usage.Ledger, fx []filterFixture) []string {
	t.Helper()
	created := time.Now().Add(-time.Minute)
	ids := make([]string, len(fx))
	for i, f := range fx {
		ids[i] = usage.NewRequestID()
		r := usage.Record{RequestID: ids[i], KeyID: f.key, Endpoint: f.endpoint, Session: f.session, Status: usage.StatusSuccess,
			HTTPStatus: 200, Alias: "chat", Provider: "alpha", ProviderModel: "m", InputTokens: 3, OutputTokens: 4,
			Cost: f.cost, Currency: "USD", CreatedAt: created}
		if err := l.Finish(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// want are the ids of fx of key-a matching endpoint and session ("" for
// any), newest first.
func want(fx []filterFixture, ids []string, endpoint, session string) []string {
	var out []string
	for i := len(fx) - 1; i >= 0; i-- {
		f := fx[i]
		if f.key == "key-a" && (endpoint == "" || f.endpoint == endpoint) && (session == "" || f.session == session) {
			out = append(out, ids[i])
		}
	}
	return out
}

// getJSON GETs base+path with key and returns the status and the body.
func getJSON(t *testing.T, base, path, key string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// listUsage pages through GET /v1/usage with query (no cursor in it), limit
// a page, and returns the ids in order and the pages' raw records.
func listUsage(t *testing.T, base, key, query string, limit int) (ids []string, raw []jsontext.Value) {
	t.Helper()
	cursor := ""
	for range 100 {
		path := fmt.Sprintf("/v1/usage?limit=%d&%s", limit, query)
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		status, body := getJSON(t, base, path, key)
		var p usagePage
		if err := json.Unmarshal(body, &p); err != nil || status != http.StatusOK {
			t.Fatalf("GET %s: %d %s (%v)", path, status, body, err)
		}
		if p.Partial {
			t.Fatalf("GET %s: partial, missing %v", path, p.MissingReplicas)
		}
		for _, d := range p.Data {
			var r usageRecord
			if err := json.Unmarshal(d, &r); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, r.RequestID)
			raw = append(raw, d)
		}
		if !p.HasMore {
			return ids, raw
		}
		cursor = p.NextCursor
	}
	t.Fatalf("%s: paging does not end", query)
	return nil, nil
}

// wantInvalid fails unless status and body are a 400 invalid_request_error
// with code and param.
func wantInvalid(t *testing.T, what string, status int, body []byte, code, param string) {
	t.Helper()
	var e openai.ErrorResponse
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("%s: %d %s: %v", what, status, body, err)
	}
	if status != http.StatusBadRequest || e.Error.Type != "invalid_request_error" || e.Error.CodeString() != code ||
		e.Error.Param == nil || *e.Error.Param != param {
		t.Fatalf("%s: %d %s; want 400 %s naming %s", what, status, body, code, param)
	}
}

// readableSnapshot is oneKeySnapshot with a key rate limit (which the read
// bucket follows) no test here reaches: they page a lot.
func readableSnapshot(t *testing.T) (string, *snapshot.Snapshot) {
	t.Helper()
	plain, snap := oneKeySnapshot(t)
	snap.Keys[0].RateLimit = readableRateLimit
	return plain, snap
}

var readableRateLimit = snapshot.RateLimit{RPM: 600_000, Burst: 100_000}

// filterGateway is a gateway over a fresh ledger (startDirect) with
// readableSnapshot's key rate limit (key-a); it returns the key, the
// ledger and the gateway's URL.
func filterGateway(t *testing.T, opts server.Options) (string, *usage.Ledger, string) {
	t.Helper()
	d := startDirect(t, "http://127.0.0.1:1", opts, func(s *snapshot.Snapshot) {
		s.Keys[0].RateLimit = readableRateLimit
	})
	return d.key, d.ledger, d.url
}

// TestUsageFilterParams: endpoint= and session= narrow GET /v1/usage by
// exact match, alone or together, through every page; an empty one is no
// filter; a cursor is a position valid under any filter; invalid values
// are 400 invalid_value naming the parameter; a record shows its endpoint
// and session, and leaves them out when it has none.
func TestUsageFilterParams(t *testing.T) {
	key, l, base := filterGateway(t, server.Options{})
	fx := filterFixtures(60)
	ids := seedFixtures(t, l, fx)

	for _, c := range []struct {
		query             string
		endpoint, session string
	}{
		{"", "", ""},
		{"endpoint=", "", ""},
		{"endpoint=&session=", "", ""},
		{"endpoint=chat", "chat", ""},
		{"endpoint=messages", "messages", ""},
		{"endpoint=responses", "responses", ""},
		{"endpoint=embeddings", "embeddings", ""},
		{"session=claude-1", "", "claude-1"},
		{"session=codex+2", "", "codex 2"},
		{"session=codex%202&endpoint=messages", "messages", "codex 2"},
		{"endpoint=chat&session=claude-1", "chat", "claude-1"},
		{"session=no-such-session", "", "no-such-session"},
	} {
		for _, limit := range []int{2, 500} {
			got, _ := listUsage(t, base, key, c.query, limit)
			if w := want(fx, ids, c.endpoint, c.session); !slices.Equal(got, w) {
				t.Errorf("%q limit %d:\n got %v\nwant %v", c.query, limit, got, w)
			}
		}
	}

	// Each record carries its endpoint and session, and only when it has
	// them.
	_, raw := listUsage(t, base, key, "", 500)
	for _, d := range raw {
		var m map[string]jsontext.Value
		if err := json.Unmarshal(d, &m); err != nil {
			t.Fatal(err)
		}
		var id string
		_ = json.Unmarshal(m["request_id"], &id)
		f := fx[slices.Index(ids, id)]
		for name, v := range map[string]string{"endpoint": f.endpoint, "session": f.session} {
			got, present := m[name]
			switch {
			case v == "" && present:
				t.Errorf("%s: %s %s present though empty", id, name, got)
			case v != "" && string(got) != `"`+v+`"`:
				t.Errorf("%s: %s = %s, want %q", id, name, got, v)
			}
		}
	}

	// A cursor from the session listing, used with an endpoint filter, lists
	// that endpoint's records older than it: a position, not a filter.
	status, body := getJSON(t, base, "/v1/usage?limit=3&session=claude-1", key)
	var first usagePage
	if err := json.Unmarshal(body, &first); err != nil || status != http.StatusOK || !first.HasMore {
		t.Fatalf("first session page: %d %s", status, body)
	}
	var last usageRecord
	if err := json.Unmarshal(first.Data[len(first.Data)-1], &last); err != nil {
		t.Fatal(err)
	}
	var older []string
	for _, id := range want(fx, ids, "messages", "") {
		if id < last.RequestID {
			older = append(older, id)
		}
	}
	status, body = getJSON(t, base, "/v1/usage?limit=500&endpoint=messages&cursor="+url.QueryEscape(first.NextCursor), key)
	var page usagePage
	if err := json.Unmarshal(body, &page); err != nil || status != http.StatusOK {
		t.Fatalf("endpoint page after a session cursor: %d %s", status, body)
	}
	var got []string
	for _, d := range page.Data {
		var r usageRecord
		_ = json.Unmarshal(d, &r)
		got = append(got, r.RequestID)
	}
	if !slices.Equal(got, older) {
		t.Fatalf("messages after the session cursor:\n got %v\nwant %v", got, older)
	}

	for _, c := range []struct{ query, code, param string }{
		{"endpoint=bogus", "invalid_value", "endpoint"},
		{"endpoint=Chat", "invalid_value", "endpoint"},
		{"endpoint=chat%20", "invalid_value", "endpoint"},
		{"endpoint=chat&endpoint=messages", "invalid_value", "endpoint"},
		{"session=" + strings.Repeat("s", usage.MaxSessionLen+1), "invalid_value", "session"},
		{"session=tab%09", "invalid_value", "session"},
		{"session=%C3%BC", "invalid_value", "session"},
		{"session=a&session=b", "invalid_value", "session"},
		{"endpoint=chat&session=%00", "invalid_value", "session"},
		{"endpoint=bogus&session=ok", "invalid_value", "endpoint"},
		{"limit=0&endpoint=chat", "invalid_value", "limit"},
		{"endpoint=chat&cursor=garbage", "invalid_value", "cursor"},
	} {
		status, body := getJSON(t, base, "/v1/usage?"+c.query, key)
		wantInvalid(t, c.query, status, body, c.code, c.param)
	}
	// The longest session there may be is accepted.
	if status, body := getJSON(t, base, "/v1/usage?session="+strings.Repeat("~", usage.MaxSessionLen), key); status != http.StatusOK {
		t.Fatalf("a %d-character session: %d %s", usage.MaxSessionLen, status, body)
	}
}

// TestUsageSummaryFilterAndGroups: GET /v1/usage/summary totals the records
// of a filter, and with group_by breaks them down per endpoint or per
// session; the groups add up to the totals.
func TestUsageSummaryFilterAndGroups(t *testing.T) {
	key, l, base := filterGateway(t, server.Options{})
	fx := filterFixtures(40)
	seedFixtures(t, l, fx)
	totals := func(endpoint, session, by string) map[string]money.Picos {
		out := map[string]money.Picos{}
		for _, f := range fx {
			if f.key != "key-a" || (endpoint != "" && f.endpoint != endpoint) || (session != "" && f.session != session) {
				continue
			}
			g := ""
			switch by {
			case "endpoint":
				g = f.endpoint
			case "session":
				g = f.session
			}
			out[g] += f.cost
		}
		return out
	}
	for _, c := range []struct{ query, endpoint, session, by string }{
		{"", "", "", ""},
		{"endpoint=messages", "messages", "", ""},
		{"session=claude-1", "", "claude-1", ""},
		{"session=codex+2&endpoint=chat", "chat", "codex 2", ""},
		{"group_by=endpoint", "", "", "endpoint"},
		{"group_by=session", "", "", "session"},
		{"group_by=session&endpoint=responses", "responses", "", "session"},
		{"group_by=endpoint&session=claude-1", "", "claude-1", "endpoint"},
	} {
		status, body := getJSON(t, base, "/v1/usage/summary?"+c.query, key)
		var s usageSummary
		if err := json.Unmarshal(body, &s); err != nil || status != http.StatusOK {
			t.Fatalf("%q: %d %s", c.query, status, body)
		}
		if s.Endpoint != c.endpoint || s.Session != c.session || s.GroupBy != c.by {
			t.Errorf("%q: echoed endpoint %q session %q group_by %q", c.query, s.Endpoint, s.Session, s.GroupBy)
		}
		want := totals(c.endpoint, c.session, c.by)
		var all money.Picos
		for _, v := range want {
			all += v
		}
		if s.Cost == nil || *s.Cost != all.String() {
			t.Errorf("%q: cost %v, want %s", c.query, s.Cost, all)
		}
		if c.by == "" {
			if s.Groups != nil {
				t.Errorf("%q: groups without group_by: %s", c.query, body)
			}
			continue
		}
		got := map[string]money.Picos{}
		var values []string
		for _, g := range s.Groups {
			v := g.Endpoint
			if c.by == "session" {
				v = g.Session
			}
			if v == nil || (g.Endpoint != nil && g.Session != nil) {
				t.Fatalf("%q: group %s does not name its %s alone", c.query, body, c.by)
			}
			p, err := money.ParseAmount(*g.Cost)
			if err != nil {
				t.Fatalf("%q: group cost %q: %v", c.query, *g.Cost, err)
			}
			got[*v] += p
			values = append(values, *v)
		}
		if !slices.IsSorted(values) || len(got) != len(values) {
			t.Errorf("%q: groups %v, want each value once, in order", c.query, values)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%q: groups %v, want %v", c.query, got, want)
		}
	}
	for _, c := range []struct{ query, code, param string }{
		{"group_by=currency", "invalid_value", "group_by"},
		{"group_by=endpoint&group_by=session", "invalid_value", "group_by"},
		{"endpoint=nope", "invalid_value", "endpoint"},
		{"session=" + strings.Repeat("x", usage.MaxSessionLen+1), "invalid_value", "session"},
		{"from=yesterday&endpoint=chat", "invalid_value", "from"},
	} {
		status, body := getJSON(t, base, "/v1/usage/summary?"+c.query, key)
		wantInvalid(t, c.query, status, body, c.code, c.param)
	}
}

// TestUsageSummaryTooManyGroups: more sessions in the range than one
// answer holds is a 400 that says how to narrow it, not a cut list.
func TestUsageSummaryTooManyGroups(t *testing.T) {
	key, l, base := filterGateway(t, server.Options{})
	fx := make([]filterFixture, usage.MaxSummaryGroups+1)
	for i := range fx {
		fx[i] = filterFixture{key: "key-a", endpoint: "chat", session: fmt.Sprintf("s-%d", i), cost: 1}
	}
	fx[0].endpoint = "messages"
	seedFixtures(t, l, fx)
	status, body := getJSON(t, base, "/v1/usage/summary?group_by=session", key)
	wantInvalid(t, "group_by=session", status, body, "too_many_groups", "group_by")
	if status, body := getJSON(t, base, "/v1/usage/summary?group_by=session&endpoint=messages", key); status != http.StatusOK {
		t.Fatalf("narrowed by endpoint: %d %s", status, body)
	}
}

// replicaSet starts n gateway replicas gw-0… over their own ledgers, each
// seeded by seed(i, ledger), peered through the management port; a name in
// down has no listener, and legacy, if set, answers for gw-<n> as a replica
// older than filters would (every record, no "applied").
func replicaSet(t *testing.T, n int, seed func(i int, l *usage.Ledger), legacy http.Handler, down ...string) (key string, apis []string) {
	t.Helper()
	plain, snap := readableSnapshot(t)
	const token = "peer-token"
	addrs := map[string]string{}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if a, ok := addrs[addr]; ok {
			addr = a
		} else {
			addr = "127.0.0.1:1"
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}}
	replicas := n + len(down)
	if legacy != nil {
		replicas++
		ms := httptest.NewServer(legacy)
		t.Cleanup(ms.Close)
		addrs[fmt.Sprintf("gw-%d.peers:9090", n)] = strings.TrimPrefix(ms.URL, "http://")
	}
	for i := range n {
		name := fmt.Sprintf("gw-%d", i)
		l, err := usage.Open(t.Context(), t.TempDir()+"/u.db", usage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		seed(i, l)
		set, err := peers.New(peers.Config{Self: name, Service: "peers", Replicas: replicas, Port: 9090, Token: token, Client: client})
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
		apis = append(apis, api.URL)
	}
	return plain, apis
}

// TestUsageFilterAcrossReplicas: two replicas hold a key's records between
// them; either answers a filtered listing with the filter's records from
// both, paged newest first, and filtered and grouped totals from both.
func TestUsageFilterAcrossReplicas(t *testing.T) {
	fx := filterFixtures(50)
	ids := make([]string, len(fx))
	// Records alternate between the replicas, in time order overall.
	var ledgers [2]*usage.Ledger
	key, apis := replicaSet(t, 2, func(i int, l *usage.Ledger) { ledgers[i] = l }, nil)
	created := time.Now().Add(-time.Minute)
	for i, f := range fx {
		ids[i] = usage.NewRequestID()
		r := usage.Record{RequestID: ids[i], KeyID: f.key, Endpoint: f.endpoint, Session: f.session, Status: usage.StatusSuccess,
			Cost: f.cost, Currency: "USD", CreatedAt: created}
		if err := ledgers[i%2].Finish(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	for _, api := range apis {
		for _, c := range []struct{ query, endpoint, session string }{
			{"session=claude-1", "", "claude-1"},
			{"endpoint=messages", "messages", ""},
			{"endpoint=chat&session=codex+2", "chat", "codex 2"},
		} {
			got, _ := listUsage(t, api, key, c.query, 3)
			if w := want(fx, ids, c.endpoint, c.session); !slices.Equal(got, w) {
				t.Errorf("%s %q:\n got %v\nwant %v", api, c.query, got, w)
			}
		}
		status, body := getJSON(t, api, "/v1/usage/summary?group_by=session&endpoint=messages", key)
		var s usageSummary
		if err := json.Unmarshal(body, &s); err != nil || status != http.StatusOK || s.Partial {
			t.Fatalf("%s grouped summary: %d %s", api, status, body)
		}
		wantGroups := map[string]money.Picos{}
		var total money.Picos
		for _, f := range fx {
			if f.key == "key-a" && f.endpoint == "messages" {
				wantGroups[f.session] += f.cost
				total += f.cost
			}
		}
		got := map[string]string{}
		for _, g := range s.Groups {
			if g.Session == nil {
				t.Fatalf("group without its session: %s", body)
			}
			got[*g.Session] = *g.Cost
		}
		if len(got) != len(wantGroups) || *s.Cost != total.String() {
			t.Fatalf("%s grouped summary %s, want groups %v total %s", api, body, wantGroups, total)
		}
		for v, c := range wantGroups {
			if got[v] != c.String() {
				t.Errorf("%s: session %q cost %s, want %s", api, v, got[v], c)
			}
		}
	}
}

// TestUsageFilterWithAnOlderReplica: a replica that predates filters answers
// a filtered query with every record (it ignores parameters it does not
// know); its answer is left out and named, never mixed in. An unfiltered
// listing still takes it.
func TestUsageFilterWithAnOlderReplica(t *testing.T) {
	var legacyIDs []string
	legacy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var data []jsontext.Value
		for _, id := range legacyIDs {
			data = append(data, jsontext.Value(`{"object":"usage.record","request_id":"`+id+`","key_id":"key-a"}`))
		}
		b, _ := json.Marshal(map[string]any{"object": "list", "data": data, "has_more": false,
			"requests": len(legacyIDs), "cost_picos": map[string]int64{"USD": 5}})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	})
	var fx []filterFixture
	var ids []string
	key, apis := replicaSet(t, 1, func(_ int, l *usage.Ledger) {
		fx = filterFixtures(10)
		ids = seedFixtures(t, l, fx)
	}, legacy)
	legacyIDs = []string{usage.NewRequestID(), usage.NewRequestID()}

	status, body := getJSON(t, apis[0], "/v1/usage?session=claude-1&limit=500", key)
	var p usagePage
	if err := json.Unmarshal(body, &p); err != nil || status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	if !p.Partial || !slices.Equal(p.MissingReplicas, []string{"gw-1"}) {
		t.Fatalf("filtered listing with an older replica: partial %v missing %v, want gw-1 named", p.Partial, p.MissingReplicas)
	}
	if len(p.Data) != len(want(fx, ids, "", "claude-1")) {
		t.Fatalf("filtered listing has %d records, want this replica's %d of the session", len(p.Data), len(want(fx, ids, "", "claude-1")))
	}
	status, body = getJSON(t, apis[0], "/v1/usage/summary?endpoint=chat", key)
	var s usageSummary
	if err := json.Unmarshal(body, &s); err != nil || status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	if !s.Partial || !slices.Equal(s.MissingReplicas, []string{"gw-1"}) {
		t.Fatalf("filtered summary with an older replica: %s, want gw-1 named missing", body)
	}
	// Without a filter the older replica's page is as good as ever.
	status, body = getJSON(t, apis[0], "/v1/usage?limit=500", key)
	p = usagePage{}
	if err := json.Unmarshal(body, &p); err != nil || status != http.StatusOK || p.Partial {
		t.Fatalf("unfiltered listing: %d %s", status, body)
	}
	if n := len(want(fx, ids, "", "")) + len(legacyIDs); len(p.Data) != n {
		t.Fatalf("unfiltered listing has %d records, want %d from both replicas", len(p.Data), n)
	}
}

// TestUsageSummaryTooManyGroupsAcrossReplicas: too many groups on one
// replica, or on replicas together though each is under the bound, is a
// 400 whichever replica is asked, as on one replica alone; narrowed by a
// filter, the groups of both are added up.
func TestUsageSummaryTooManyGroupsAcrossReplicas(t *testing.T) {
	for _, sessions := range [][2]int{
		{usage.MaxSummaryGroups/2 + 1, usage.MaxSummaryGroups/2 + 1}, // together over
		{1, usage.MaxSummaryGroups + 1},                              // gw-1 alone over
	} {
		t.Run(fmt.Sprint(sessions), func(t *testing.T) {
			key, apis := replicaSet(t, 2, func(i int, l *usage.Ledger) {
				fx := make([]filterFixture, sessions[i])
				for j := range fx {
					fx[j] = filterFixture{key: "key-a", endpoint: "chat", session: fmt.Sprintf("gw-%d-s-%d", i, j), cost: 1_000_000}
				}
				fx[0].endpoint = "messages"
				seedFixtures(t, l, fx)
			}, nil)
			for _, api := range apis {
				status, body := getJSON(t, api, "/v1/usage/summary?group_by=session", key)
				wantInvalid(t, api+" group_by=session", status, body, "too_many_groups", "group_by")
				status, body = getJSON(t, api, "/v1/usage/summary?group_by=session&endpoint=messages", key)
				var s usageSummary
				if err := json.Unmarshal(body, &s); err != nil || status != http.StatusOK || s.Partial {
					t.Fatalf("%s narrowed: %d %s", api, status, body)
				}
				if len(s.Groups) != 2 || s.Requests != 2 || *s.Cost != "0.000002" {
					t.Fatalf("%s narrowed: %s, want one session of each replica", api, body)
				}
			}
		})
	}
}
