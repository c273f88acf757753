package provider

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// replayCheck is a transport that reads each request's body, then sends the
// request on with the body GetBody gives, as net/http does when it retries a
// request on a pooled connection found closed before anything was written.
type replayCheck struct {
	t      *testing.T
	checks int
}

func (rc *replayCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	first, err := io.ReadAll(req.Body)
	if err != nil {
		rc.t.Fatal(err)
	}
	_ = req.Body.Close()
	if req.GetBody == nil {
		rc.t.Fatal("no GetBody: a request on a stale connection could not be sent again")
	}
	again, err := req.GetBody()
	if err != nil {
		rc.t.Fatal(err)
	}
	second, _ := io.ReadAll(again)
	if !bytes.Equal(first, second) || int64(len(first)) != req.ContentLength || len(first) == 0 {
		rc.t.Fatalf("body %d B, replayed %d B, Content-Length %d", len(first), len(second), req.ContentLength)
	}
	rc.checks++
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(second))
	return http.DefaultTransport.RoundTrip(out)
}

// The request body a retry sends is the one first sent, with its length
// (not chunked), for both kinds of call.
func TestRequestBodyCanBeSentAgain(t *testing.T) {
	srv, seen := upstream(t, reply(200, "text/event-stream", oaiPre+oaiText("hi")+oaiFinish+oaiDone))
	rc := &replayCheck{t: t}
	a := newAdapter(t, "openai", srv.URL, func(c *Config) { c.Client = &http.Client{Transport: rc} })
	req := &Request{Model: "m", Messages: []Message{{Role: "user", Content: "hello"}}}
	st, err := a.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if evs, err := drain(st); err != io.EOF || len(evs) == 0 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	_ = st.Close()
	if got := <-seen; len(got.body) == 0 || got.header.Get("Content-Length") == "" {
		t.Fatalf("upstream saw %d B, Content-Length %q", len(got.body), got.header.Get("Content-Length"))
	}
	if rc.checks != 1 {
		t.Fatalf("%d round trips checked", rc.checks)
	}
}

// The body's bytes are let go once read or closed.
func TestRequestBodyLetsGoOfItsBytes(t *testing.T) {
	rb := &requestBody{b: []byte("0123456789")}
	if got, _ := io.ReadAll(rb); string(got) != "0123456789" || rb.b != nil {
		t.Fatalf("read %q, bytes kept: %v", got, rb.b != nil)
	}
	rb = &requestBody{b: []byte("abc")}
	_ = rb.Close()
	if rb.b != nil {
		t.Fatal("bytes kept after Close")
	}
}

// writeCounter counts the writes on every connection its transport dials.
type writeCounter struct {
	net.Conn
	writes *atomic.Int32
}

func (w writeCounter) Write(p []byte) (int, error) {
	w.writes.Add(1)
	return w.Conn.Write(p)
}

// A request's head and body leave in one write: with a body type net/http
// does not know to be in memory, it flushes the head on its own first.
func TestRequestGoesOutInOneWrite(t *testing.T) {
	for _, tc := range []struct {
		protocol, contentType, answer string
		stream                        bool
	}{
		{ProtocolOpenAI, "application/json", `{"choices":[{"message":{"content":"x"}}]}`, false},
		{ProtocolOpenAI, "text/event-stream", oaiPre + oaiText("hi") + oaiFinish + oaiDone, true},
		{ProtocolAnthropic, "application/json", `{"content":[{"type":"text","text":"x"}],"stop_reason":"end_turn"}`, false},
	} {
		t.Run(tc.protocol+"/"+tc.contentType, func(t *testing.T) {
			srv, seen := upstream(t, reply(200, tc.contentType, tc.answer))
			var writes atomic.Int32
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return writeCounter{c, &writes}, nil
			}
			t.Cleanup(tr.CloseIdleConnections)
			a := newAdapter(t, tc.protocol, srv.URL, func(c *Config) { c.Client = &http.Client{Transport: tr} })
			long := &Request{Model: "m", Messages: []Message{{Role: "user", Content: strings.Repeat("a", 1000)}}}
			call(t, a, long, tc.stream)
			if got := <-seen; len(got.body) < 1000 {
				t.Fatalf("upstream saw %d B", len(got.body))
			}
			if n := writes.Load(); n != 1 {
				t.Fatalf("the request took %d writes, want 1", n)
			}
		})
	}
}

// Over HTTP/2 (an https provider: the transport attempts it) the body goes
// out whole, with its length, for both kinds of call; the trace that empties
// the body runs on the transport's writing goroutine there too (-race).
func TestRequestOverHTTP2(t *testing.T) {
	type seen struct {
		proto string
		n     int
		cl    int64
	}
	got := make(chan seen, 8)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Proto, len(b), r.ContentLength}
		if strings.Contains(string(b), `"stream":true`) {
			reply(200, "text/event-stream", oaiPre+oaiText("hi")+oaiFinish+oaiDone)(w, r)
			return
		}
		reply(200, "application/json", `{"choices":[{"message":{"content":"x"}}]}`)(w, r)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	a := newAdapter(t, ProtocolOpenAI, srv.URL, func(c *Config) { c.Client = srv.Client() })
	long := &Request{Model: "m", Messages: []Message{{Role: "user", Content: strings.Repeat("a", 100_000)}}}
	call(t, a, long, false)
	call(t, a, long, true)
	for range 2 {
		s := <-got
		if s.proto != "HTTP/2.0" || s.n < 100_000 || s.cl != int64(s.n) {
			t.Fatalf("upstream saw %s, %d B, Content-Length %d", s.proto, s.n, s.cl)
		}
	}
}

// call makes one completion, or one stream read to its end, and fails t on
// any error.
func call(t *testing.T, a Adapter, req *Request, stream bool) {
	t.Helper()
	if !stream {
		if _, err := a.Complete(testCtx(t), req); err != nil {
			t.Fatal(err)
		}
		return
	}
	st, err := a.Stream(testCtx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := drain(st); err != io.EOF {
		t.Fatal(err)
	}
}
