package usage

import (
	"strconv"
	"testing"
)

// The writer's page cache is bounded: SQLite's default (2,000 KiB) filled
// up under a long run and stayed resident outside the Go heap.
func TestWriterPageCacheIsBounded(t *testing.T) {
	l := openTest(t, Options{})
	var got int
	if err := l.wc.QueryRowContext(ctxT(t), "PRAGMA cache_size").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want, _ := strconv.Atoi(writerCacheSize); got != want {
		t.Fatalf("writer cache_size %d, want %d (KiB when negative)", got, want)
	}
}
