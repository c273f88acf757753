package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/localstack"
	"github.com/llmgw/llmgw/gateway/usage"
	"github.com/llmgw/llmgw/test/testutil"
)

// fullDiskStack is the local stack with its state directory (snapshot and
// ledger) on a small tmpfs, and its management port for /metrics.
type fullDiskStack struct {
	*harness
	dir     string
	metrics string // http://mgmt/metrics
}

func newFullDiskStack(t *testing.T) *fullDiskStack {
	t.Helper()
	// Mounted first, so it is unmounted after the stack's Close.
	dir := testutil.SmallFS(t, 4<<20)
	h, st := startStack(t, localstack.Options{Dir: dir, MgmtAddr: "127.0.0.1:0",
		Mutate: func(s *snapshot.Snapshot) {
			for i := range s.Keys {
				s.Keys[i].RateLimit = snapshot.RateLimit{RPM: 60000, Burst: 10000}
			}
		}})
	return &fullDiskStack{harness: h, dir: dir, metrics: "http://" + st.MgmtAddr + "/metrics"}
}

// metric reads one unlabelled series from /metrics.
func (f *fullDiskStack) metric(name string) float64 {
	f.t.Helper()
	resp, err := http.Get(f.metrics)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				f.t.Fatalf("%s: %v", name, err)
			}
			return n
		}
	}
	f.t.Fatalf("/metrics has no %s", name)
	return 0
}

func (f *fullDiskStack) status(path string) int {
	f.t.Helper()
	return f.do(http.MethodGet, path, "", "").status
}

func (f *fullDiskStack) upstreamCalls() int64 {
	return mockCalls(f.t, f.alpha).Total + mockCalls(f.t, f.beta).Total
}

// fillUntilNotWritable fills the filesystem and sends chat requests until
// the ledger has seen a commit fail: SQLite may fit a few more commits into
// space its files already hold. It returns the answers of those requests
// that were served.
func (f *fullDiskStack) fillUntilNotWritable() (filler string, answered []response) {
	f.t.Helper()
	filler = testutil.FillFS(f.t, f.dir)
	deadline := time.Now().Add(30 * time.Second)
	for f.ledger.Writable() == nil {
		if time.Now().After(deadline) {
			f.t.Fatal("the ledger still commits on a full filesystem")
		}
		// A request may also be refused: a record's commit can fail after
		// the check above (its answer did not wait for it).
		switch r := f.chat(f.keyA, chatBody("chat-alpha", false, "")); r.status {
		case http.StatusOK:
			answered = append(answered, r)
		case http.StatusServiceUnavailable:
		default:
			f.t.Fatalf("while the disk fills: %d %s", r.status, r.body)
		}
	}
	return filler, answered
}

// recordless counts the answers that have no final usage record: none at
// all, or only the in_progress one (its Begin's row was committed before
// the disk filled, its Finish's batch failed: the final record is lost and
// counted as unrecorded, while the row stays in_progress until a restart
// marks it interrupted).
func (f *fullDiskStack) recordless(answers []response) uint64 {
	f.t.Helper()
	n := uint64(0)
	for _, r := range answers {
		rec, err := f.ledger.Get(context.Background(), r.header.Get("X-Request-Id"))
		switch {
		case errors.Is(err, usage.ErrNotFound), err == nil && rec.Status == usage.StatusInProgress:
			n++
		case err != nil:
			f.t.Fatalf("reading record: %v", err)
		}
	}
	return n
}

// With the ledger's filesystem full, chat requests (JSON and SSE) are
// refused with 503 usage_store_unavailable before any provider call and
// without a record (the one documented exception), readiness turns false,
// and both are visible in /metrics; once space is freed the ledger notices
// by itself and the same gateway process serves and records again.
func TestLedgerFullDiskRefusesChatAndRecovers(t *testing.T) {
	f := newFullDiskStack(t)
	first := f.chat(f.keyA, chatBody("chat-alpha", false, ""))
	if first.status != http.StatusOK {
		t.Fatalf("before the disk fills: %d %s", first.status, first.body)
	}
	filler, racing := f.fillUntilNotWritable()
	answered := append([]response{first}, racing...)

	calls := f.upstreamCalls()
	refusedBefore := f.metric("llmgw_usage_store_refused_requests_total")
	var refused []response
	for _, stream := range []bool{false, true} {
		r := f.chat(f.keyA, chatBody("chat-alpha", stream, ""))
		wantError(t, r, http.StatusServiceUnavailable, "internal_error", "usage_store_unavailable")
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("stream=%v: Content-Type %q", stream, ct)
		}
		if r.header.Get("Retry-After") == "" {
			t.Fatalf("stream=%v: 503 without Retry-After", stream)
		}
		refused = append(refused, r)
	}
	if got := f.upstreamCalls(); got != calls {
		t.Fatalf("a refused request reached a provider: %d upstream calls, want %d", got, calls)
	}
	if n := f.recordless(refused); n != uint64(len(refused)) {
		t.Fatalf("%d of %d refused requests have a record; the refusal writes none", uint64(len(refused))-n, len(refused))
	}
	if got := f.metric("llmgw_usage_store_refused_requests_total") - refusedBefore; got != float64(len(refused)) {
		t.Fatalf("llmgw_usage_store_refused_requests_total grew by %v, want %d", got, len(refused))
	}
	if got := f.metric("llmgw_usage_store_writable"); got != 0 {
		t.Fatalf("llmgw_usage_store_writable = %v on a full disk", got)
	}
	if c := f.status("/readyz"); c != http.StatusServiceUnavailable {
		t.Fatalf("/readyz = %d on a full disk, want 503", c)
	}
	if c := f.status("/health"); c != http.StatusServiceUnavailable {
		t.Fatalf("/health = %d on a full disk, want 503", c)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// Nothing but the ledger's own prober writes now: scraping the gauge
	// does no I/O, so the recovery is the ledger's doing.
	waitFor(t, 10*time.Second, func() bool { return f.metric("llmgw_usage_store_writable") == 1 })
	if c := f.status("/readyz"); c != http.StatusOK {
		t.Fatalf("/readyz = %d after space was freed", c)
	}
	// Every request answered before the failure was known has its record
	// (a final record already in the journal is written once the disk
	// takes writes again) or is counted as unrecorded, nothing in between.
	if lost, counted := f.recordless(answered), f.metric("llmgw_usage_unrecorded_requests_total"); float64(lost) != counted {
		t.Fatalf("%d answered requests have no record, llmgw_usage_unrecorded_requests_total = %v", lost, counted)
	}
	for _, stream := range []bool{false, true} {
		r := f.chat(f.keyA, chatBody("chat-alpha", stream, ""))
		if r.status != http.StatusOK {
			t.Fatalf("stream=%v after recovery: %d %s", stream, r.status, r.body)
		}
		if rec := f.record(r.header.Get("X-Request-Id")); rec.Status != "success" || rec.Stream != stream {
			t.Fatalf("record after recovery: %+v", rec)
		}
	}
	if got := f.upstreamCalls(); got != calls+2 {
		t.Fatalf("%d upstream calls after recovery, want %d", got, calls+2)
	}
	// The writer's throughput series count what it did, failed batches too.
	ops, txs := f.metric("llmgw_usage_ledger_operations_total"), f.metric("llmgw_usage_ledger_transactions_total")
	if txs < 1 || ops < txs || f.metric("llmgw_usage_ledger_queued_operations") < 0 {
		t.Fatalf("ledger operations %v in %v transactions: want at least one operation a transaction", ops, txs)
	}
}

// Fail-open (llmgw gateway --ledger-fail-open): with the filesystem full,
// chat requests are still served, stay ready, and every one of them is
// counted in llmgw_usage_unrecorded_requests_total, since none has a record.
func TestLedgerFullDiskFailOpenServesAndCounts(t *testing.T) {
	f := newFullDiskStack(t)
	f.srv.SetLedgerFailOpenForTest(true)
	filler, racing := f.fillUntilNotWritable()
	unrecordedBefore := f.metric("llmgw_usage_unrecorded_requests_total")
	if lost := f.recordless(racing); float64(lost) != unrecordedBefore {
		t.Fatalf("%d answered requests have no record, llmgw_usage_unrecorded_requests_total = %v", lost, unrecordedBefore)
	}

	calls := f.upstreamCalls()
	var served []response
	for _, stream := range []bool{false, true} {
		r := f.chat(f.keyA, chatBody("chat-alpha", stream, ""))
		if r.status != http.StatusOK {
			t.Fatalf("stream=%v fail-open on a full disk: %d %s", stream, r.status, r.body)
		}
		if stream {
			if s := summarize(t, sseEvents(t, r.body)); s.done != 1 || !s.doneIsLast || s.content == "" {
				t.Fatalf("stream fail-open: %+v", s)
			}
		}
		served = append(served, r)
	}
	if got := f.upstreamCalls(); got != calls+2 {
		t.Fatalf("%d upstream calls, want %d", got, calls+2)
	}
	if n := f.recordless(served); n != uint64(len(served)) {
		t.Fatalf("only %d of %d served requests lack a record on a full disk", n, len(served))
	}
	if got := f.metric("llmgw_usage_unrecorded_requests_total") - unrecordedBefore; got != float64(len(served)) {
		t.Fatalf("llmgw_usage_unrecorded_requests_total grew by %v, want %d", got, len(served))
	}
	if got := f.metric("llmgw_usage_store_refused_requests_total"); got != 0 {
		t.Fatalf("fail-open refused %v requests", got)
	}
	if c := f.status("/readyz"); c != http.StatusOK {
		t.Fatalf("/readyz = %d fail-open, want 200", c)
	}
	var h struct {
		Status     string `json:"status"`
		UsageStore string `json:"usage_store"`
	}
	getJSONInto(t, f.gw.URL+"/health", &h)
	if h.Status != "degraded" || h.UsageStore != "unavailable" {
		t.Fatalf("/health fail-open on a full disk: %+v", h)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool { return f.metric("llmgw_usage_store_writable") == 1 })
	r := f.chat(f.keyA, chatBody("chat-alpha", false, ""))
	if rec := f.record(r.header.Get("X-Request-Id")); r.status != http.StatusOK || rec.Status != "success" {
		t.Fatalf("after recovery: %d, record %+v", r.status, rec)
	}
}

func getJSONInto(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
