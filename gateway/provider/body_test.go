package provider

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llmgw/llmgw/gateway/translate"
)

// replayCheck is a transport that reads each request's body, then sends the
// request on with the body GetBody gives, as net/http does when it retries a
// request on a pooled connection found closed before anything was written.
type replayCheck struct {
	t      *testing.T
	checks atomic.Int32
	bodies chan []byte
}

func (rc *replayCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	first, err := io.ReadAll(req.Body)
	if err != nil {
		rc.t.Error(err)
	}
	_ = req.Body.Close()
	if req.GetBody == nil {
		rc.t.Error("no GetBody: a request on a stale connection could not be sent again")
		return nil, io.EOF
	}
	var again [2][]byte
	for i := range again { // each GetBody is a body of its own
		b, err := req.GetBody()
		if err != nil {
			rc.t.Error(err)
			return nil, err
		}
		again[i], _ = io.ReadAll(b)
	}
	if !bytes.Equal(first, again[0]) || !bytes.Equal(first, again[1]) || int64(len(first)) != req.ContentLength || len(first) == 0 {
		rc.t.Errorf("body %d B, replayed %d and %d B, Content-Length %d", len(first), len(again[0]), len(again[1]), req.ContentLength)
	}
	rc.checks.Add(1)
	rc.bodies <- first
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(again[0]))
	return http.DefaultTransport.RoundTrip(out)
}

// bigBody is a pass-through body above flatBody: the translator's
// segments, sent as they are.
func bigBody(t testing.TB, stream bool) [][]byte {
	t.Helper()
	content := strings.Repeat("0123456789", flatBody/10+1000)
	body := chatBody(t, ProtocolOpenAI, stream, `"metadata":{"note":"`+content+`"}`)
	if len(body) < 2 || bodyLen(body) <= flatBody {
		t.Fatalf("%d segments, %d B: not a multi-segment body above flatBody", len(body), bodyLen(body))
	}
	return body
}

// The request body a retry sends is the one first sent, with its length
// (not chunked), for both kinds of call and every shape of body: one
// segment, several small ones (joined), several above flatBody (sent
// segment by segment).
func TestRequestBodyCanBeSentAgain(t *testing.T) {
	srv, seen := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Accept"), "event-stream") {
			reply(200, "text/event-stream", streamBody(ProtocolOpenAI, "hi"))(w, r)
			return
		}
		reply(200, "application/json", oaiAnswer)(w, r)
	})
	rc := &replayCheck{t: t, bodies: make(chan []byte, 8)}
	a := newAdapter(t, ProtocolOpenAI, srv.URL, func(c *Config) { c.Client = &http.Client{Transport: rc} })
	for _, tc := range []struct {
		name   string
		body   [][]byte
		stream bool
	}{
		{"one segment", literal(`{"model":"m","messages":[{"role":"user","content":"hello"}]}`), false},
		{"small segments", chatBody(t, ProtocolOpenAI, false), false},
		{"small segments, stream", chatBody(t, ProtocolOpenAI, true), true},
		{"above flatBody", bigBody(t, false), false},
		{"above flatBody, stream", bigBody(t, true), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := joined(tc.body)
			segs := append([][]byte(nil), tc.body...)
			call(t, a, tc.body, tc.stream)
			if got := <-rc.bodies; !bytes.Equal(got, want) {
				t.Fatalf("sent %d B, want %d B", len(got), len(want))
			}
			if got := <-seen; got.body != string(want) || got.header.Get("Content-Length") != strconv.Itoa(len(want)) {
				t.Fatalf("upstream saw %d B, Content-Length %q; want %d", len(got.body), got.header.Get("Content-Length"), len(want))
			}
			// The caller's segments are the caller's: reading the body did not shorten them.
			for i := range segs {
				if len(tc.body[i]) != len(segs[i]) || &tc.body[i][0] != &segs[i][0] {
					t.Fatalf("segment %d changed", i)
				}
			}
		})
	}
	if n := rc.checks.Load(); n != 5 {
		t.Fatalf("%d round trips checked", n)
	}
}

// joinSmall joins a body of several segments up to flatBody (one write for
// head and body) and leaves a larger one as it is (no copy).
func TestJoinSmall(t *testing.T) {
	small := [][]byte{[]byte(`{"a":`), []byte(`1`), []byte(`}`)}
	if got := joinSmall(small); len(got) != 1 || string(got[0]) != `{"a":1}` {
		t.Errorf("small body: %q", got)
	}
	one := [][]byte{bytes.Repeat([]byte("a"), 2*flatBody)}
	if got := joinSmall(one); len(got) != 1 || &got[0][0] != &one[0][0] {
		t.Error("one segment copied")
	}
	atLimit := [][]byte{make([]byte, flatBody-1), {'x'}}
	if got := joinSmall(atLimit); len(got) != 1 || len(got[0]) != flatBody {
		t.Errorf("body of flatBody bytes: %d segments", len(got))
	}
	large := [][]byte{make([]byte, flatBody), {'x'}}
	if got := joinSmall(large); len(got) != 2 || &got[0][0] != &large[0][0] || &got[1][0] != &large[1][0] {
		t.Error("body above flatBody copied")
	}
	if got := joinSmall(nil); len(got) != 0 {
		t.Errorf("empty body: %q", got)
	}
}

// The body's bytes are let go once read or closed.
func TestRequestBodyLetsGoOfItsBytes(t *testing.T) {
	rb := &requestBody{segs: [][]byte{[]byte("0123"), nil, []byte("456789")}}
	p := make([]byte, 3)
	var got []byte
	for {
		n, err := rb.Read(p)
		got = append(got, p[:n]...)
		if err == io.EOF {
			break
		}
	}
	if string(got) != "0123456789" || rb.segs != nil {
		t.Fatalf("read %q, bytes kept: %v", got, rb.segs != nil)
	}
	rb = &requestBody{segs: [][]byte{[]byte("abc")}}
	_ = rb.Close()
	if rb.segs != nil {
		t.Fatal("bytes kept after Close")
	}
	if n, err := rb.Read(p); n != 0 || err != io.EOF {
		t.Fatalf("Read after Close: %d, %v", n, err)
	}
}

// The first send's body lets go of its bytes once the transport reports
// the request written (the trace's WroteRequest), for both of its forms;
// another trace on the ctx still gets its calls.
func TestSentBodyLetsGoOnceWritten(t *testing.T) {
	for _, segs := range [][][]byte{
		{[]byte(`{"model":"m"}`)},
		{[]byte(`{"model":`), []byte(`"m"}`)},
	} {
		orig := string(bytes.Join(segs, []byte("|")))
		var theirs atomic.Int32
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { theirs.Add(1) },
		})
		ctx, body := newSentBody(ctx, segs)
		first := make([]byte, 4)
		if n, _ := body.Read(first); n != 4 || string(first) != `{"mo` {
			t.Fatalf("first read %q", first[:n])
		}
		httptrace.ContextClientTrace(ctx).WroteRequest(httptrace.WroteRequestInfo{})
		if n, err := body.Read(make([]byte, 64)); n != 0 || err != io.EOF {
			t.Errorf("%d segments: read %d B after the request was written (%v)", len(segs), n, err)
		}
		if theirs.Load() != 1 {
			t.Errorf("the caller's trace was not called")
		}
		if now := string(bytes.Join(segs, []byte("|"))); now != orig {
			t.Errorf("the caller's segments changed: %s, were %s", now, orig)
		}
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
// A translator's segments below flatBody are joined for that.
func TestRequestGoesOutInOneWrite(t *testing.T) {
	for _, tc := range []struct {
		protocol, contentType, answer string
		stream                        bool
	}{
		{ProtocolOpenAI, "application/json", oaiAnswer, false},
		{ProtocolOpenAI, "text/event-stream", streamBody(ProtocolOpenAI, "hi"), true},
		{ProtocolAnthropic, "application/json", antAnswer, false},
		{ProtocolAnthropic, "text/event-stream", streamBody(ProtocolAnthropic, "hi"), true},
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
			long := chatBody(t, tc.protocol, tc.stream, `"user":"`+strings.Repeat("a", 1000)+`"`)
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
// out whole, with its length, for both kinds of call and both forms of
// body; the trace that empties the body runs on the transport's writing
// goroutine there too (-race).
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
		if strings.Contains(r.Header.Get("Accept"), "event-stream") {
			reply(200, "text/event-stream", streamBody(ProtocolOpenAI, "hi"))(w, r)
			return
		}
		reply(200, "application/json", oaiAnswer)(w, r)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	a := newAdapter(t, ProtocolOpenAI, srv.URL, func(c *Config) { c.Client = srv.Client() })
	one := literal(`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("a", 100_000) + `"}]}`)
	for _, body := range [][][]byte{one, bigBody(t, false)} {
		call(t, a, body, false)
		call(t, a, body, true)
		for range 2 {
			s := <-got
			if s.proto != "HTTP/2.0" || s.n != bodyLen(body) || s.cl != int64(s.n) {
				t.Fatalf("upstream saw %s, %d B, Content-Length %d; sent %d B", s.proto, s.n, s.cl, bodyLen(body))
			}
		}
	}
}

// call makes one completion, or one stream read to its end, and fails t on
// any error.
func call(t *testing.T, a Adapter, body [][]byte, stream bool) {
	t.Helper()
	if !stream {
		err := a.Complete(testCtx(t), Call{Op: OpChat, Body: body}, func(raw []byte) error {
			_, err := translate.Chat(a.Protocol()).Answer(raw, testMeta())
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	st, err := startStream(testCtx(t), a, body)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := drain(st); err != io.EOF {
		t.Fatal(err)
	}
}
