package source

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
)

type watchLog struct {
	mu      sync.Mutex
	changes []*snapshot.Snapshot
	errs    []error
	events  chan struct{}
}

func startWatch(t *testing.T, path string) *watchLog {
	t.Helper()
	w := &watchLog{events: make(chan struct{}, 100)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchFile(ctx, path, 5*time.Millisecond,
			func(s *snapshot.Snapshot) {
				w.mu.Lock()
				w.changes = append(w.changes, s)
				w.mu.Unlock()
				w.events <- struct{}{}
			},
			func(err error) { w.mu.Lock(); w.errs = append(w.errs, err); w.mu.Unlock(); w.events <- struct{}{} })
	}()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

// wait blocks for the next callback; settle then checks that no further callback
// arrives for a while (many poll intervals).
func (w *watchLog) wait(t *testing.T) {
	t.Helper()
	select {
	case <-w.events:
	case <-time.After(5 * time.Second):
		t.Fatal("no callback")
	}
}

func (w *watchLog) settle(t *testing.T) (changes []*snapshot.Snapshot, errs []error) {
	t.Helper()
	select {
	case <-w.events:
		w.mu.Lock()
		defer w.mu.Unlock()
		t.Fatalf("unexpected callback: %d changes, errors %v", len(w.changes), w.errs)
	case <-time.After(200 * time.Millisecond):
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*snapshot.Snapshot(nil), w.changes...), append([]error(nil), w.errs...)
}

func writeSnapshot(t *testing.T, path string, s *snapshot.Snapshot) string {
	t.Helper()
	if err := snapshot.WriteFile(path, s); err != nil {
		t.Fatal(err)
	}
	return s.Version
}

func TestWatchFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snapshot.json")
	v1 := writeSnapshot(t, path, validSnapshot())
	w := startWatch(t, path)

	w.wait(t) // the first valid read is delivered
	changes, errs := w.settle(t)
	if len(changes) != 1 || changes[0].Version != v1 || len(errs) != 0 {
		t.Fatalf("initial: %d changes, errors %v", len(changes), errs)
	}

	// A valid change is delivered once.
	s2 := validSnapshot()
	s2.Keys[0].Disabled = true
	v2 := writeSnapshot(t, path, s2)
	w.wait(t)
	changes, _ = w.settle(t)
	if len(changes) != 2 || changes[1].Version != v2 || !changes[1].Keys[0].Disabled {
		t.Fatalf("after valid change: %d changes", len(changes))
	}

	// An invalid file is reported once, and never delivered.
	replaceFile(t, path, []byte(`{"limits":{"maxMessages":-1}}`))
	w.wait(t)
	changes, errs = w.settle(t)
	if len(changes) != 2 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "maxMessages") || !strings.Contains(errs[0].Error(), path) {
		t.Fatalf("after invalid file: %d changes, errors %v", len(changes), errs)
	}

	// The running content put back after a reported error is delivered again
	// (same version), so the consumer can clear the error it reported.
	b, _ := snapshot.Encode(s2.Clone())
	compact := strings.Join(strings.Fields(string(b)), "")
	replaceFile(t, path, []byte(compact))
	w.wait(t)
	changes, errs = w.settle(t)
	if len(changes) != 3 || changes[2].Version != v2 || len(errs) != 1 {
		t.Fatalf("re-formatted v2 after an error: %d changes, %d errors", len(changes), len(errs))
	}

	// The same bytes again, with no error in between: nothing to deliver.
	replaceFile(t, path, []byte(compact))
	changes, errs = w.settle(t)
	if len(changes) != 3 || len(errs) != 1 {
		t.Fatalf("same content again: %d changes, %d errors", len(changes), len(errs))
	}

	// Other bytes of the same version are delivered: whether that is a new
	// version is the sink's one rule (server.Apply), not the watcher's.
	replaceFile(t, path, b)
	w.wait(t)
	changes, errs = w.settle(t)
	if len(changes) != 4 || changes[3].Version != v2 || len(errs) != 1 {
		t.Fatalf("same version, other bytes: %d changes, %d errors", len(changes), len(errs))
	}

	// New valid content is delivered again.
	s3 := validSnapshot()
	s3.Limits.MaxMessages = 3
	v3 := writeSnapshot(t, path, s3)
	w.wait(t)
	if changes, _ = w.settle(t); len(changes) != 5 || changes[4].Version != v3 {
		t.Fatalf("after recovery: %d changes", len(changes))
	}
}

func TestWatchFileRecoversAfterInvalidAndMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snapshot.json")
	os.WriteFile(path, []byte(`{not json`), 0o644)
	w := startWatch(t, path)
	w.wait(t)
	if changes, errs := w.settle(t); len(changes) != 0 || len(errs) != 1 {
		t.Fatalf("invalid start: %d changes, errors %v", len(changes), errs)
	}

	os.Remove(path)
	w.wait(t)
	if _, errs := w.settle(t); len(errs) != 2 || !os.IsNotExist(unwrapAll(errs[1])) {
		t.Fatalf("missing file reported once: %v", errs)
	}

	v := writeSnapshot(t, path, validSnapshot())
	w.wait(t)
	if changes, _ := w.settle(t); len(changes) != 1 || changes[0].Version != v {
		t.Fatalf("recovery not delivered: %d changes", len(changes))
	}
}

// A half-written file seen by one poll is not an error: only a problem that
// persists to the next poll is reported.
func TestWatchIgnoresTransientPartialWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snapshot.json")
	full, err := snapshot.Encode(validSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	var changes, errs int
	w := watcher{path: path, onChange: func(*snapshot.Snapshot) { changes++ }, onError: func(error) { errs++ }}
	os.WriteFile(path, full[:len(full)/2], 0o644)
	w.poll()
	os.WriteFile(path, full, 0o644)
	w.poll()
	w.poll()
	if changes != 1 || errs != 0 {
		t.Fatalf("%d changes, %d errors; want 1, 0", changes, errs)
	}
	os.WriteFile(path, full[:len(full)/2], 0o644)
	w.poll()
	w.poll()
	w.poll()
	if changes != 1 || errs != 1 {
		t.Fatalf("persistent partial file: %d changes, %d errors; want 1, 1", changes, errs)
	}
	// Fixing the file delivers it again (the error is over); breaking it the
	// same way again is a new problem.
	os.WriteFile(path, full, 0o644)
	w.poll()
	os.WriteFile(path, full[:len(full)/2], 0o644)
	w.poll()
	w.poll()
	if changes != 2 || errs != 2 {
		t.Fatalf("broken again: %d changes, %d errors; want 2, 2", changes, errs)
	}
}

func unwrapAll(err error) error {
	for {
		type unwrapper interface{ Unwrap() error }
		u, ok := err.(unwrapper)
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

// replaceFile swaps in new content by rename, as editors and Kubernetes do,
// so that a poll never sees a torn write (TestWatchIgnoresTransientPartialWrite
// covers torn writes on purpose).
func replaceFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// recordingSink counts what a source delivers.
type recordingSink struct {
	mu      sync.Mutex
	applied []string
	errs    []error
}

func (r *recordingSink) Apply(_ context.Context, s *snapshot.Snapshot) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.applied = append(r.applied, s.Version)
	return nil
}
func (r *recordingSink) ReportReloadError(err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
}
func (r *recordingSink) Refresh(context.Context) error { return nil }
func (r *recordingSink) Version() string               { return "" }
func (r *recordingSink) count() int                    { r.mu.Lock(); defer r.mu.Unlock(); return len(r.applied) }

// File.Start applies the file once; its watcher then delivers only changes
// made since, so it never re-applies the start content over a newer
// snapshot someone applied in between.
func TestFileStartDeliversOnlyLaterChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snapshot.json")
	v1 := writeSnapshot(t, path, validSnapshot())
	sink := &recordingSink{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := (File{Path: path, Interval: 5 * time.Millisecond}).Start(ctx, sink); err != nil {
		t.Fatal(err)
	}
	if n := sink.count(); n != 1 || sink.applied[0] != v1 {
		t.Fatalf("after Start: %v, want [%s]", sink.applied, v1)
	}
	// A rewrite with the same bytes moves mtime; the watcher must re-read it,
	// find the content it started from, and deliver nothing.
	b, _ := os.ReadFile(path)
	replaceFile(t, path, b)
	time.Sleep(100 * time.Millisecond) // twenty poll intervals: a delivery would show
	if n := sink.count(); n != 1 {
		t.Fatalf("the unchanged start content was delivered again: %v", sink.applied)
	}
	s2 := validSnapshot()
	s2.Keys[0].Disabled = true
	v2 := writeSnapshot(t, path, s2)
	deadline := time.Now().Add(5 * time.Second)
	for sink.count() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("a later change was not delivered")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if sink.applied[1] != v2 {
		t.Fatalf("delivered %v, want [%s %s]", sink.applied, v1, v2)
	}
}

// watchFile runs a watcher on path from scratch (no content applied yet).
func watchFile(ctx context.Context, path string, interval time.Duration, onChange func(*snapshot.Snapshot), onError func(error)) {
	w := watcher{path: path, onChange: onChange, onError: onError}
	w.run(ctx, interval)
}
