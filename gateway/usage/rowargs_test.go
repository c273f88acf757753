package usage

import (
	"database/sql/driver"
	"reflect"
	"testing"
	"time"
)

// argValues are args' values in order, as database/sql takes them.
func argValues(args []driver.NamedValue) []any {
	vals := make([]any, len(args))
	for i, a := range args {
		vals[i] = a.Value
	}
	return vals
}

// TestRowArgsKeepRepeatedValues: the writer's argument list, reused from
// row to row, is for each row the list a fresh one would be.
func TestRowArgsKeepRepeatedValues(t *testing.T) {
	row := func(id string, at time.Time) *op {
		r := finalRecord(id, "key-a")
		r.CreatedAt, r.FinishedAt, r.Cost, r.Currency = at, at.Add(3*time.Millisecond), 123456789, "USD"
		r.Session, r.Group = "sess-"+id, "grp-"+id
		r.Owners = map[string]string{"team": "t-" + id}
		return &op{kind: opFinish, rec: r, attempts: encodeAttempts(r.Attempts), owners: encodeOwners(r.Owners)}
	}
	t0 := time.Date(2026, 12, 4, 21, 0, 0, 0, time.UTC)
	a, b := row("req_a", t0), row("req_b", t0.Add(time.Second))
	want := func(o *op, fin int64) []any {
		r := &o.rec
		return []any{r.RequestID, r.ClientRequestID, r.KeyID, r.KeyFingerprint, r.Alias, r.Provider, r.ProviderModel,
			r.Status, int64(r.HTTPStatus), r.ErrorType, int64(r.Fallbacks), o.attempts, r.Stream,
			int64(r.InputTokens), int64(r.OutputTokens), int64(r.CachedInputTokens), int64(r.ReasoningTokens), int64(r.Cost), r.Currency,
			r.LatencyMs, r.Endpoint, r.Session, r.Group, o.owners, toMicros(r.CreatedAt), fin}
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
	if got, w := argValues(args), want(b, 0); !reflect.DeepEqual(got[:25], w[:25]) || got[25] != nil {
		t.Fatalf("second row's arguments\n got %#v\nwant %#v with NULL finished_at_us", got, w)
	}

	// The update's list: the same record columns, then finished_at_us and
	// the request id of its WHERE.
	b.kind = opFinish
	st := writerStmts{args: &args}
	upd := argValues(st.finishArgs(b, 777))
	wantUpd := append(append([]any{}, want(b, 777)[1:24]...), int64(777), b.rec.RequestID) // client_request_id … owners
	if !reflect.DeepEqual(upd, wantUpd) {
		t.Fatalf("update arguments\n got %#v\nwant %#v", upd, wantUpd)
	}
}
