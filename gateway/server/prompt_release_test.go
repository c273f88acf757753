package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/test/testutil"
)

// An open stream keeps no copy of its prompt: not the parsed messages (no
// other route is tried after the commit point), nor the encoded body, which
// the transport's request holds until the answer ends but whose bytes are
// let go once sent.
func TestOpenStreamDoesNotKeepThePrompt(t *testing.T) {
	const streams, prompt = 32, 190_000
	var release atomic.Pointer[chan struct{}]
	opened := make(chan struct{}, streams)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		rel := *release.Load()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(oaiChunk("one")))
		w.(http.Flusher).Flush()
		opened <- struct{}{}
		select {
		case <-rel:
		case <-time.After(30 * time.Second):
		}
		_, _ = w.Write([]byte(oaiEnd))
	}))
	t.Cleanup(up.Close)
	h := newHarness(t, withUpstream(up.URL))
	addr := strings.TrimPrefix(h.gw.URL, "http://")

	// held is the heap that streams open streams with a prompt of chars
	// characters hold once each has sent its first content.
	held := func(chars int) int64 {
		rel := make(chan struct{})
		release.Store(&rel)
		body := fmt.Sprintf(`{"model":"chat-raw","stream":true,"messages":[{"role":"user","content":"%s"}]}`, strings.Repeat("a", chars))
		req := []byte(fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", h.keyA, len(body), body))
		before := testutil.LiveHeap()
		var conns []net.Conn
		var bodies []io.ReadCloser
		for range streams {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			_ = c.SetDeadline(time.Now().Add(30 * time.Second))
			if _, err := c.Write(req); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("response %v, %v", resp, err)
			}
			var seen []byte
			for !strings.Contains(string(seen), `"content":"one"`) {
				buf := make([]byte, 512)
				n, err := resp.Body.Read(buf)
				if err != nil {
					close(rel)
					t.Fatalf("before the first content: %q, %v", seen, err)
				}
				seen = append(seen, buf[:n]...)
			}
			bodies = append(bodies, resp.Body)
			<-opened
		}
		after := testutil.LiveHeap()
		close(rel)
		for i := range conns {
			_, _ = io.Copy(io.Discard, bodies[i])
			_ = conns[i].Close()
		}
		runtime.KeepAlive(req)
		return after - before
	}
	held(10) // the upstream connections both measures then reuse
	small := held(10)
	big := held(prompt)
	perStream := (big - small) / streams
	t.Logf("a %d-character prompt: %d B more held per open stream", prompt, perStream)
	if perStream > prompt/2 {
		t.Fatalf("%d B held per open stream for a %d-byte prompt: half a copy or more", perStream, prompt)
	}
}
