package usage

import (
	"testing"
	"time"
)

// While the writer gathers journaled ops (Options.BatchDelay), a full batch
// must end the wait, or rows would wait out the whole delay however many
// pile up.
func TestGatherEndsWhenAFullBatchIsQueued(t *testing.T) {
	opts := finishJournalOpts() // an hour-long batch delay
	opts.MaxBatch = 4
	l := openTest(t, opts)
	ctx := ctxT(t)
	request := func() string {
		id := NewRequestID()
		created := time.Now()
		l.Begin(Record{RequestID: id, KeyID: "key-a", CreatedAt: created})
		r := finalRecord(id, "key-a")
		r.CreatedAt = created
		if err := l.Finish(ctx, r); err != nil {
			t.Fatal(err)
		}
		return id
	}
	ids := []string{request()}
	// The writer takes the first ops and starts gathering; only then does
	// the rest arrive, so no batch is full when it starts.
	waitUntil(t, 10*time.Second, "the writer takes the first ops", func() bool { return l.Stats().Queued == 0 })
	for range 2 * opts.MaxBatch {
		ids = append(ids, request())
	}
	waitUntil(t, 10*time.Second, "a full batch committed", func() bool { return l.Stats().Batches > 0 })
	// A read ends the gathering too, with every row committed.
	for _, id := range ids {
		got, err := l.Get(ctx, id)
		if err != nil || got.Status != StatusSuccess {
			t.Fatalf("record %s: %+v, %v; want it final", id, got, err)
		}
	}
}
