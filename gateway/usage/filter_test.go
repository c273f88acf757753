package usage

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/money"
)

func TestFilterValidation(t *testing.T) {
	for _, tc := range []struct {
		f    Filter
		want bool
	}{
		{Filter{}, true},
		{Filter{Endpoint: EndpointChat}, true},
		{Filter{Endpoint: EndpointEmbeddings}, true},
		{Filter{Endpoint: EndpointMessages}, true},
		{Filter{Endpoint: EndpointResponses}, true},
		{Filter{Endpoint: "Chat"}, false}, // exact names only
		{Filter{Endpoint: "completions"}, false},
		{Filter{Endpoint: " chat"}, false},
		{Filter{Session: "0f9c2d1e-5a6b-4c3d-8e7f-001122334455"}, true},
		{Filter{Session: "a session with spaces ~!"}, true},
		{Filter{Session: strings.Repeat("s", MaxSessionLen)}, true},
		{Filter{Session: strings.Repeat("s", MaxSessionLen+1)}, false},
		{Filter{Session: "tab\there"}, false},
		{Filter{Session: "nl\n"}, false},
		{Filter{Session: "del\x7f"}, false},
		{Filter{Session: "ünï"}, false},
		{Filter{Endpoint: EndpointMessages, Session: "s-1"}, true},
		{Filter{Endpoint: "bogus", Session: "s-1"}, false},
	} {
		err := tc.f.Validate()
		if (err == nil) != tc.want || (err != nil && !errors.Is(err, ErrBadFilter)) {
			t.Errorf("Validate(%+q) = %v, want valid=%v", tc.f, err, tc.want)
		}
	}
}

// TestMigrateV3LedgerGetsEndpointAndSession: a ledger written by a binary
// at schema version 3 opens at version 4 with both columns NOT NULL with
// an empty default, its old rows readable with endpoint and session "" (no
// backfill), listed unfiltered and left out by an endpoint filter, and new
// rows stored and filtered by both.
func TestMigrateV3LedgerGetsEndpointAndSession(t *testing.T) {
	l, old := openMigrated(t, 3, 4, "endpoint", "session")
	var idx string
	if err := l.r.QueryRowContext(ctxT(t), `SELECT sql FROM sqlite_master WHERE name = 'usage_records_key_session'`).Scan(&idx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(idx, "(key_id, session, request_id) WHERE session != ''") {
		t.Fatalf("session index: %s", idx)
	}
	for _, id := range old {
		r, err := l.Get(ctxT(t), id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Endpoint != "" || r.Session != "" || r.Status != StatusSuccess || r.InputTokens != 5 || r.Cost != 1000 {
			t.Fatalf("old row read back as %+v", r)
		}
	}

	newer := finalRecord(NewRequestID(), "key-a")
	newer.Session = "s-new"
	if err := l.Finish(ctxT(t), newer); err != nil {
		t.Fatal(err)
	}
	if got := ids(listAll(t, l, "key-a", 2)); len(got) != 5 || got[0] != newer.RequestID {
		t.Fatalf("unfiltered listing after migration: %v", got)
	}
	for f, want := range map[Filter][]string{
		{Endpoint: EndpointChat}:                   {newer.RequestID},
		{Session: "s-new"}:                         {newer.RequestID},
		{Endpoint: EndpointChat, Session: "s-new"}: {newer.RequestID},
		{Endpoint: EndpointEmbeddings}:             nil,
	} {
		if got := ids(listAllFiltered(t, l, "key-a", f, 2)); !slices.Equal(got, want) {
			t.Errorf("filter %+v after migration: %v, want %v", f, got, want)
		}
	}
	groups, err := l.SummaryGroups(ctxT(t), "key-a", Filter{}, GroupByEndpoint, time.Time{}, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if groups[""].Requests != 4 || groups[EndpointChat].Requests != 1 || len(groups) != 2 {
		t.Fatalf("groups by endpoint after migration: %+v, want the 4 old rows under \"\" and the new one under chat", groups)
	}
}

func ids(recs []Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.RequestID)
	}
	return out
}

// TestEndpointAndSessionThroughEveryWritePath: both fields reach the row
// whichever statement writes it: the in_progress insert and the final
// update (Begin, then Finish in another batch), the final insert (Finish
// alone), the merged insert (Begin and Finish in one batch); and, as for
// every field, the final record's values win over the Begin's.
func TestEndpointAndSessionThroughEveryWritePath(t *testing.T) {
	for _, tc := range []struct {
		name         string
		opts         Options
		begin        *Record // nil: no Begin
		syncBetween  bool
		endpoint     string
		session      string
		wantBatches1 bool // Begin and Finish in one transaction
	}{
		{"begin then finish", Options{}, &Record{Endpoint: EndpointMessages, Session: "s-1"}, true, EndpointMessages, "s-1", false},
		{"finish alone", Options{}, nil, false, EndpointResponses, "codex-9", false},
		{"one batch", gathering, &Record{Endpoint: EndpointEmbeddings, Session: "s-2"}, false, EndpointEmbeddings, "s-2", true},
		{"finish changes them", Options{}, &Record{Endpoint: EndpointChat}, true, EndpointMessages, "late-session", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := openTest(t, tc.opts)
			id := NewRequestID()
			if tc.begin != nil {
				b := *tc.begin
				b.RequestID, b.KeyID = id, "key-a"
				beginWait(t, l, b)
				if tc.syncBetween {
					got, err := l.Get(ctxT(t), id)
					if err != nil {
						t.Fatal(err)
					}
					if got.Status != StatusInProgress || got.Endpoint != b.Endpoint || got.Session != b.Session {
						t.Fatalf("in_progress row = %+v, want the Begin's endpoint %q session %q", got, b.Endpoint, b.Session)
					}
				}
			}
			r := finalRecord(id, "key-a")
			r.Endpoint, r.Session = tc.endpoint, tc.session
			if err := l.Finish(ctxT(t), r); err != nil {
				t.Fatal(err)
			}
			got, err := l.Get(ctxT(t), id)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != StatusSuccess || got.Endpoint != tc.endpoint || got.Session != tc.session {
				t.Fatalf("final row = %+v, want endpoint %q session %q", got, tc.endpoint, tc.session)
			}
			if tc.wantBatches1 && l.Stats().Batches != 1 {
				t.Fatalf("%d transactions, want the merged one", l.Stats().Batches)
			}
			// The session index holds the final session, not the Begin's.
			if tc.begin != nil && tc.begin.Session != tc.session && tc.begin.Session != "" {
				if n := len(listAllFiltered(t, l, "key-a", Filter{Session: tc.begin.Session}, 0)); n != 0 {
					t.Fatalf("the Begin's session still lists %d records", n)
				}
			}
			if got := ids(listAllFiltered(t, l, "key-a", Filter{Endpoint: tc.endpoint, Session: tc.session}, 0)); !slices.Equal(got, []string{id}) {
				t.Fatalf("filtered listing %v, want [%s]", got, id)
			}
		})
	}
}

// seedMixed finishes n records, oldest first, cycling through the
// endpoints (and "", as an old row has) and the sessions, for key-a and,
// every fourth, key-b; it returns them as written.
func seedMixed(t *testing.T, l *Ledger, n int, created time.Time) []Record {
	t.Helper()
	endpoints := append([]string{""}, Endpoints...)
	sessions := []string{"", "s-1", "s-2"}
	var out []Record
	for i := range n {
		key := "key-a"
		if i%4 == 3 {
			key = "key-b"
		}
		r := finalRecord(NewRequestID(), key)
		r.Endpoint, r.Session = endpoints[i%len(endpoints)], sessions[i%len(sessions)]
		r.CreatedAt = created.Add(time.Duration(i) * time.Second)
		r.InputTokens, r.OutputTokens, r.Cost, r.Currency = i, 2*i, money.Picos(1000*i), "USD"
		if err := l.Finish(ctxT(t), r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// matching are the ids of recs of key that f matches, newest first.
func matching(recs []Record, key string, f Filter) []string {
	var out []string
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if r.KeyID == key && (f.Endpoint == "" || r.Endpoint == f.Endpoint) && (f.Session == "" || r.Session == f.Session) {
			out = append(out, r.RequestID)
		}
	}
	return out
}

// TestListFiltersWithPaging: every filter pages through exactly its
// records, newest first, at page sizes that end on and off a page
// boundary, and only the key's own.
func TestListFiltersWithPaging(t *testing.T) {
	l := openTest(t, Options{})
	recs := seedMixed(t, l, 90, time.Now().Add(-time.Hour))
	filters := []Filter{{}}
	for _, e := range Endpoints {
		filters = append(filters, Filter{Endpoint: e})
	}
	for _, s := range []string{"s-1", "s-2", "s-none"} {
		filters = append(filters, Filter{Session: s}, Filter{Endpoint: EndpointMessages, Session: s})
	}
	for _, key := range []string{"key-a", "key-b"} {
		for _, f := range filters {
			want := matching(recs, key, f)
			for _, limit := range []int{1, 4, len(want), 500} {
				if limit == 0 {
					continue
				}
				if got := ids(listAllFiltered(t, l, key, f, limit)); !slices.Equal(got, want) {
					t.Fatalf("%s filter %+v limit %d:\n got %v\nwant %v", key, f, limit, got, want)
				}
			}
		}
	}
	if _, _, _, err := l.ListFiltered(ctxT(t), "key-a", Filter{Endpoint: "bogus"}, 10, ""); !errors.Is(err, ErrBadFilter) {
		t.Fatalf("bad endpoint: %v, want ErrBadFilter", err)
	}
	if _, _, _, err := l.ListFiltered(ctxT(t), "key-a", Filter{Session: "a\nb"}, 10, ""); !errors.Is(err, ErrBadFilter) {
		t.Fatalf("bad session: %v, want ErrBadFilter", err)
	}
	if _, _, _, err := l.ListFiltered(ctxT(t), "", Filter{Session: "s-1"}, 10, ""); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("empty key with a filter: %v", err)
	}
}

// TestCursorIsAPositionUnderAnyFilter: a cursor holds no filter; used with
// another filter it lists that filter's records older than its position,
// each once, and nothing newer.
func TestCursorIsAPositionUnderAnyFilter(t *testing.T) {
	l := openTest(t, Options{})
	recs := seedMixed(t, l, 40, time.Now().Add(-time.Hour))
	sess := Filter{Session: "s-1"}
	page, next, more, err := l.ListFiltered(ctxT(t), "key-a", sess, 3, "")
	if err != nil || !more || len(page) != 3 {
		t.Fatalf("first page: %d records, more %v, %v", len(page), more, err)
	}
	pos := page[2].RequestID
	for _, f := range []Filter{{}, {Endpoint: EndpointChat}, {Session: "s-2"}} {
		var want []string
		for _, id := range matching(recs, "key-a", f) {
			if id < pos {
				want = append(want, id)
			}
		}
		var got []string
		cursor := next
		for {
			recs, n, more, err := l.ListFiltered(ctxT(t), "key-a", f, 2, cursor)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ids(recs)...)
			if !more {
				break
			}
			cursor = n
		}
		if !slices.Equal(got, want) {
			t.Fatalf("session cursor used with %+v:\n got %v\nwant %v", f, got, want)
		}
	}
}

// TestSummaryByEndpointAndSession: the filtered totals are the sums of the
// matching records, the groups split them by value ("" for records
// without one) and add up to the unfiltered totals.
func TestSummaryByEndpointAndSession(t *testing.T) {
	l := openTest(t, Options{})
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	recs := seedMixed(t, l, 50, base)
	from, to := base, base.Add(time.Hour)
	sum := func(f Filter, by string) map[string]Totals {
		out := map[string]Totals{}
		for _, r := range recs {
			if r.KeyID != "key-a" || (f.Endpoint != "" && r.Endpoint != f.Endpoint) || (f.Session != "" && r.Session != f.Session) {
				continue
			}
			g := ""
			switch by {
			case GroupByEndpoint:
				g = r.Endpoint
			case GroupBySession:
				g = r.Session
			}
			tot := out[g]
			if err := tot.Add(Totals{Requests: 1, InputTokens: int64(r.InputTokens), OutputTokens: int64(r.OutputTokens),
				Costs: map[string]money.Picos{r.Currency: r.Cost}}); err != nil {
				t.Fatal(err)
			}
			out[g] = tot
		}
		return out
	}
	for _, f := range []Filter{{}, {Endpoint: EndpointMessages}, {Session: "s-2"}, {Endpoint: EndpointChat, Session: "s-1"}, {Session: "s-none"}} {
		got, err := l.SummaryFiltered(ctxT(t), "key-a", f, from, to)
		if err != nil {
			t.Fatal(err)
		}
		if want := sum(f, "")[""]; !reflect.DeepEqual(got, want) {
			t.Errorf("SummaryFiltered(%+v) = %+v, want %+v", f, got, want)
		}
		for _, by := range []string{GroupByEndpoint, GroupBySession} {
			groups, err := l.SummaryGroups(ctxT(t), "key-a", f, by, from, to)
			if err != nil {
				t.Fatal(err)
			}
			if want := sum(f, by); !reflect.DeepEqual(groups, want) {
				t.Errorf("SummaryGroups(%+v, %s) = %+v\nwant %+v", f, by, groups, want)
			}
			var all Totals
			for _, g := range groups {
				if err := all.Add(g); err != nil {
					t.Fatal(err)
				}
			}
			if all.Requests != got.Requests || !reflect.DeepEqual(all.Costs, got.Costs) {
				t.Errorf("groups of %+v by %s add up to %+v, the filter's totals are %+v", f, by, all, got)
			}
		}
	}
	if _, err := l.SummaryGroups(ctxT(t), "key-a", Filter{}, "currency", from, to); !errors.Is(err, ErrBadGroup) {
		t.Fatalf("group by currency: %v, want ErrBadGroup", err)
	}
	if _, err := l.SummaryFiltered(ctxT(t), "key-a", Filter{Endpoint: "chat "}, from, to); !errors.Is(err, ErrBadFilter) {
		t.Fatalf("bad endpoint: %v, want ErrBadFilter", err)
	}
}

// TestSummaryGroupsBounded: one group past MaxSummaryGroups is an error,
// not a silently shorter answer; a filter that narrows them answers.
func TestSummaryGroupsBounded(t *testing.T) {
	l := openTest(t, Options{})
	created := time.Now().Add(-time.Minute)
	for i := range MaxSummaryGroups + 1 {
		r := finalRecord(NewRequestID(), "key-a")
		r.Session, r.CreatedAt = fmt.Sprintf("s-%04d", i), created
		if i == 0 {
			r.Endpoint = EndpointMessages
		}
		if err := l.Finish(ctxT(t), r); err != nil {
			t.Fatal(err)
		}
	}
	from, to := created, time.Now().Add(time.Minute)
	if _, err := l.SummaryGroups(ctxT(t), "key-a", Filter{}, GroupBySession, from, to); !errors.Is(err, ErrTooManyGroups) {
		t.Fatalf("%d sessions grouped: %v, want ErrTooManyGroups", MaxSummaryGroups+1, err)
	}
	g, err := l.SummaryGroups(ctxT(t), "key-a", Filter{Endpoint: EndpointMessages}, GroupBySession, from, to)
	if err != nil || len(g) != 1 || g["s-0000"].Requests != 1 {
		t.Fatalf("narrowed by endpoint: %+v, %v", g, err)
	}
	if g, err := l.SummaryGroups(ctxT(t), "key-a", Filter{}, GroupByEndpoint, from, to); err != nil || len(g) != 2 {
		t.Fatalf("by endpoint: %+v, %v", g, err)
	}
}
