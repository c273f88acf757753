package usage

import (
	"context"
	"os"
	"testing"
	"time"
)

// The writer never checkpoints (its commits stay fsync-free): committed
// records reach the main database file only through the background
// checkpointer. Without it the main file would stay at its schema size.
func TestBackgroundCheckpoint(t *testing.T) {
	l := openTest(t, Options{})
	ctx := context.Background()
	schemaOnly := fileSize(t, l.Path())
	for i := 0; i < 1000; i++ {
		id := NewRequestID()
		l.Begin(Record{RequestID: id, KeyID: "k", Alias: "some-alias", Provider: "p", ProviderModel: "m"})
		if err := l.Finish(ctx, Record{RequestID: id, KeyID: "k", Status: StatusSuccess, HTTPStatus: 200,
			Attempts: []Attempt{{Provider: "p", Model: "m", Outcome: OutcomeOK, StatusCode: 200}}}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * checkpointInterval)
	for fileSize(t, l.Path()) < schemaOnly+100<<10 {
		if time.Now().After(deadline) {
			t.Fatalf("main database file still %d bytes (schema only: %d): no background checkpoint", fileSize(t, l.Path()), schemaOnly)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
