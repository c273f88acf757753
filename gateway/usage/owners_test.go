package usage

import (
	"errors"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/money"
)

// The owners column reads back as the labels that were written, keys
// sorted whatever the map's order, and is "" when there are none.
func TestOwnersColumnRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     map[string]string
		column string
	}{
		{"none", nil, ""},
		{"empty", map[string]string{}, ""},
		{"one", map[string]string{"team": "a"}, `{"team":"a"}`},
		{"sorted", map[string]string{"team": "a", "env": "prod", "example.com/cost-center": "cc-1"},
			`{"env":"prod","example.com/cost-center":"cc-1","team":"a"}`},
		{"empty value", map[string]string{"team": ""}, `{"team":""}`},
		{"escaping", map[string]string{`q"uo\te`: "tab\tnl\n<&>"}, `{"q\"uo\\te":"tab\tnl\n<&>"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			col := encodeOwners(tc.in)
			if col != tc.column {
				t.Fatalf("column %s, want %s", col, tc.column)
			}
			got, err := decodeOwners(col)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.in
			if len(want) == 0 {
				want = nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("column %s reads as %v, want %v", col, got, want)
			}
		})
	}
	if _, err := decodeOwners(`{"team":`); err == nil {
		t.Fatal("a cut column decoded")
	}
}

// TestGroupAndOwnersThroughEveryWritePath: both fields reach the row
// whichever statement writes it (the in_progress insert and the final
// update, the final insert, the merged insert), and the final record's
// values win over the Begin's.
func TestGroupAndOwnersThroughEveryWritePath(t *testing.T) {
	ownersA := map[string]string{"team": "a", "example.com/cost-center": "cc-1"}
	ownersB := map[string]string{"team": "b"}
	for _, tc := range []struct {
		name        string
		opts        Options
		begin       *Record // nil: no Begin
		syncBetween bool
		group       string
		owners      map[string]string
	}{
		{"begin then finish", Options{}, &Record{Group: "platform", Owners: ownersA}, true, "platform", ownersA},
		{"finish alone", Options{}, nil, false, "platform.ml", ownersB},
		{"one batch", gathering, &Record{Group: "g", Owners: ownersB}, false, "g", ownersB},
		{"finish changes them", Options{}, &Record{Group: "old", Owners: ownersA}, true, "new", ownersB},
		{"finish clears them", Options{}, &Record{Group: "old", Owners: ownersA}, true, "", nil},
		{"none at all", Options{}, &Record{}, true, "", nil},
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
					if got.Status != StatusInProgress || got.Group != b.Group || !reflect.DeepEqual(got.Owners, b.Owners) {
						t.Fatalf("in_progress row = %+v, want the Begin's group %q owners %v", got, b.Group, b.Owners)
					}
				}
			}
			r := finalRecord(id, "key-a")
			r.Group, r.Owners = tc.group, tc.owners
			if err := l.Finish(ctxT(t), r); err != nil {
				t.Fatal(err)
			}
			got, err := l.Get(ctxT(t), id)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != StatusSuccess || got.Group != tc.group || !reflect.DeepEqual(got.Owners, tc.owners) {
				t.Fatalf("final row = %+v, want group %q owners %v", got, tc.group, tc.owners)
			}
			// The listing reads them too.
			page, _, _, err := l.List(ctxT(t), "key-a", 10, "")
			if err != nil || len(page) != 1 || page[0].Group != tc.group || !reflect.DeepEqual(page[0].Owners, tc.owners) {
				t.Fatalf("listing %+v, %v", page, err)
			}
		})
	}
}

// A journal line with a group and owners (written before a crash) replays
// into a row that has them.
func TestJournalReplaysGroupAndOwners(t *testing.T) {
	path := dbPath(t)
	l := openAt(t, path, Options{})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	open, done := NewRequestID(), NewRequestID()
	cu := strconv.FormatInt(time.Now().Add(-time.Minute).UnixMicro(), 10)
	lines := []string{
		`{"id":"` + open + `","key":"key-a","grp":"platform","own":"{\"team\":\"a\"}","created_us":` + cu + `}`,
		`{"id":"` + done + `","key":"key-a","grp":"ml","own":"{\"env\":\"prod\",\"team\":\"b\"}","created_us":` + cu +
			`,"st":"success","hs":200,"cost":5000,"cur":"USD","fin_us":` + cu + `}`,
	}
	if err := os.WriteFile(journalPath(path), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l = openAt(t, path, Options{})
	for id, want := range map[string]Record{
		open: {Status: StatusInterrupted, Group: "platform", Owners: map[string]string{"team": "a"}},
		done: {Status: StatusSuccess, Group: "ml", Owners: map[string]string{"env": "prod", "team": "b"}},
	} {
		got, err := l.Get(ctxT(t), id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != want.Status || got.Group != want.Group || !reflect.DeepEqual(got.Owners, want.Owners) {
			t.Fatalf("replayed %s = %+v, want %+v", id, got, want)
		}
	}
	spend, err := l.GroupSpendSince(ctxT(t), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	// The interrupted record counts as a request of its group that cost
	// nothing, as SpendSince counts it for its key.
	if len(spend) != 2 || spend["ml"].Costs["USD"] != 5000 || spend["platform"].Requests != 1 || spend["platform"].Costs != nil {
		t.Fatalf("group spend after replay %+v, want ml's cost and platform's interrupted request", spend)
	}
}

// TestMigrateV4LedgerGetsGroupAndOwners: a ledger written by a binary that
// knew schema version 4 opens at version 5 with both columns NOT NULL and
// empty by default; its rows read with no group and no owners, count for no
// group, and are the "" group of an owner breakdown; new rows store both.
func TestMigrateV4LedgerGetsGroupAndOwners(t *testing.T) {
	l, old := openMigrated(t, 4, 3, "key_group", "owners")
	for _, id := range old {
		r, err := l.Get(ctxT(t), id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Group != "" || r.Owners != nil || r.Status != StatusSuccess || r.Cost != 1000 {
			t.Fatalf("old row read back as %+v", r)
		}
	}

	newer := finalRecord(NewRequestID(), "key-a")
	newer.Group, newer.Owners = "platform", map[string]string{"team": "a"}
	newer.Cost, newer.Currency = 7000, "USD"
	if err := l.Finish(ctxT(t), newer); err != nil {
		t.Fatal(err)
	}
	got, err := l.Get(ctxT(t), newer.RequestID)
	if err != nil || got.Group != "platform" || !reflect.DeepEqual(got.Owners, newer.Owners) {
		t.Fatalf("new row read back as %+v, %v", got, err)
	}
	groups, err := l.GroupSpendSince(ctxT(t), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 1 || groups["platform"].Requests != 1 || groups["platform"].Costs["USD"] != 7000 {
		t.Fatalf("group spend after migration %+v, want only the new row under platform", groups)
	}
	byTeam, err := l.SummaryGroups(ctxT(t), "key-a", Filter{}, GroupByOwner("team"), time.Time{}, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(byTeam) != 2 || byTeam[""].Requests != 3 || byTeam["a"].Requests != 1 {
		t.Fatalf("by owner.team after migration %+v, want the 3 old rows under \"\" and the new one under a", byTeam)
	}
}

// TestGroupSpendSince: a group's spend is its records' (the group the key
// had when each was made), from since on, final only, per currency; a
// key's move between groups moves none of its past spend; records without
// a group are in no total. SpendSince still totals every record by key.
func TestGroupSpendSince(t *testing.T) {
	l := openTest(t, Options{})
	since := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	type rec struct {
		key, group string
		at         time.Duration // after since
		cost       money.Picos
		currency   string
		open       bool // Begin only: in_progress
	}
	recs := []rec{
		{"key-a", "platform", time.Minute, 1000, "USD", false},
		{"key-b", "platform", 2 * time.Minute, 2000, "USD", false},
		{"key-a", "ml", 3 * time.Minute, 4000, "USD", false}, // key-a moved to ml
		{"key-a", "ml", 4 * time.Minute, 8000, "EUR", false},
		{"key-c", "", 5 * time.Minute, 16000, "USD", false},          // no group
		{"key-b", "platform", -time.Minute, 32000, "USD", false},     // before since
		{"key-b", "platform", 6 * time.Minute, 64000, "USD", true},   // still in progress
		{"key-d", "ml", 7 * time.Minute, 0, "", false},               // unpriced: a request, no cost
		{"key-b", "platform", 0, 128000, "USD", false},               // at since: counted
		{"key-a", "platform.ml", 8 * time.Minute, 256, "USD", false}, // another group, not a prefix match
	}
	for _, r := range recs {
		x := finalRecord(NewRequestID(), r.key)
		x.Group, x.CreatedAt, x.Cost, x.Currency = r.group, since.Add(r.at), r.cost, r.currency
		if r.open {
			beginWait(t, l, x)
			continue
		}
		if err := l.Finish(ctxT(t), x); err != nil {
			t.Fatal(err)
		}
	}
	got, err := l.GroupSpendSince(ctxT(t), since)
	if err != nil {
		t.Fatal(err)
	}
	// What the records say, summed here.
	want := map[string]Totals{}
	for _, r := range recs {
		if r.group == "" || r.at < 0 || r.open {
			continue
		}
		x := finalRecord("", r.key)
		part := Totals{Requests: 1, InputTokens: int64(x.InputTokens), OutputTokens: int64(x.OutputTokens)}
		if r.currency != "" {
			part.Costs = map[string]money.Picos{r.currency: r.cost}
		}
		tot := want[r.group]
		if err := tot.Add(part); err != nil {
			t.Fatal(err)
		}
		want[r.group] = tot
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GroupSpendSince =\n%+v\nwant\n%+v", got, want)
	}
	if got["platform"].Costs["USD"] != 1000+2000+128000 || got["ml"].Requests != 3 {
		t.Fatalf("platform %+v, ml %+v", got["platform"], got["ml"])
	}
	byKey, err := l.SpendSince(ctxT(t), since)
	if err != nil {
		t.Fatal(err)
	}
	if byKey["key-c"].Costs["USD"] != 16000 || byKey["key-a"].Requests != 4 {
		t.Fatalf("SpendSince = %+v", byKey)
	}
	if later, err := l.GroupSpendSince(ctxT(t), time.Now().Add(time.Hour)); err != nil || len(later) != 0 {
		t.Fatalf("nothing after the last record: %+v, %v", later, err)
	}
}

// TestSummaryByOwnerLabel: the groups of owner.<label> are the label's
// values ("" for records without it, or without owners), add up to the
// key's totals, and name one label key whatever dots and slashes it holds.
func TestSummaryByOwnerLabel(t *testing.T) {
	l := openTest(t, Options{})
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	ownerSets := []map[string]string{
		nil,
		{"team": "a", "example.com/cost-center": "cc-1"},
		{"team": "b"},
		{"team": "a", "a.b": "flat"},
		{"example.com/cost-center": "cc-2", "team": ""},
	}
	var recs []Record
	for i := range 40 {
		key := "key-a"
		if i%5 == 4 {
			key = "key-b"
		}
		r := finalRecord(NewRequestID(), key)
		r.Owners = ownerSets[i%len(ownerSets)]
		r.CreatedAt = base.Add(time.Duration(i) * time.Second)
		r.InputTokens, r.Cost, r.Currency = i, money.Picos(100*i), "USD"
		if i%2 == 0 {
			r.Session = "s-1"
		}
		if err := l.Finish(ctxT(t), r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	from, to := base, base.Add(time.Hour)
	for _, label := range []string{"team", "example.com/cost-center", "a.b", "a", "absent"} {
		for _, f := range []Filter{{}, {Session: "s-1"}} {
			want := map[string]Totals{}
			for _, r := range recs {
				if r.KeyID != "key-a" || (f.Session != "" && r.Session != f.Session) {
					continue
				}
				g := r.Owners[label]
				tot := want[g]
				if err := tot.Add(Totals{Requests: 1, InputTokens: int64(r.InputTokens), OutputTokens: int64(r.OutputTokens),
					Costs: map[string]money.Picos{r.Currency: r.Cost}}); err != nil {
					t.Fatal(err)
				}
				want[g] = tot
			}
			got, err := l.SummaryGroups(ctxT(t), "key-a", f, GroupByOwner(label), from, to)
			if err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("by owner %s, filter %+v:\n got %+v\nwant %+v", label, f, got, want)
			}
			total, err := l.SummaryFiltered(ctxT(t), "key-a", f, from, to)
			if err != nil {
				t.Fatal(err)
			}
			var sum Totals
			for _, g := range got {
				if err := sum.Add(g); err != nil {
					t.Fatal(err)
				}
			}
			if !reflect.DeepEqual(sum, total) {
				t.Errorf("owner %s groups add up to %+v, the totals are %+v", label, sum, total)
			}
		}
	}
}

// TestGroupByValidation: a group_by is endpoint, session or owner.<a
// Kubernetes label key>; anything else is ErrBadGroup before a statement
// is built, so text meant for SQL never reaches it. A label that a JSON
// path would read as more than one key (dots) names one key.
func TestGroupByValidation(t *testing.T) {
	l := openTest(t, Options{})
	r := finalRecord(NewRequestID(), "key-a")
	r.Owners = map[string]string{"a.b": "flat", "team": "a"}
	if err := l.Finish(ctxT(t), r); err != nil {
		t.Fatal(err)
	}
	from, to := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	for _, by := range []string{GroupByEndpoint, GroupBySession, "owner.team", "owner.a.b", "owner.example.com/cost-center",
		"owner.A_b-1", GroupByOwner(strings.Repeat("x", 63))} {
		if err := ValidateGroupBy(by); err != nil {
			t.Errorf("ValidateGroupBy(%q) = %v, want nil", by, err)
		}
		if _, err := l.SummaryGroups(ctxT(t), "key-a", Filter{}, by, from, to); err != nil {
			t.Errorf("SummaryGroups by %q: %v", by, err)
		}
	}
	for _, by := range []string{
		"", "currency", "key_id", "owner", "owner.", "Owner.team", "owners.team", " owner.team", "owner.team ",
		`owner.team") OR 1=1 --`, `owner.team'; DROP TABLE usage_records; --`, `owner.$."team"`, `owner.a"b`,
		"owner.a b", "owner.-team", "owner.team-", "owner./team", "owner.a/b/c", "owner.Example.com/x",
		"owner.a[0]", "owner.*", "owner.team\x00", GroupByOwner(strings.Repeat("x", 64)),
	} {
		err := ValidateGroupBy(by)
		if !errors.Is(err, ErrBadGroup) {
			t.Errorf("ValidateGroupBy(%q) = %v, want ErrBadGroup", by, err)
		}
		if _, err := l.SummaryGroups(ctxT(t), "key-a", Filter{}, by, from, to); !errors.Is(err, ErrBadGroup) {
			t.Errorf("SummaryGroups by %q: %v, want ErrBadGroup", by, err)
		}
		if _, _, err := summaryQuery("key-a", Filter{}, by, from, to); by != "" && !errors.Is(err, ErrBadGroup) {
			t.Errorf("summaryQuery by %q built a statement", by)
		}
	}
	// The table is still there, and "a.b" is the key "a.b", not b inside a.
	g, err := l.SummaryGroups(ctxT(t), "key-a", Filter{}, "owner.a.b", from, to)
	if err != nil || len(g) != 1 || g["flat"].Requests != 1 {
		t.Fatalf("by owner.a.b: %+v, %v", g, err)
	}
	// The label is an argument of the statement, never part of its text.
	q, args, err := summaryQuery("key-a", Filter{}, "owner.example.com/cost-center", from, to)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(q, "cost-center") || !slices.Contains(args, any(`$."example.com/cost-center"`)) {
		t.Fatalf("statement %s, arguments %v: want the label bound, not spliced", q, args)
	}
}
