package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/server"
)

// File is a snapshot file polled for changes. It must be valid at start; an
// invalid change later keeps the running snapshot.
type File struct {
	Path     string
	Interval time.Duration // poll interval; <= 0 means DefaultWatchInterval
	// CredentialsDir is the only directory `credential.file` references are
	// read from; "" means the snapshot file's directory.
	CredentialsDir string
}

// Credentials reads `credential.file` references below CredentialsDir.
func (f File) Credentials() server.CredentialSource {
	if f.CredentialsDir != "" {
		return fileCredentials{baseDir: f.CredentialsDir}
	}
	return fileCredentials{baseDir: filepath.Dir(f.Path)}
}

// Start applies the file's snapshot, then watches it in the background.
func (f File) Start(ctx context.Context, sink Sink) error {
	data, err := snapshot.ReadFile(f.Path)
	if err != nil {
		return fmt.Errorf("loading snapshot: %w", err)
	}
	snap, err := snapshot.Parse(data)
	if err != nil {
		return fmt.Errorf("loading snapshot: %s: %w", f.Path, err)
	}
	if err := sink.Apply(ctx, snap); err != nil {
		return fmt.Errorf("applying snapshot: %w", err)
	}
	// The watcher starts from the content just applied, so its first poll
	// delivers only a change made since.
	w := watcher{path: f.Path, onChange: func(s *snapshot.Snapshot) { _ = sink.Apply(ctx, s) }, onError: sink.ReportReloadError,
		valid: sha256.Sum256(data), hasRead: true}
	go w.run(ctx, f.Interval)
	return nil
}

// DefaultWatchInterval is used when a watcher is given a non-positive interval.
const DefaultWatchInterval = time.Second

// racyWindow: a file modified this close to our last read may have changed again
// within the file system's timestamp granularity without changing size or mtime,
// so its content is re-read rather than trusted (git's "racily clean" problem).
const racyWindow = 3 * time.Second

// run polls the watcher's path until ctx is done (it blocks; run it in a goroutine).
//
// A valid snapshot is delivered to onChange when the file's content differs
// from the last valid content (a watcher that starts from nothing delivers its
// first valid read; File.Start's starts from what it applied), or when valid
// content is back after a reported problem. Whether a delivery is a new
// version is the consumer's call (server.Apply decides it, for every source).
// An unreadable, missing or invalid file is reported to onError once it has been seen on two polls in a row (so an editor's
// non-atomic save, caught half-written, is not reported), and once only; the
// caller keeps the snapshot it has. Callbacks run on the watcher's goroutine, one
// at a time.
//
// Polling (stat, then a content hash when the stat changed) needs no inotify
// support, works for files replaced by rename and for Kubernetes' symlink swaps,
// and costs one stat per interval.
func (w *watcher) run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultWatchInterval
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		w.poll()
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

type watcher struct {
	path     string
	onChange func(*snapshot.Snapshot)
	onError  func(error)

	stat    os.FileInfo // at the last read; nil forces a read
	readAt  time.Time
	valid   [sha256.Size]byte // content of the last valid snapshot
	hasRead bool

	// A problem is identified by its error text or by the invalid content's hash.
	pending  string // seen on the last poll, not reported yet
	reported string // reported, not to be repeated while it persists
}

func (w *watcher) poll() {
	fi, err := os.Stat(w.path)
	if err != nil {
		w.stat = nil
		w.problem("error:"+err.Error(), err)
		return
	}
	if w.pending == "" && w.unchanged(fi) {
		return
	}
	data, err := snapshot.ReadFile(w.path)
	if err != nil {
		w.stat = nil
		w.problem("error:"+err.Error(), err)
		return
	}
	w.stat, w.readAt = fi, time.Now()
	sum := sha256.Sum256(data)
	// After a reported problem, valid content is delivered again even when it
	// is what the consumer runs, so the consumer can clear its error.
	recovered := w.reported != ""
	if w.hasRead && sum == w.valid && !recovered {
		w.pending = ""
		return
	}
	s, err := snapshot.Parse(data)
	if err != nil {
		w.problem("content:"+hex.EncodeToString(sum[:]), err)
		return
	}
	w.pending, w.reported = "", ""
	w.valid, w.hasRead = sum, true
	if w.onChange != nil {
		w.onChange(s)
	}
}

// unchanged trusts the stat only when it matches the last read in every respect
// and the file was last modified well before that read.
func (w *watcher) unchanged(fi os.FileInfo) bool {
	return w.stat != nil &&
		os.SameFile(fi, w.stat) &&
		fi.Size() == w.stat.Size() &&
		fi.ModTime().Equal(w.stat.ModTime()) &&
		w.readAt.Sub(fi.ModTime()) > racyWindow
}

// problem reports a problem the second time in a row it is seen, and only once.
func (w *watcher) problem(id string, err error) {
	switch id {
	case w.reported:
		return
	case w.pending:
		w.pending, w.reported = "", id
		if w.onError != nil {
			w.onError(fmt.Errorf("snapshot %s: %w", w.path, err))
		}
	default:
		w.pending = id
	}
}
