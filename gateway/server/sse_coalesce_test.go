package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
)

func oaiChunk(text string) string {
	return `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"` + text + `"},"finish_reason":null}]}` + "\n\n"
}

const oaiEnd = `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" + "data: [DONE]\n\n"

// rawStream posts a streaming chat request over a raw connection and returns
// the HTTP chunks of the response body as the gateway flushed them (one
// chunk per flush under chunked encoding), calling onChunk after each.
func rawStream(t *testing.T, gwURL, key, model string, onChunk func(string)) []string {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(gwURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	body := `{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", key, len(body), body)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.TransferEncoding == nil {
		t.Fatalf("status %d, transfer encoding %v", resp.StatusCode, resp.TransferEncoding)
	}
	var chunks []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading a chunk size: %v (chunks so far %q)", err, chunks)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
		if err != nil {
			t.Fatalf("chunk size %q: %v", line, err)
		}
		if n == 0 {
			return chunks
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(br, b); err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, string(b[:n]))
		if onChunk != nil {
			onChunk(string(b[:n]))
		}
	}
}

func streamingUpstream(t *testing.T, h func(w http.ResponseWriter)) string {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		h(w)
	}))
	t.Cleanup(up.Close)
	return up.URL
}

func withUpstream(url string) func(*snapshot.Snapshot) {
	return func(s *snapshot.Snapshot) {
		s.Providers = append(s.Providers, snapshot.Provider{Name: "raw", Protocol: snapshot.ProtocolOpenAI, BaseURL: url})
		s.Aliases = append(s.Aliases, snapshot.Alias{Name: "chat-raw", Primary: snapshot.Route{Provider: "raw", Model: "m"}})
		s.Keys[0].Models = []string{"*"}
	}
}

// Events that reach the gateway together leave it with one flush: the
// upstream writes its whole answer at once, so after the commit point (role
// and first content, one flush) the other four contents go out in one, and
// the end (finish chunk and [DONE]) in one more.
func TestStreamEventsThatArriveTogetherShareAFlush(t *testing.T) {
	url := streamingUpstream(t, func(w http.ResponseWriter) {
		var b strings.Builder
		for _, s := range []string{"one", " two", " three", " four", " five"} {
			b.WriteString(oaiChunk(s))
		}
		b.WriteString(oaiEnd)
		_, _ = w.Write([]byte(b.String()))
	})
	h := newHarness(t, withUpstream(url))
	chunks := rawStream(t, h.gw.URL, h.keyA, "chat-raw", nil)
	contents := func(c string) int { return strings.Count(c, `"content":"`) - strings.Count(c, `"content":""`) }
	if len(chunks) != 3 {
		t.Fatalf("%d flushes, want 3 (commit, the other contents, the end: finish and [DONE]): %q", len(chunks), chunks)
	}
	if got := []int{contents(chunks[0]), contents(chunks[1])}; got[0] != 1 || got[1] != 4 {
		t.Fatalf("contents per flush = %v, want [1 4]", got)
	}
	if !strings.Contains(chunks[2], `"finish_reason":"stop"`) || !strings.HasSuffix(chunks[2], "data: [DONE]\n\n") {
		t.Fatalf("last flush %q, want the finish chunk and [DONE]", chunks[2])
	}
}

// An event is never held back waiting for the next: the upstream sends its
// second content only after the client has received the first two.
func TestStreamEventIsNotHeldForTheNext(t *testing.T) {
	got := make(chan struct{}, 1)
	url := streamingUpstream(t, func(w http.ResponseWriter) {
		f := w.(http.Flusher)
		_, _ = w.Write([]byte(oaiChunk("one")))
		f.Flush()
		_, _ = w.Write([]byte(oaiChunk(" two")))
		f.Flush()
		select {
		case <-got:
		case <-time.After(5 * time.Second):
			return // the client never saw " two": the test fails on the missing content
		}
		_, _ = w.Write([]byte(oaiChunk(" three") + oaiEnd))
		f.Flush()
	})
	h := newHarness(t, withUpstream(url))
	var seen strings.Builder
	signalled := false
	rawStream(t, h.gw.URL, h.keyA, "chat-raw", func(c string) {
		seen.WriteString(c)
		if !signalled && strings.Contains(seen.String(), `"content":" two"`) {
			signalled = true
			got <- struct{}{}
		}
	})
	if !signalled || !strings.Contains(seen.String(), `"content":" three"`) {
		t.Fatalf("stream = %q; want every content, the second before the upstream sent the third", seen.String())
	}
}
