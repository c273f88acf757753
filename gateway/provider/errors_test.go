package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStatusErrors(t *testing.T) {
	oai := func(typ, msg string) string {
		return `{"error":{"message":"` + msg + `","type":"` + typ + `","param":null,"code":null}}`
	}
	ant := func(typ, msg string) string {
		return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"}}`
	}
	tests := []struct {
		name       string
		status     int
		body       string
		headers    []string
		wantType   string
		wantMsg    string
		retryAfter time.Duration
	}{
		{"400 openai", 400, oai("invalid_request_error", "bad max_tokens"), nil, "invalid_request_error", "bad max_tokens", 0},
		{"400 anthropic", 400, ant("invalid_request_error", "max_tokens: field required"), nil, "invalid_request_error", "max_tokens: field required", 0},
		{"401 openai code only", 401, `{"error":{"message":"Incorrect API key","type":null,"code":"invalid_api_key"}}`, nil, "invalid_api_key", "Incorrect API key", 0},
		{"401 anthropic", 401, ant("authentication_error", "invalid x-api-key"), nil, "authentication_error", "invalid x-api-key", 0},
		{"403", 403, ant("permission_error", "no access"), nil, "permission_error", "no access", 0},
		{"404", 404, oai("invalid_request_error", "model not found"), nil, "invalid_request_error", "model not found", 0},
		{"429 retry-after seconds", 429, oai("rate_limit_exceeded", "slow down"), []string{"Retry-After", "2"}, "rate_limit_exceeded", "slow down", 2 * time.Second},
		{"429 retry-after-ms wins", 429, ant("rate_limit_error", "slow down"), []string{"Retry-After", "2", "Retry-After-Ms", "1500"}, "rate_limit_error", "slow down", 1500 * time.Millisecond},
		{"500", 500, oai("server_error", "internal"), nil, "server_error", "internal", 0},
		{"502 html page", 502, "<html>\n<body>Bad   Gateway</body>\n</html>", nil, "", "<html> <body>Bad Gateway</body> </html>", 0},
		{"503 empty body", 503, "", nil, "", "Service Unavailable", 0},
		{"529 overloaded", 529, ant("overloaded_error", "Overloaded"), nil, "overloaded_error", "Overloaded", 0},
		{"proxy string error", 500, `{"error":"upstream exploded"}`, nil, "", "upstream exploded", 0},
		{"proxy message", 502, `{"message":"no healthy upstream"}`, nil, "", "no healthy upstream", 0},
		{"proxy capitalised names", 504, `{"Error":{"Message":"gateway timeout","Type":"proxy_error"}}`, nil, "proxy_error", "gateway timeout", 0},
		{"redirect not followed", 307, "", []string{"Location", "http://127.0.0.1:1/elsewhere"}, "", "Temporary Redirect", 0},
	}
	for _, tc := range tests {
		for _, p := range protocols {
			t.Run(tc.name+"/"+p, func(t *testing.T) {
				srv, got := upstream(t, reply(tc.status, "application/json", tc.body, tc.headers...))
				a := newAdapter(t, p, srv.URL)
				calls := []string{"complete", "stream"}
				if p == ProtocolOpenAI {
					calls = append(calls, "embeddings")
				}
				for _, call := range calls {
					var err error
					switch call {
					case "complete":
						_, err = complete(testCtx(t), a, chatBody(t, p, false))
					case "stream":
						_, err = startStream(testCtx(t), a, chatBody(t, p, true))
					case "embeddings":
						err = a.Complete(testCtx(t), Call{Op: OpEmbeddings, Body: literal(`{"model":"e","input":"x"}`)}, func([]byte) error {
							t.Error("an error answer was read")
							return nil
						})
					}
					e := asError(t, err)
					if e.Kind != KindStatus || e.StatusCode != tc.status || e.Type != tc.wantType || e.Message != tc.wantMsg ||
						e.RetryAfter != tc.retryAfter || e.Provider != "up-"+p {
						t.Fatalf("%s: got %+v", call, e)
					}
					assertNoLeak(t, err, leakCandidates(srv)...)
				}
				if n := len(got); n != len(calls) {
					t.Fatalf("upstream saw %d requests, want %d (a redirect must not be followed)", n, len(calls))
				}
			})
		}
	}
}

func TestUpstreamTextIsRedactedAndClipped(t *testing.T) {
	var srvURL string
	srv, _ := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		msg := "key " + testCredential + " rejected at " + srvURL + "/v1 " + strings.Repeat("é", 1000)
		reply(401, "application/json", `{"error":{"message":"`+msg+`","type":"auth `+testCredential+`"}}`)(w, r)
	})
	srvURL = srv.URL
	a := newAdapter(t, ProtocolOpenAI, srv.URL)
	_, err := complete(testCtx(t), a, chatBody(t, ProtocolOpenAI, false))
	assertNoLeak(t, err, leakCandidates(srv)...)
	e := asError(t, err)
	if len(e.Message) > maxMessageLen+3 || !strings.HasPrefix(e.Message, "key [redacted] rejected at [redacted]/v1 é") {
		t.Fatalf("message %q (%d bytes)", e.Message, len(e.Message))
	}
	if e.Type != "auth [redacted]" {
		t.Fatalf("type %q", e.Type)
	}
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ln.Close()
	for _, p := range protocols {
		a := newAdapter(t, p, base)
		_, err1 := complete(testCtx(t), a, chatBody(t, p, false))
		_, err2 := startStream(testCtx(t), a, chatBody(t, p, true))
		for _, err := range []error{err1, err2} {
			e := asError(t, err)
			if e.Kind != KindConnection || !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("%s: got %+v", p, e)
			}
			assertNoLeak(t, err, testCredential, base, strings.TrimPrefix(base, "http://"), "127.0.0.1")
		}
	}
}

func TestResponseHeaderTimeout(t *testing.T) {
	release := make(chan struct{})
	srv, _ := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	for _, p := range protocols {
		a := newAdapter(t, p, srv.URL, func(c *Config) { c.ResponseHeaderTimeout = 50 * time.Millisecond })
		start := time.Now()
		_, err := startStream(testCtx(t), a, chatBody(t, p, true))
		e := asError(t, err)
		if e.Kind != KindTimeout {
			t.Fatalf("%s: got %+v", p, e)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("header timeout took %v", d)
		}
		assertNoLeak(t, err, leakCandidates(srv)...)
	}
}

func TestContextBeforeResponse(t *testing.T) {
	srv, _ := upstream(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	a := newAdapter(t, ProtocolOpenAI, srv.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := complete(ctx, a, chatBody(t, ProtocolOpenAI, false))
	if e := asError(t, err); e.Kind != KindTimeout || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %+v", e)
	}

	cause := errors.New("client went away")
	ctx2, cancel2 := context.WithCancelCause(context.Background())
	time.AfterFunc(30*time.Millisecond, func() { cancel2(cause) })
	_, err = startStream(ctx2, a, chatBody(t, ProtocolOpenAI, true))
	if e := asError(t, err); e.Kind != KindCanceled || !errors.Is(err, cause) {
		t.Fatalf("cancel: %+v", e)
	}
	assertNoLeak(t, err, leakCandidates(srv)...)
}

// stallAfterFirst sends headers and one event in the protocol's format, then
// nothing until the client leaves.
func stallAfterFirst(protocol string) http.HandlerFunc {
	first := oaiText("a")
	if protocol == ProtocolAnthropic {
		first = antStart + antText("a")
	}
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, first)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

func TestStalledStreamUnblocksOnCancel(t *testing.T) {
	for _, p := range protocols {
		for _, how := range []string{"cancel", "deadline"} {
			t.Run(p+"/"+how, func(t *testing.T) {
				srv, _ := upstream(t, stallAfterFirst(p))
				a := newAdapter(t, p, srv.URL)
				want := map[string]Kind{"cancel": KindCanceled, "deadline": KindTimeout}[how]
				// A loaded shared machine can delay one wake-up; a real regression
				// (Next ignoring the ctx) fails every attempt.
				var lags []time.Duration
				for range 3 {
					lag, err := stallThenStop(t, a, how)
					e := asError(t, err)
					if e.Kind != want {
						t.Fatalf("got %+v, want %s", e, want)
					}
					assertNoLeak(t, err, leakCandidates(srv)...)
					if lag <= 50*time.Millisecond {
						return
					}
					lags = append(lags, lag)
				}
				t.Fatalf("Next returned %v after the ctx ended, want <= 50ms", lags)
			})
		}
	}
}

// stallThenStop reads the first event of a stalled stream, ends the ctx, and
// reports how long the blocked Next took to return after that.
func stallThenStop(t *testing.T, a Adapter, how string) (time.Duration, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if how == "deadline" {
		ctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
	}
	s, err := startStream(ctx, a, chatBody(t, a.Protocol(), true))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for { // up to the chunk that says "a" (an Anthropic stream has a role chunk first)
		c, err := s.Next()
		if err != nil {
			t.Fatalf("before the first text: %v", err)
		}
		if c.Text == "a" {
			break
		}
	}
	stopped := make(chan time.Time, 1)
	if how == "cancel" {
		time.AfterFunc(100*time.Millisecond, func() { stopped <- time.Now(); cancel() })
	} else {
		d, _ := ctx.Deadline()
		stopped <- d
	}
	_, err = s.Next()
	return time.Since(<-stopped), err
}

func TestStreamCutAndTruncated(t *testing.T) {
	tests := []struct {
		name, protocol, body string
		cut                  bool
	}{
		{"openai cut", ProtocolOpenAI, oaiText("a"), true},
		{"openai truncated", ProtocolOpenAI, oaiText("a") + oaiFinish, false},
		{"anthropic cut", ProtocolAnthropic, antStart + antText("a"), true},
		{"anthropic truncated", ProtocolAnthropic, antStart + antText("a") + antBlockStop, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := upstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, tc.body)
				w.(http.Flusher).Flush()
				if tc.cut {
					panic(http.ErrAbortHandler) // closes the connection without the final chunk
				}
			})
			a := newAdapter(t, tc.protocol, srv.URL)
			s, err := startStream(testCtx(t), a, chatBody(t, tc.protocol, true))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			chunks, err := drain(s)
			if textOf(chunks) != "a" {
				t.Fatalf("chunks %v", chunks)
			}
			e := asError(t, err)
			if e.Kind != KindStream {
				t.Fatalf("got %+v", e)
			}
			assertNoLeak(t, err, leakCandidates(srv)...)
		})
	}
}

func TestMalformedUpstreamData(t *testing.T) {
	tests := []struct {
		name, protocol, ct, body string
		stream                   bool
	}{
		{"openai bad JSON body", ProtocolOpenAI, "application/json", `{"choices":`, false},
		{"anthropic bad JSON body", ProtocolAnthropic, "application/json", `<html>`, false},
		{"stream answered with JSON", ProtocolOpenAI, "application/json", `{"choices":[]}`, true},
		{"stream without content type", ProtocolAnthropic, "", "event: message_stop\ndata: {}\n\n", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := upstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = []string{tc.ct}
				io.WriteString(w, tc.body)
			})
			a := newAdapter(t, tc.protocol, srv.URL)
			var err error
			if tc.stream {
				_, err = startStream(testCtx(t), a, chatBody(t, tc.protocol, true))
			} else {
				_, err = complete(testCtx(t), a, chatBody(t, tc.protocol, false))
			}
			if e := asError(t, err); e.Kind != KindProtocol {
				t.Fatalf("got %+v", e)
			}
			assertNoLeak(t, err, leakCandidates(srv)...)
		})
	}
}

func TestCompleteBodyCut(t *testing.T) {
	srv, _ := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		io.WriteString(w, `{"choices":`)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	a := newAdapter(t, ProtocolOpenAI, srv.URL)
	_, err := complete(testCtx(t), a, chatBody(t, ProtocolOpenAI, false))
	if e := asError(t, err); e.Kind != KindConnection {
		t.Fatalf("got %+v", e)
	}
	assertNoLeak(t, err, leakCandidates(srv)...)
}

func TestDescribeHidesAddresses(t *testing.T) {
	u := "https://secret-host.internal:8443/v1/messages"
	tests := []struct {
		err  error
		want string
	}{
		{&url.Error{Op: "Post", URL: u, Err: &net.OpError{Op: "dial", Net: "tcp",
			Addr: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 8443}, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}, "dial: connection refused"},
		{&url.Error{Op: "Post", URL: u, Err: &net.OpError{Op: "dial", Net: "tcp",
			Err: &net.DNSError{Err: "no such host", Name: "secret-host.internal", IsNotFound: true}}}, "dns: host not found"},
		{&url.Error{Op: "Post", URL: u, Err: &net.DNSError{Err: "timeout", Name: "secret-host.internal", IsTimeout: true}}, "dns: timeout"},
		{&url.Error{Op: "Post", URL: u, Err: io.EOF}, "connection closed by upstream"},
		{&url.Error{Op: "Post", URL: u, Err: errors.New("tls: handshake failure")}, "tls: handshake failure"},
	}
	for _, tc := range tests {
		if got := describe(tc.err); got != tc.want {
			t.Errorf("describe(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
	// The redactor catches what describe lets through.
	a := newAdapter(t, ProtocolAnthropic, "https://secret-host.internal:8443")
	e := baseOf(t, a).transportError(context.Background(), &url.Error{Op: "Post", URL: u, Err: fmt.Errorf("x509: certificate is valid for a, not secret-host.internal")})
	assertNoLeak(t, e, "secret-host.internal", testCredential)
}

func TestErrorText(t *testing.T) {
	e := &Error{Kind: KindStatus, Provider: "alpha", StatusCode: 429, Type: "rate_limit_error", Message: "slow down"}
	if got := e.Error(); got != "provider alpha: upstream status 429 (rate_limit_error): slow down" {
		t.Fatal(got)
	}
	e = &Error{Kind: KindConnection, Provider: "beta", Message: "dial: connection refused"}
	if got := e.Error(); got != "provider beta: connection: dial: connection refused" {
		t.Fatal(got)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		ra, raMs string
		want     time.Duration
	}{
		{"", "", 0},
		{"3", "", 3 * time.Second},
		{" 1.5 ", "", 1500 * time.Millisecond},
		{"0", "", 0},
		{"-4", "", 0},
		{"soon", "", 0},
		{"Thu, 01 Jan 2026 00:00:10 GMT", "", 10 * time.Second},
		{"Wed, 31 Dec 2025 23:59:00 GMT", "", 0},
		{"99999999999999", "", maxRetryAfter},
		{"3", "250", 250 * time.Millisecond},
		{"3", "junk", 3 * time.Second},
		{"", "Inf", maxRetryAfter},
		{"NaN", "NaN", 0},
	}
	for _, tc := range tests {
		h := http.Header{}
		if tc.ra != "" {
			h.Set("Retry-After", tc.ra)
		}
		if tc.raMs != "" {
			h.Set("Retry-After-Ms", tc.raMs)
		}
		if got := retryAfter(h, now); got != tc.want {
			t.Errorf("Retry-After %q, -Ms %q: %v, want %v", tc.ra, tc.raMs, got, tc.want)
		}
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"plain", 10, "plain"},
		{"  a\n\tb\r\n c  ", 10, "a b c"},
		{"abcdefghij", 5, "abcde..."},
		{"ééé", 5, "éé..."},
		{"bad \xff byte", 20, "bad ? byte"},
		{"\x00\x01x", 5, "x"},
	}
	for _, tc := range tests {
		if got := clip(tc.in, tc.max); got != tc.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestDialTimeoutIsTimeout(t *testing.T) {
	a := newAdapter(t, ProtocolOpenAI, "http://10.0.0.1:81")
	dialErr := &url.Error{Op: "Post", URL: "http://10.0.0.1:81/v1/chat/completions",
		Err: &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 81}, Err: os.ErrDeadlineExceeded}}
	e := baseOf(t, a).transportError(context.Background(), dialErr)
	if e.Kind != KindTimeout || e.Message != "dial: i/o timeout" || !errors.Is(e, os.ErrDeadlineExceeded) {
		t.Fatalf("got %+v", e)
	}
	assertNoLeak(t, e, "10.0.0.1")
}
