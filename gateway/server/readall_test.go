package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadAllSizesFromTheLength: a body of known length is read into one
// buffer of its size (one byte more, for the end), whatever the reads'
// sizes; without a length, or with a wrong one, all of it still arrives.
func TestReadAllSizesFromTheLength(t *testing.T) {
	body := strings.Repeat("0123456789abcdef", 1500) // 24,000 bytes
	for _, c := range []struct {
		name    string
		r       io.Reader
		length  int64
		wantCap int // 0: any
	}{
		{"known length", strings.NewReader(body), int64(len(body)), len(body) + 1},
		{"known length, one byte a read", iotest.OneByteReader(strings.NewReader(body)), int64(len(body)), len(body) + 1},
		{"known length, data and EOF together", iotest.DataErrReader(strings.NewReader(body)), int64(len(body)), len(body) + 1},
		{"empty body", strings.NewReader(""), 0, 1},
		{"chunked (no length)", strings.NewReader(body), -1, 0},
		{"a length too short", strings.NewReader(body), 100, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := readAll(c.r, c.length)
			if err != nil || !bytes.Equal(got, []byte(body[:len(got)])) || (c.length != 0 && len(got) != len(body)) {
				t.Fatalf("readAll = %d bytes, %v; want the %d-byte body", len(got), err, len(body))
			}
			if c.wantCap != 0 && cap(got) != c.wantCap {
				t.Errorf("cap %d, want %d: the buffer grew", cap(got), c.wantCap)
			}
		})
	}
	boom := errors.New("boom")
	if _, err := readAll(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom)), 10); !errors.Is(err, boom) {
		t.Fatalf("a failing reader: %v, want boom", err)
	}
}

// TestReadBodyClosesTheBody: a body read to its end is closed, so net/http
// has nothing to look for when the response head is written (an open body
// costs a copy into io.Discard per request); what was read is intact.
func TestReadBodyClosesTheBody(t *testing.T) {
	const payload = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, e := readBody(w, r, 1<<20)
		if e != nil || string(body) != payload {
			http.Error(w, "read "+string(body), http.StatusBadRequest)
			return
		}
		if _, err := r.Body.Read(make([]byte, 1)); err == nil || err == io.EOF {
			http.Error(w, fmt.Sprintf("a read after readBody: %v, want the closed body's error", err), http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("%d %s", resp.StatusCode, msg)
	}
}
