package usage

import (
	"database/sql/driver"
	"reflect"
	"testing"
	"time"
)

// TestRowArgsKeepRepeatedValues: the writer's argument list for a row is the
// list a fresh one would be, and a column that repeats from the previous row
// costs no allocation; only the values that change (the request id, the
// times) are stored anew.
func TestRowArgsKeepRepeatedValues(t *testing.T) {
	row := func(id string, at time.Time) *op {
		r := finalRecord(id, "key-a")
		r.CreatedAt, r.FinishedAt, r.Cost, r.Currency = at, at.Add(3*time.Millisecond), 123456789, "USD"
		return &op{kind: opFinish, rec: r, attempts: encodeAttempts(r.Attempts)}
	}
	t0 := time.Date(2026, 12, 4, 21, 0, 0, 0, time.UTC)
	a, b := row("req_a", t0), row("req_b", t0.Add(time.Second))
	want := func(o *op, fin int64) []any {
		r := &o.rec
		return []any{r.RequestID, r.ClientRequestID, r.KeyID, r.KeyFingerprint, r.Alias, r.Provider, r.ProviderModel,
			r.Status, int64(r.HTTPStatus), r.ErrorType, int64(r.Fallbacks), o.attempts, r.Stream,
			int64(r.InputTokens), int64(r.OutputTokens), int64(r.CachedInputTokens), int64(r.ReasoningTokens), int64(r.Cost), r.Currency,
			r.LatencyMs, toMicros(r.CreatedAt), fin}
	}

	args := insertArgs(nil, a, toMicros(a.rec.FinishedAt))
	if got := argValues(args); !reflect.DeepEqual(got, want(a, toMicros(a.rec.FinishedAt))) {
		t.Fatalf("insert arguments\n got %#v\nwant %#v", got, want(a, toMicros(a.rec.FinishedAt)))
	}
	for i, v := range args {
		if v.Ordinal != i+1 {
			t.Fatalf("argument %d has ordinal %d", i, v.Ordinal)
		}
	}
	b.kind = opBegin // an in_progress row: finished_at_us NULL whatever is passed
	args = insertArgs(args, b, 12345)
	if got, w := argValues(args), want(b, 0); !reflect.DeepEqual(got[:21], w[:21]) || got[21] != nil {
		t.Fatalf("second row's arguments\n got %#v\nwant %#v with NULL finished_at_us", got, w)
	}

	// The update's list: the same record columns, then finished_at_us and
	// the request id of its WHERE.
	b.kind = opFinish
	st := writerStmts{args: &args}
	upd := argValues(st.finishArgs(b, 777))
	wantUpd := append(append([]any{}, want(b, 777)[1:20]...), int64(777), b.rec.RequestID) // client_request_id … latency_ms
	if !reflect.DeepEqual(upd, wantUpd) {
		t.Fatalf("update arguments\n got %#v\nwant %#v", upd, wantUpd)
	}

	// Rows b and c differ in the request id and the two times: three
	// allocations (a string and two int64s of 256 and more), not one for
	// every string and large number as a fresh list pays.
	c := row("req_c", t0.Add(2*time.Second))
	fin := toMicros(c.rec.FinishedAt)
	args = insertArgs(args, c, fin)
	n := testing.AllocsPerRun(100, func() {
		c.rec.RequestID = string([]byte("req_c")) // a new string each run, as every row has
		c.rec.CreatedAt = c.rec.CreatedAt.Add(time.Microsecond)
		fin++
		args = insertArgs(args, c, fin)
	})
	if n > 4 { // the request id's copy, its box, and the two times' boxes
		t.Fatalf("%.0f allocations for a row that repeats all but its id and times; want ≤ 4", n)
	}
	if fresh := testing.AllocsPerRun(100, func() { _ = insertArgs(make([]driver.NamedValue, 0, 22), c, fin) }); fresh < n+4 {
		t.Fatalf("a fresh list took %.0f allocations against %.0f reused: the test no longer sees the boxing", fresh, n)
	}
}
