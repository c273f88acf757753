package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type ev struct{ typ, data string }

// collect reads every event; the error is the one that ended the stream.
func collect(r *Reader) ([]ev, error) {
	var out []ev
	for {
		e, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, ev{string(e.Type), string(e.Data)})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []ev
		err  error
	}{
		{"empty", "", nil, io.EOF},
		{"one data", "data: hello\n\n", []ev{{"", "hello"}}, io.EOF},
		{"no space after colon", "data:hello\n\n", []ev{{"", "hello"}}, io.EOF},
		{"only one space stripped", "data:  two\n\n", []ev{{"", " two"}}, io.EOF},
		{"named event", "event: message_start\ndata: {}\n\n", []ev{{"message_start", "{}"}}, io.EOF},
		{"multi-line data", "data: a\ndata: b\ndata:\n\n", []ev{{"", "a\nb\n"}}, io.EOF},
		{"crlf", "event: x\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n", []ev{{"x", "1"}, {"", "2"}}, io.EOF},
		{"bare cr", "data: 1\r\rdata: 2\r\r", []ev{{"", "1"}, {"", "2"}}, io.EOF},
		{"comments ignored", ": keep-alive\n:\ndata: x\n: mid\n\n", []ev{{"", "x"}}, io.EOF},
		{"id and retry ignored", "id: 7\nretry: 10\ndata: x\n\n", []ev{{"", "x"}}, io.EOF},
		{"unknown field ignored", "foo: bar\ndata: x\n\n", []ev{{"", "x"}}, io.EOF},
		{"field without colon", "data\n\n", []ev{{"", ""}}, io.EOF},
		{"event without data dropped", "event: ping\n\ndata: x\n\n", []ev{{"", "x"}}, io.EOF},
		{"type resets after dispatch", "event: a\ndata: 1\n\ndata: 2\n\n", []ev{{"a", "1"}, {"", "2"}}, io.EOF},
		{"last event type wins", "event: a\nevent: b\ndata: 1\n\n", []ev{{"b", "1"}}, io.EOF},
		{"bom stripped", "\xEF\xBB\xBFdata: x\n\n", []ev{{"", "x"}}, io.EOF},
		{"blank lines between events", "\n\n\ndata: x\n\n\n\n", []ev{{"", "x"}}, io.EOF},
		{"done marker", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []ev{{"", `{"a":1}`}, {"", "[DONE]"}}, io.EOF},
		{"undispatched event at eof", "data: x\n\ndata: y\n", []ev{{"", "x"}}, io.ErrUnexpectedEOF},
		{"partial line at eof", "data: x\n\ndata: y", []ev{{"", "x"}}, io.ErrUnexpectedEOF},
		{"trailing comment is clean", "data: x\n\n: bye\n", []ev{{"", "x"}}, io.EOF},
		{"colon in value kept", "data: a:b\n\n", []ev{{"", "a:b"}}, io.EOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []string{"whole", "onebyte", "smallbuf"} {
				var r *Reader
				switch mode {
				case "whole":
					r = NewReader(strings.NewReader(tc.in))
				case "onebyte":
					r = NewReader(iotest.OneByteReader(strings.NewReader(tc.in)))
				case "smallbuf":
					r = NewReaderSize(iotest.HalfReader(strings.NewReader(tc.in)), 16, DefaultMaxEventSize)
				}
				got, err := collect(r)
				if !equal(got, tc.want) || err != tc.err {
					t.Fatalf("%s: got %q, %v; want %q, %v", mode, got, err, tc.want, tc.err)
				}
				if _, err2 := r.Next(); err2 != err {
					t.Fatalf("%s: error not sticky: %v then %v", mode, err, err2)
				}
			}
		})
	}
}

func equal(a, b []ev) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestLongLineAcrossBuffer(t *testing.T) {
	long := strings.Repeat("x", 10000)
	r := NewReaderSize(strings.NewReader("data: "+long+"\n\ndata: short\n\n"), 16, DefaultMaxEventSize)
	got, err := collect(r)
	if err != io.EOF || len(got) != 2 || got[0].data != long || got[1].data != "short" {
		t.Fatalf("got %d events, %v", len(got), err)
	}
}

func TestMaxEventSize(t *testing.T) {
	max := 100
	tests := []struct {
		name string
		in   string
		ok   int // events before the error
	}{
		{"data lines add up", "data: ok\n\n" + strings.Repeat("data: "+strings.Repeat("a", 30)+"\n", 4) + "\n", 1},
		{"one long line", "data: ok\n\ndata: " + strings.Repeat("a", 500) + "\n\n", 1},
		{"endless line", "data: " + strings.Repeat("a", 5000), 0},
		{"endless comment", ":" + strings.Repeat("a", 5000) + "\n", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, bufSize := range []int{16, 4096} {
				r := NewReaderSize(strings.NewReader(tc.in), bufSize, max)
				got, err := collect(r)
				if !errors.Is(err, ErrEventTooLarge) || len(got) != tc.ok {
					t.Fatalf("buf %d: got %d events, %v", bufSize, len(got), err)
				}
			}
		})
	}
	// Exactly at the limit is fine.
	r := NewReaderSize(strings.NewReader("data: "+strings.Repeat("a", max)+"\n\n"), 16, max)
	if got, err := collect(r); err != io.EOF || len(got) != 1 {
		t.Fatalf("at limit: %d events, %v", len(got), err)
	}
}

func TestReadErrorPassedThrough(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader("data: x\n\ndata: y\n"), iotest.ErrReader(boom)))
	got, err := collect(r)
	if err != boom || len(got) != 1 {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestReset(t *testing.T) {
	r := NewReader(strings.NewReader("data: partial"))
	if _, err := collect(r); err != io.ErrUnexpectedEOF {
		t.Fatal(err)
	}
	r.Reset(strings.NewReader("event: e\ndata: fresh\n\n"))
	got, err := collect(r)
	if err != io.EOF || !equal(got, []ev{{"e", "fresh"}}) {
		t.Fatalf("got %q, %v", got, err)
	}
}

func BenchmarkParse(b *testing.B) {
	chunk := []byte("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word\"},\"finish_reason\":null}]}\n\n")
	in := bytes.Repeat(chunk, 1000)
	rd := bytes.NewReader(in)
	r := NewReader(rd)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(in)
		r.Reset(rd)
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
}
