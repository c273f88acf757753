package usage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/test/testutil"
)

// richRecord is a final record with every field set, each to a value of
// its own, so a column lost or swapped on the way shows.
func richRecord(id, key string, created time.Time) Record {
	created = created.Truncate(time.Microsecond).UTC()
	return Record{
		RequestID:       id,
		ClientRequestID: "client-" + id,
		Endpoint:        EndpointResponses,
		Session:         "sess-" + key,
		Group:           "team-" + key,
		Owners:          map[string]string{"team": "search", "cost-center": "cc-" + key},
		KeyID:           key,
		KeyFingerprint:  "fp-" + key,
		Alias:           "chat-beta",
		Provider:        "beta",
		ProviderModel:   "beta-medium",
		Status:          StatusPartial,
		HTTPStatus:      200,
		ErrorType:       "upstream_stream_error",
		Fallbacks:       1,
		Attempts: []Attempt{
			{Provider: "alpha", Model: "alpha-large", Outcome: OutcomeStatus, StatusCode: 503, LatencyMs: 11},
			{Provider: "beta", Model: "beta-medium", Outcome: OutcomeStreamError, StatusCode: 200, LatencyMs: 22},
		},
		Stream:            true,
		InputTokens:       101,
		OutputTokens:      202,
		CachedInputTokens: 33,
		ReasoningTokens:   44,
		Cost:              1_234_567_890_123,
		Currency:          "EUR",
		LatencyMs:         55,
		CreatedAt:         created,
		FinishedAt:        created.Add(1500 * time.Microsecond),
	}
}

// finishAll writes recs as final records through Begin and Finish.
func finishAll(t *testing.T, l *Ledger, recs []Record) {
	t.Helper()
	for _, r := range recs {
		beginWait(t, l, Record{RequestID: r.RequestID, KeyID: r.KeyID, CreatedAt: r.CreatedAt})
		if err := l.Finish(ctxT(t), r); err != nil {
			t.Fatal(err)
		}
	}
}

// richRecords are n rich records of key, with ids prefix000.. in order.
func richRecords(prefix, key string, n int, created time.Time) []Record {
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = richRecord(fmt.Sprintf("%s%03d", prefix, i), key, created.Add(time.Duration(i)*time.Millisecond))
	}
	return recs
}

func TestExportBatchPagesInRequestIDOrder(t *testing.T) {
	l := openTest(t, Options{})
	recs := richRecords("req_b", "k", 7, time.Now().Add(-time.Minute))
	// Written out of order: the export orders by request id, not by arrival.
	finishAll(t, l, []Record{recs[4], recs[0], recs[6], recs[2], recs[1], recs[5], recs[3]})
	// In progress, between and around the final ones: never exported.
	for _, id := range []string{"req_a", "req_b002x", "req_c"} {
		beginWait(t, l, Record{RequestID: id, KeyID: "k"})
	}
	all := ids(recs)
	for _, tc := range []struct {
		name  string
		after string
		n     int
		want  []string
	}{
		{"first page", "", 3, all[:3]},
		{"next page", all[2], 3, all[3:6]},
		{"last page short", all[5], 3, all[6:]},
		{"after the last", all[6], 3, nil},
		{"after an id not in the ledger", "req_b002x", 2, all[3:5]},
		{"n below 1 is the default", "", 0, all},
		{"n beyond the records", "", 100, all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := l.ExportBatch(ctxT(t), tc.after, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(got), tc.want) {
				t.Fatalf("ExportBatch(%q, %d) = %v, want %v", tc.after, tc.n, ids(got), tc.want)
			}
		})
	}
}

// Every column comes out as it went in.
func TestExportBatchFullFidelity(t *testing.T) {
	l := openTest(t, Options{})
	want := richRecords("req_f", "k", 2, time.Now().Add(-time.Hour))
	want[1].Owners, want[1].Attempts, want[1].Currency, want[1].Cost = nil, nil, "", 0
	finishAll(t, l, want)
	got, err := l.ExportBatch(ctxT(t), "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("exported\n%+v\nwant\n%+v", got, want)
	}
}

// A record recovered as interrupted after a crash is final, and exported.
func TestExportBatchIncludesRecoveredRecords(t *testing.T) {
	path := dbPath(t)
	l := openAt(t, path, Options{})
	beginWait(t, l, Record{RequestID: "req_open", KeyID: "k"})
	if got, _ := l.ExportBatch(ctxT(t), "", 10); len(got) != 0 {
		t.Fatalf("an in_progress record was exported: %+v", got)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openAt(t, path, Options{})
	got, err := l.ExportBatch(ctxT(t), "", 10)
	if err != nil || len(got) != 1 || got[0].Status != StatusInterrupted || got[0].FinishedAt.IsZero() {
		t.Fatalf("export after recovery = %+v, %v; want the interrupted record", got, err)
	}
}

func TestImportIsIdempotentByRequestID(t *testing.T) {
	src, dst := openTest(t, Options{}), openTest(t, Options{})
	recs := richRecords("req_i", "k", 5, time.Now().Add(-time.Minute))
	finishAll(t, src, recs)
	batch, err := src.ExportBatch(ctxT(t), "", 10)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{5, 0} {
		added, err := dst.Import(ctxT(t), batch)
		if err != nil || added != want {
			t.Fatalf("import #%d: added %d, %v; want %d", i+1, added, err, want)
		}
	}
	// A batch overlapping what is there adds only what is new.
	extra := richRecord("req_i999", "k", time.Now())
	if added, err := dst.Import(ctxT(t), append(batch[3:], extra)); err != nil || added != 1 {
		t.Fatalf("overlapping import: added %d, %v; want 1", added, err)
	}
	total, _, err := dst.Count(ctxT(t))
	if err != nil || total != 6 {
		t.Fatalf("receiver holds %d rows (%v), want 6", total, err)
	}
	got, err := dst.ExportBatch(ctxT(t), "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, append(recs, extra)) {
		t.Fatalf("imported records differ from the sent ones:\n%+v", got)
	}
}

func TestImportRefusesAnInvalidBatchWhole(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name  string
		spoil func(r *Record)
	}{
		{"in progress", func(r *Record) { r.Status = StatusInProgress }},
		{"unknown status", func(r *Record) { r.Status = "done" }},
		{"no request id", func(r *Record) { r.RequestID = "" }},
		{"request id with a space", func(r *Record) { r.RequestID = "req x" }},
		{"request id too long", func(r *Record) { r.RequestID = "req_" + strings.Repeat("x", 125) }},
		{"no finish time", func(r *Record) { r.FinishedAt = time.Time{} }},
		{"no creation time", func(r *Record) { r.CreatedAt = time.Time{} }},
		{"negative tokens", func(r *Record) { r.OutputTokens = -1 }},
		{"negative cost", func(r *Record) { r.Cost = -1 }},
		{"twice in the batch", func(r *Record) { r.RequestID = "req_v000" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := openTest(t, Options{})
			batch := richRecords("req_v", "k", 3, now)
			tc.spoil(&batch[1])
			added, err := l.Import(ctxT(t), batch)
			if !errors.Is(err, ErrInvalidRecord) || added != 0 {
				t.Fatalf("Import = %d, %v; want ErrInvalidRecord", added, err)
			}
			if total, _, err := l.Count(ctxT(t)); err != nil || total != 0 {
				t.Fatalf("an invalid batch wrote %d rows (%v)", total, err)
			}
		})
	}
	// The longest id a cursor carries is taken.
	l := openTest(t, Options{})
	r := richRecord("req_"+strings.Repeat("x", 124), "k", now)
	if added, err := l.Import(ctxT(t), []Record{r}); err != nil || added != 1 {
		t.Fatalf("import of a 128-byte id: %d, %v", added, err)
	}
}

// Imported records are the receiver's own: listed, filtered, summed and
// counted against budgets like the ones it wrote itself.
func TestImportedRecordsServeEveryRead(t *testing.T) {
	ctx := ctxT(t)
	src, dst := openTest(t, Options{}), openTest(t, Options{})
	created := time.Now().Add(-time.Minute)
	local := richRecords("req_l", "k", 2, created)
	finishAll(t, dst, local)
	moved := richRecords("req_m", "k", 3, created)
	finishAll(t, src, moved)
	batch, err := src.ExportBatch(ctx, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Import(ctx, batch); err != nil {
		t.Fatal(err)
	}

	want := ids(append(slices.Clone(local), moved...))
	slices.Reverse(want) // newest first
	if got := ids(listAll(t, dst, "k", 2)); !slices.Equal(got, want) {
		t.Fatalf("List = %v, want %v", got, want)
	}
	f := Filter{Endpoint: EndpointResponses, Session: "sess-k"}
	if got := ids(listAllFiltered(t, dst, "k", f, 2)); !slices.Equal(got, want) {
		t.Fatalf("ListFiltered = %v, want %v", got, want)
	}

	r := local[0] // every record uses as much as this one
	per := Totals{Requests: 1, InputTokens: int64(r.InputTokens), CachedInputTokens: int64(r.CachedInputTokens),
		OutputTokens: int64(r.OutputTokens), ReasoningTokens: int64(r.ReasoningTokens), Costs: map[string]money.Picos{r.Currency: r.Cost}}
	var five Totals
	for range 5 {
		if err := five.Add(per); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := dst.Summary(ctx, "k", created.Add(-time.Hour), time.Now().Add(time.Hour))
	if err != nil || !reflect.DeepEqual(sum, five) {
		t.Fatalf("Summary = %+v, %v; want %+v", sum, err, five)
	}
	spend, err := dst.SpendSince(ctx, created.Add(-time.Hour))
	if err != nil || !reflect.DeepEqual(spend, map[string]Totals{"k": five}) {
		t.Fatalf("SpendSince = %+v, %v", spend, err)
	}
	groups, err := dst.GroupSpendSince(ctx, created.Add(-time.Hour))
	if err != nil || !reflect.DeepEqual(groups, map[string]Totals{"team-k": five}) {
		t.Fatalf("GroupSpendSince = %+v, %v", groups, err)
	}
}

// Imports share the writer with the requests the receiver serves at the
// same time: every record of both lands once.
func TestImportAlongsideLocalTraffic(t *testing.T) {
	l := openTest(t, Options{})
	moved := richRecords("req_m", "k", 200, time.Now())
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				id := fmt.Sprintf("req_local_%d_%02d", g, i)
				if err := l.Begin(Record{RequestID: id, KeyID: "k"}); err != nil {
					t.Error(err)
					return
				}
				if err := l.Finish(context.Background(), finalRecord(id, "k")); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := 0; i < len(moved); i += 20 {
		if added, err := l.Import(ctxT(t), moved[i:i+20]); err != nil || added != 20 {
			t.Fatalf("Import: %d, %v", added, err)
		}
	}
	wg.Wait()
	if total, byStatus, err := l.Count(ctxT(t)); err != nil || total != 400 || byStatus[StatusInProgress] != 0 {
		t.Fatalf("Count = %d %v %v; want 400 final rows", total, byStatus, err)
	}
}

func TestForgetDeletesOnlyFinalRecordsNamed(t *testing.T) {
	l := openTest(t, Options{})
	recs := richRecords("req_g", "k", 4, time.Now())
	finishAll(t, l, recs)
	beginWait(t, l, Record{RequestID: "req_open", KeyID: "k"})
	if err := l.Forget(ctxT(t), []string{recs[0].RequestID, recs[2].RequestID, "req_open", "req_unknown"}); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{recs[0].RequestID: false, recs[1].RequestID: true,
		recs[2].RequestID: false, recs[3].RequestID: true, "req_open": true} {
		if got := exists(t, l, id); got != want {
			t.Errorf("%s exists = %v, want %v", id, got, want)
		}
	}
	if err := l.Forget(ctxT(t), nil); err != nil {
		t.Fatalf("Forget(nil) = %v", err)
	}
}

func TestHandoffMarkerSurvivesReopen(t *testing.T) {
	path := dbPath(t)
	l := openAt(t, path, Options{})
	ctx := ctxT(t)
	if to, ok, err := l.Handoff(ctx); err != nil || ok || to != "" {
		t.Fatalf("fresh ledger: Handoff = %q %v %v", to, ok, err)
	}
	const to = "http://llmgw-gateway-0.llmgw-gateway-peers:9090"
	if err := l.SetHandoff(ctx, to); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openAt(t, path, Options{})
	if got, ok, err := l.Handoff(ctx); err != nil || !ok || got != to {
		t.Fatalf("after reopen: Handoff = %q %v %v; want %q", got, ok, err, to)
	}
	if err := l.SetHandoff(ctx, ""); err == nil {
		t.Fatal("SetHandoff(\"\") succeeded")
	}
	if err := l.ClearHandoff(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openAt(t, path, Options{})
	if got, ok, err := l.Handoff(ctx); err != nil || ok {
		t.Fatalf("after clear and reopen: Handoff = %q %v %v", got, ok, err)
	}
}

func TestRetentionPrunesImportedRecords(t *testing.T) {
	l := openTest(t, Options{})
	old := richRecords("req_o", "k", 3, time.Now().Add(-2*time.Hour))
	fresh := richRecords("req_p", "k", 2, time.Now())
	if _, err := l.Import(ctxT(t), append(slices.Clone(old), fresh...)); err != nil {
		t.Fatal(err)
	}
	n, err := l.prune(ctxT(t), Retention{MaxAge: time.Hour})
	if err != nil || n != len(old) {
		t.Fatalf("prune dropped %d, %v; want %d", n, err, len(old))
	}
	got, err := l.ExportBatch(ctxT(t), "", 10)
	if err != nil || !slices.Equal(ids(got), ids(fresh)) {
		t.Fatalf("left %v, %v; want %v", ids(got), err, ids(fresh))
	}
}

func TestHandoffOpsAfterClose(t *testing.T) {
	l := openTest(t, Options{})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if _, err := l.Import(ctx, richRecords("req_c", "k", 1, time.Now())); !errors.Is(err, ErrClosed) {
		t.Errorf("Import after Close = %v, want ErrClosed", err)
	}
	if err := l.Forget(ctx, []string{"req_c000"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Forget after Close = %v, want ErrClosed", err)
	}
	if err := l.SetHandoff(ctx, "http://x"); !errors.Is(err, ErrClosed) {
		t.Errorf("SetHandoff after Close = %v, want ErrClosed", err)
	}
}

// On a full disk an import fails as not writable (the receiver answers
// 503 and the sender tries again) and writes nothing; once space is freed
// the same batch is added whole.
func TestImportOnAFullDisk(t *testing.T) {
	dir := testutil.SmallFS(t, 2<<20)
	l := openAt(t, filepath.Join(dir, "usage.db"), Options{ProbeInterval: 20 * time.Millisecond})
	batch := richRecords("req_d", "k", 200, time.Now())
	for i := range batch {
		batch[i].ClientRequestID = strings.Repeat("x", 2000) // rows too large to fit in the WAL's slack
	}
	filler := testutil.FillFS(t, dir)
	added, err := l.Import(ctxT(t), batch)
	if !errors.Is(err, ErrNotWritable) || added != 0 {
		t.Fatalf("Import on a full disk = %d, %v; want ErrNotWritable", added, err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "writable again", func() bool { return l.Writable() == nil })
	if total, _, err := l.Count(ctxT(t)); err != nil || total != 0 {
		t.Fatalf("the failed import left %d rows (%v)", total, err)
	}
	if added, err := l.Import(ctxT(t), batch); err != nil || added != len(batch) {
		t.Fatalf("Import after space was freed = %d, %v", added, err)
	}
}

func TestExportWalksThePrimaryKey(t *testing.T) {
	db := rawLedgerDB(t, filepath.Join(t.TempDir(), "usage.db"), len(migrations))
	for _, after := range []string{"", "req_x"} {
		got := queryPlan(t, db, exportSQL, after, 10)
		if !strings.Contains(got, "USING INDEX sqlite_autoindex_usage_records_1 ") || strings.Contains(got, "TEMP B-TREE") {
			t.Errorf("after %q: plan %q, want a search of the primary key and no sort", after, got)
		}
	}
}
