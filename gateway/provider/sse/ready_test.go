package sse

import (
	"io"
	"strings"
	"testing"
)

// chunked hands out its pieces one Read at a time, like a network.
type chunked struct {
	parts []string
	reads int
}

func (c *chunked) Read(p []byte) (int, error) {
	c.reads++
	if len(c.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	c.parts[0] = c.parts[0][n:]
	if c.parts[0] == "" {
		c.parts = c.parts[1:]
	}
	return n, nil
}

func TestReady(t *testing.T) {
	for _, c := range []struct {
		name  string
		parts []string
		// ready after the first Next returned the first event
		want bool
	}{
		{"second event in the same read", []string{"data: a\n\ndata: b\n\n"}, true},
		{"second event in the next read", []string{"data: a\n\n", "data: b\n\n"}, false},
		{"second event half there", []string{"data: a\n\ndata: b\n", "\n"}, false},
		{"only a comment follows", []string{"data: a\n\n: keep-alive\n\n", "data: b\n\n"}, false},
		{"a comment, then an event", []string{"data: a\n\n: keep-alive\n\ndata: b\n\n"}, true},
		{"event type then data", []string{"data: a\n\nevent: x\ndata: b\r\n\r\n"}, true},
		{"bare CR lines are not judged", []string{"data: a\n\ndata: b\r\r"}, false},
		{"data without colon", []string{"data: a\n\ndata\n\n"}, true},
		{"datum is not data", []string{"data: a\n\ndatum: b\n\n", "data: c\n\n"}, false},
		{"end of stream", []string{"data: a\n\n"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := &chunked{parts: append([]string(nil), c.parts...)}
			r := NewReaderSize(src, 4096, DefaultMaxEventSize)
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
			if got := r.Ready(); got != c.want {
				t.Fatalf("Ready = %v, want %v", got, c.want)
			}
			if !c.want {
				return
			}
			// Ready promised an event: reading it must not need another Read.
			before := src.reads
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
			if src.reads != before {
				t.Fatal("Next read from the source after Ready said true")
			}
		})
	}
	t.Run("after the end", func(t *testing.T) {
		r := NewReader(strings.NewReader("data: a\n\n"))
		r.Next()
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("Next = %v", err)
		}
		if !r.Ready() {
			t.Fatal("an ended stream is ready (Next returns at once)")
		}
	})
}
