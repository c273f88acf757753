package usage

import (
	"runtime"
	"testing"

	"github.com/llmgw/llmgw/test/testutil"
)

// A Begin's Pending, which a stream's exchange keeps for the stream's whole
// life, must not keep the queued op (its copy of the record) alive once
// the insert is committed: about 0.5 KB per open stream.
func TestPendingDoesNotKeepItsRecord(t *testing.T) {
	l := openTest(t, Options{})
	const n = 2000
	rec := finalRecord("", "team-a/key-a")
	rec.Status = StatusInProgress
	ctx := ctxT(t) // one: each ctxT keeps a timer until the test ends
	held := make([]*Pending, 0, n)
	before := testutil.LiveHeap()
	for range n {
		r := rec
		r.RequestID = NewRequestID()
		p := l.Begin(r)
		if err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	after := testutil.LiveHeap()
	perPending := (after - before) / n
	t.Logf("heap retained: %d B per held Pending", perPending)
	if perPending > 300 {
		t.Fatalf("%d B of heap retained per held Pending, want at most 300 (the Pending, its channel and id, not the record)", perPending)
	}
	runtime.KeepAlive(held)
}
