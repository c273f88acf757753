package sse

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// stutterReader returns its input in reads of a repeating pattern of sizes,
// so some reads fill the buffer they are given and some leave room.
type stutterReader struct {
	src []byte
	i   int
}

var stutter = []int{1, 40, 3, 200, 17, 5000, 2, 9}

func (s *stutterReader) Read(p []byte) (int, error) {
	if len(s.src) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(s.src), stutter[s.i%len(stutter)])
	s.i++
	copy(p, s.src[:n])
	s.src = s.src[n:]
	return n, nil
}

// sizeRecorder serves scripted reads and records the buffer size each read
// was given.
type sizeRecorder struct {
	reads []string
	sizes []int
}

func (s *sizeRecorder) Read(p []byte) (int, error) {
	s.sizes = append(s.sizes, len(p))
	if len(s.reads) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.reads[0])
	if n < len(s.reads[0]) {
		s.reads[0] = s.reads[0][n:]
	} else {
		s.reads = s.reads[1:]
	}
	return n, nil
}

// A read that will probably wait for the model gets the small buffer; a
// stream's first read and a read after one that filled its buffer get the
// large one. What reaches Next is the same either way.
func TestWaitingReadsGetTheSmallBuffer(t *testing.T) {
	event := "data: " + strings.Repeat("x", 100) + "\n\n" // 108 B
	burst := strings.Repeat(event, 50)                    // 5,400 B: more than the large buffer
	src := &sizeRecorder{reads: []string{burst, event, event, strings.Repeat(event, 6), event}}
	r := NewReader(src)
	n := 0
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if string(ev.Data) != strings.Repeat("x", 100) {
			t.Fatalf("event %d: %q", n, ev.Data)
		}
		n++
	}
	if want := 50 + 2 + 6 + 1; n != want {
		t.Fatalf("%d events, want %d", n, want)
	}
	// The sizes follow from the rule (the leftover of a read that filled
	// its buffer shrinks the next one's room):
	//   4096: the stream's first read, filled;
	//   4096 - leftover: the rest of the burst, room left (drained);
	//   512:  waits, gets one event, room left;
	//   512:  waits, gets one event;
	//   512:  waits, gets 512 of a 648 B burst: filled, so
	//   4096 - leftover: the burst's rest, room left;
	//   512, 512: the last event, then the end.
	small, large := smallSize(defaultBufSize), defaultBufSize
	want := []bool{true, true, false, false, false, true, false, false} // large?
	if len(src.sizes) != len(want) {
		t.Fatalf("reads got buffers of %v, want %d reads", src.sizes, len(want))
	}
	for i, sz := range src.sizes {
		if isLarge := sz > small; isLarge != want[i] || sz > large {
			t.Fatalf("read %d got %d B (all: %v); want large=%v (small %d, large %d)", i, sz, src.sizes, want[i], small, large)
		}
	}
	if r.in.inLarge {
		t.Fatal("the large buffer is still held after the stream ended")
	}
}

// A line longer than the small buffer moves to the large one mid-line.
func TestLongLineLeavesTheSmallBuffer(t *testing.T) {
	long := "data: " + strings.Repeat("y", 3000) + "\n\n"
	src := &sizeRecorder{reads: []string{"data: a\n\n", long[:100], long[100:]}}
	r := NewReader(src)
	for _, want := range []string{"a", strings.Repeat("y", 3000)} {
		ev, err := r.Next()
		if err != nil || string(ev.Data) != want {
			t.Fatalf("got %.20q, %v; want %.20q", ev.Data, err, want)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}

// Reset gives the large buffer back: a pooled Reader keeps only its small
// one between streams.
func TestResetReleasesTheLargeBuffer(t *testing.T) {
	r := NewReader(bytes.NewReader(bytes.Repeat([]byte("data: z\n\n"), 1000)))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if !r.in.inLarge {
		t.Fatal("a stream's first read should use the large buffer")
	}
	r.Reset(nil)
	if r.in.inLarge || len(r.in.buf) != smallSize(defaultBufSize) {
		t.Fatalf("after Reset: large %v, buffer %d B", r.in.inLarge, len(r.in.buf))
	}
}
