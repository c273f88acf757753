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
// the response body as the gateway wrote it, calling onChunk after each
// piece: the HTTP chunks (one per flush) under chunked encoding, or the
// whole body when the gateway answered with a Content-Length (net/http does
// when the handler wrote it all without a flush), and the request id.
func rawStream(t *testing.T, gwURL, key, model string, onChunk func(string)) (chunks []string, requestID string) {
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
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	requestID = resp.Header.Get("X-Request-Id")
	if resp.TransferEncoding == nil {
		b, err := io.ReadAll(resp.Body)
		if err != nil || int64(len(b)) != resp.ContentLength {
			t.Fatalf("body of %d B, Content-Length %d: %v", len(b), resp.ContentLength, err)
		}
		if onChunk != nil {
			onChunk(string(b))
		}
		return []string{string(b)}, requestID
	}
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
			return chunks, requestID
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

// Events that reach the gateway together leave it with one write: an
// upstream that writes its whole answer at once gets the client its head,
// role, five contents, finish and [DONE] in one write (net/http then frames
// it with a Content-Length), the record final before it.
func TestStreamAnswerThatArrivesAtOnceLeavesInOneWrite(t *testing.T) {
	url := streamingUpstream(t, func(w http.ResponseWriter) {
		var b strings.Builder
		for _, s := range []string{"one", " two", " three", " four", " five"} {
			b.WriteString(oaiChunk(s))
		}
		b.WriteString(oaiEnd)
		_, _ = w.Write([]byte(b.String()))
	})
	h := newHarness(t, withUpstream(url))
	chunks, _ := rawStream(t, h.gw.URL, h.keyA, "chat-raw", nil)
	if len(chunks) != 1 {
		t.Fatalf("%d writes, want 1: %q", len(chunks), chunks)
	}
	if got := contents(chunks[0]); got != 5 {
		t.Fatalf("%d contents in the write, want 5: %q", got, chunks[0])
	}
	if !strings.Contains(chunks[0], `"finish_reason":"stop"`) || !strings.HasSuffix(chunks[0], "data: [DONE]\n\n") {
		t.Fatalf("write %q, want the finish chunk and [DONE] at its end", chunks[0])
	}
}

// contents counts the content deltas in a piece of an SSE body.
func contents(c string) int {
	return strings.Count(c, `"content":"`) - strings.Count(c, `"content":""`)
}

// The commit's batch (role and first content) is written with what arrived
// with it and no more: the rest, sent by the upstream after a pause, and
// the end, in a write of their own.
func TestStreamCommitBatchIsWhatArrivedWithIt(t *testing.T) {
	url := streamingUpstream(t, func(w http.ResponseWriter) {
		f := w.(http.Flusher)
		_, _ = w.Write([]byte(oaiChunk("one") + oaiChunk(" two")))
		f.Flush()
		time.Sleep(50 * time.Millisecond) // the gateway has read the first two by then
		_, _ = w.Write([]byte(oaiChunk(" three") + oaiChunk(" four") + oaiEnd))
	})
	h := newHarness(t, withUpstream(url))
	chunks, _ := rawStream(t, h.gw.URL, h.keyA, "chat-raw", nil)
	if len(chunks) != 2 {
		t.Fatalf("%d writes, want 2 (what arrived together, twice): %q", len(chunks), chunks)
	}
	if got := []int{contents(chunks[0]), contents(chunks[1])}; got[0] != 2 || got[1] != 2 {
		t.Fatalf("contents per write = %v, want [2 2]", got)
	}
	if strings.Contains(chunks[0], "[DONE]") || !strings.HasSuffix(chunks[1], "data: [DONE]\n\n") {
		t.Fatalf("writes %q: want [DONE] only at the end of the second", chunks)
	}
}

// Contents written with the end are billed as sent: a stream whose provider
// reports no usage is billed by the gateway's own count of what it relayed,
// the same whether its events came at once (one write with the end) or one
// at a time (a write each).
func TestStreamOwnCountIsTheSameAtOnceOrApart(t *testing.T) {
	texts := []string{"one", " two", " three", " four", " five"}
	outputTokens := func(apart bool) int {
		url := streamingUpstream(t, func(w http.ResponseWriter) {
			f := w.(http.Flusher)
			for _, s := range texts {
				_, _ = w.Write([]byte(oaiChunk(s)))
				if apart {
					f.Flush()
					time.Sleep(5 * time.Millisecond)
				}
			}
			_, _ = w.Write([]byte(oaiEnd))
		})
		h := newHarness(t, withUpstream(url))
		chunks, id := rawStream(t, h.gw.URL, h.keyA, "chat-raw", nil)
		if n := len(chunks); apart == (n == 1) {
			t.Fatalf("apart=%v: %d writes", apart, n)
		}
		return h.record(id).OutputTokens
	}
	atOnce, apart := outputTokens(false), outputTokens(true)
	if atOnce == 0 || atOnce != apart {
		t.Fatalf("output tokens billed: %d at once, %d apart; want equal and above 0", atOnce, apart)
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
	_, _ = rawStream(t, h.gw.URL, h.keyA, "chat-raw", func(c string) {
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
