package logbuf

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// sink records every write it gets, as the output a Writer batches into.
type sink struct {
	mu     sync.Mutex
	writes []string
	err    error
}

func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes = append(s.writes, string(p))
	return len(p), s.err
}

func (s *sink) all() (writes int, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.writes), strings.Join(s.writes, "")
}

func TestWriterBatchesUntilFlush(t *testing.T) {
	for _, tc := range []struct {
		name       string
		interval   time.Duration
		lines      int
		wantBefore int // writes the output saw before Flush
	}{
		{"an interval holds the lines", time.Hour, 3, 0},
		{"no interval writes each line", 0, 3, 3},
		{"a full buffer is written at once", time.Hour, MaxBuffer/100 + 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out sink
			w := New(&out, tc.interval)
			var want strings.Builder
			for i := range tc.lines {
				line := fmt.Sprintf("%099d\n", i) // 100 bytes
				want.WriteString(line)
				if n, err := w.Write([]byte(line)); n != len(line) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if n, _ := out.all(); n != tc.wantBefore {
				t.Fatalf("%d writes before Flush, want %d", n, tc.wantBefore)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if _, text := out.all(); text != want.String() {
				t.Fatalf("output after Flush is not every line in order:\n%q", text)
			}
		})
	}
}

func TestWriterWritesWithinTheInterval(t *testing.T) {
	var out sink
	w := New(&out, 20*time.Millisecond)
	_, _ = w.Write([]byte("one\n"))
	_, _ = w.Write([]byte("two\n"))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if n, text := out.all(); n > 0 {
			if n != 1 || text != "one\ntwo\n" {
				t.Fatalf("%d writes %q, want both lines in one", n, text)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing written 10 s after the lines")
		}
	}
	// The timer is armed again by the next line.
	_, _ = w.Write([]byte("three\n"))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, text := out.all(); text == "one\ntwo\nthree\n" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the line after a flush was never written")
		}
	}
}

func TestFlushReportsTheOutputsError(t *testing.T) {
	out := sink{err: errors.New("disk gone")}
	w := New(&out, time.Hour)
	_, _ = w.Write([]byte("x\n"))
	if err := w.Flush(); err == nil || err.Error() != "disk gone" {
		t.Fatalf("Flush = %v, want the output's error", err)
	}
	if err := w.Flush(); err != nil {
		t.Fatalf("second Flush = %v: the error was reported once", err)
	}
}

func TestWarnWritesEverythingBeforeIt(t *testing.T) {
	var out sink
	w := New(&out, time.Hour)
	log := slog.New(Handler(slog.NewJSONHandler(w, nil), w)).With("component", "test").WithGroup("g")
	log.Info("first")
	log.Info("second")
	if n, _ := out.all(); n != 0 {
		t.Fatalf("Info lines written at once (%d writes)", n)
	}
	log.Warn("trouble")
	n, text := out.all()
	if n != 1 {
		t.Fatalf("%d writes after a Warn, want the three lines in one", n)
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"msg":"first"`) || !strings.Contains(lines[2], `"msg":"trouble"`) ||
		!strings.Contains(lines[2], `"component":"test"`) {
		t.Fatalf("lines out of order or not from the wrapped handler:\n%s", text)
	}
	log.Error("worse")
	if n, _ := out.all(); n != 2 {
		t.Fatalf("an Error was not written at once")
	}
}

func TestConcurrentLinesStayWhole(t *testing.T) {
	var out bytes.Buffer
	w := New(&out, time.Millisecond)
	log := slog.New(Handler(slog.NewTextHandler(w, nil), w))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				log.Info("line", "g", g, "i", i)
			}
		})
	}
	wg.Wait()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock() // the timer may still run a last, empty Flush
	defer w.mu.Unlock()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 8*500 {
		t.Fatalf("%d lines, want %d", len(lines), 8*500)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "time=") || !strings.Contains(l, " msg=line g=") {
			t.Fatalf("a line torn apart: %q", l)
		}
	}
}
