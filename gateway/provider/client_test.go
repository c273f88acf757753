package provider

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/gateway/translate"
)

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no name", Config{Protocol: "openai", BaseURL: "http://h"}},
		{"unknown protocol", Config{Name: "x", Protocol: "grpc", BaseURL: "http://h"}},
		{"no scheme", Config{Name: "x", Protocol: "openai", BaseURL: "secret-host:80"}},
		{"ftp", Config{Name: "x", Protocol: "openai", BaseURL: "ftp://secret-host"}},
		{"no host", Config{Name: "x", Protocol: "openai", BaseURL: "http:///v1"}},
		{"user info", Config{Name: "x", Protocol: "anthropic", BaseURL: "https://user:hunter2@secret-host"}},
		{"query", Config{Name: "x", Protocol: "anthropic", BaseURL: "https://secret-host/?key=hunter2"}},
		{"fragment", Config{Name: "x", Protocol: "openai", BaseURL: "https://secret-host/#hunter2"}},
		{"unparsable", Config{Name: "x", Protocol: "openai", BaseURL: "http://secret-host:port\x7f"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Credential = testCredential
			_, err := New(tc.cfg)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, s := range []string{"secret-host", "hunter2", testCredential} {
				if strings.Contains(err.Error(), s) {
					t.Fatalf("error leaks %q: %v", s, err)
				}
			}
		})
	}
}

// Each operation's endpoint, whether the base URL ends in /v1 or not.
func TestEndpoint(t *testing.T) {
	tests := []struct {
		protocol, base string
		op             Operation
		want           string // "" for an operation the protocol lacks
	}{
		{"openai", "http://h:1", OpChat, "http://h:1/v1/chat/completions"},
		{"openai", "http://h:1/", OpChat, "http://h:1/v1/chat/completions"},
		{"openai", "https://api.example.com/v1", OpChat, "https://api.example.com/v1/chat/completions"},
		{"openai", "https://api.example.com/v1/", OpChat, "https://api.example.com/v1/chat/completions"},
		{"openai", "http://h/proxy/openai", OpChat, "http://h/proxy/openai/v1/chat/completions"},
		{"openai", "http://h:1", OpEmbeddings, "http://h:1/v1/embeddings"},
		{"openai", "https://api.example.com/v1", OpEmbeddings, "https://api.example.com/v1/embeddings"},
		{"anthropic", "https://api.example.com", OpChat, "https://api.example.com/v1/messages"},
		{"anthropic", "https://api.example.com/v1", OpChat, "https://api.example.com/v1/messages"},
		{"anthropic", "https://api.example.com", OpEmbeddings, ""},
	}
	for _, tc := range tests {
		a, err := New(Config{Name: "x", Protocol: tc.protocol, BaseURL: tc.base})
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if r := baseOf(t, a).targets[tc.op]; r != nil {
			got = r.URL.String()
		}
		if got != tc.want {
			t.Errorf("%s %s op %d: %q, want %q", tc.protocol, tc.base, tc.op, got, tc.want)
		}
		if a.Name() != "x" || a.Protocol() != tc.protocol {
			t.Errorf("Name %q Protocol %q", a.Name(), a.Protocol())
		}
	}
}

// TestRequestOnTheWire: each call is a POST to its endpoint with the
// protocol's headers and credential, and the body exactly as the
// translator wrote it.
func TestRequestOnTheWire(t *testing.T) {
	embeddings, err := translate.Embeddings(ProtocolOpenAI).Request(&translate.EmbeddingRequest{Body: []byte(`{"model":"e","input":["a","b"]}`)}, "text-embedding-3-small")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, protocol string
		op             Operation
		stream         bool
		body           [][]byte
		path           string
	}{
		{"openai chat", ProtocolOpenAI, OpChat, false, chatBody(t, ProtocolOpenAI, false, `"tools":[{"type":"function","function":{"name":"f"}}]`), "/v1/chat/completions"},
		{"openai chat stream", ProtocolOpenAI, OpChat, true, chatBody(t, ProtocolOpenAI, true), "/v1/chat/completions"},
		{"openai embeddings", ProtocolOpenAI, OpEmbeddings, false, embeddings, "/v1/embeddings"},
		{"anthropic chat", ProtocolAnthropic, OpChat, false, chatBody(t, ProtocolAnthropic, false, `"max_tokens":10`), "/v1/messages"},
		{"anthropic chat stream", ProtocolAnthropic, OpChat, true, chatBody(t, ProtocolAnthropic, true), "/v1/messages"},
		{"literal body", ProtocolOpenAI, OpChat, false, literal(`{"model":"m","messages":[]}`), "/v1/chat/completions"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			answer, ct := `{"object":"list","data":[],"model":"m"}`, "application/json"
			if tc.op == OpChat {
				answer = answerBody(tc.protocol)
			}
			if tc.stream {
				answer, ct = streamBody(tc.protocol, "x"), "text/event-stream"
			}
			srv, seen := upstream(t, reply(200, ct, answer))
			a := newAdapter(t, tc.protocol, srv.URL)
			if tc.stream {
				call(t, a, tc.body, true)
			} else if err := a.Complete(testCtx(t), Call{Op: tc.op, Body: tc.body}, func([]byte) error { return nil }); err != nil {
				t.Fatal(err)
			}
			r := <-seen
			if r.method != http.MethodPost || r.path != tc.path {
				t.Errorf("request line %s %s, want POST %s", r.method, r.path, tc.path)
			}
			if want := string(joined(tc.body)); r.body != want {
				t.Errorf("body\n got %s\nwant %s", r.body, want)
			}
			want := map[string]string{"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "llmgw",
				"Content-Length": strconv.Itoa(len(joined(tc.body)))}
			if tc.stream {
				want["Accept"] = "text/event-stream"
			}
			if tc.protocol == ProtocolOpenAI {
				want["Authorization"] = "Bearer " + testCredential
				want["X-Api-Key"] = ""
				want["Anthropic-Version"] = ""
			} else {
				want["Authorization"] = ""
				want["X-Api-Key"] = testCredential
				want["Anthropic-Version"] = "2023-06-01"
			}
			for k, v := range want {
				if g := r.header.Get(k); g != v {
					t.Errorf("header %s = %q, want %q", k, g, v)
				}
			}
		})
	}
}

// An operation the protocol has no endpoint for, or a call without a ctx,
// fails before anything is sent.
func TestCannotBuildRequest(t *testing.T) {
	srv, seen := upstream(t, reply(200, "application/json", `{}`))
	a := newAdapter(t, ProtocolAnthropic, srv.URL)
	for name, call := range map[string]func() error{
		"anthropic embeddings": func() error {
			return a.Complete(testCtx(t), Call{Op: OpEmbeddings, Body: literal(`{}`)}, func([]byte) error { return nil })
		},
		"unknown operation": func() error {
			return a.Complete(testCtx(t), Call{Op: numOps, Body: literal(`{}`)}, func([]byte) error { return nil })
		},
		"nil ctx complete": func() error {
			var none context.Context // a caller's defect the adapter must survive
			return a.Complete(none, Call{Op: OpChat, Body: literal(`{}`)}, func([]byte) error { return nil })
		},
		"nil ctx stream": func() error {
			var none context.Context
			_, err := a.Stream(none, Call{Op: OpChat, Body: literal(`{}`)}, decoder(ProtocolAnthropic))
			return err
		},
	} {
		e := asError(t, call())
		if e.Kind != KindProtocol || e.Provider != "up-anthropic" {
			t.Errorf("%s: %+v", name, e)
		}
	}
	if n := len(seen); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

func TestNoCredentialSendsNoAuthHeader(t *testing.T) {
	for _, p := range protocols {
		t.Run(p, func(t *testing.T) {
			srv, seen := upstream(t, reply(500, "", ""))
			a := newAdapter(t, p, srv.URL, func(c *Config) { c.Credential = "" })
			_, _ = complete(testCtx(t), a, chatBody(t, p, false))
			h := (<-seen).header
			if h.Get("Authorization") != "" || h.Get("X-Api-Key") != "" {
				t.Fatalf("auth header sent without a credential: %v", h)
			}
		})
	}
}

// Complete hands the 2xx answer to read byte for byte; the protocol's
// translator reads it.
func TestCompleteReadsTheAnswer(t *testing.T) {
	for _, p := range protocols {
		t.Run(p, func(t *testing.T) {
			srv, _ := upstream(t, reply(200, "application/json", answerBody(p)))
			a := newAdapter(t, p, srv.URL)
			var raw []byte
			err := a.Complete(testCtx(t), Call{Op: OpChat, Body: chatBody(t, p, false)}, func(b []byte) error {
				raw = append(raw, b...)
				return nil
			})
			if err != nil || string(raw) != answerBody(p) {
				t.Fatalf("read %q, %v", raw, err)
			}
			ans, err := complete(testCtx(t), a, chatBody(t, p, false))
			if err != nil {
				t.Fatal(err)
			}
			want := translate.Usage{InputTokens: 3, OutputTokens: 2}
			if ans.Usage == nil || *ans.Usage != want || !strings.Contains(string(ans.Body), `"Hi there"`) ||
				!strings.Contains(string(ans.Body), `"model":"alias"`) {
				t.Fatalf("answer %s, usage %v", ans.Body, ans.Usage)
			}
		})
	}
}

// What read returns decides the error: a provider's error inside a 2xx
// answer keeps its type; an answer that cannot be read is malformed. Both
// are protocol errors, redacted like any upstream text.
func TestCompleteReadFailure(t *testing.T) {
	var srvURL string
	srv, _ := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		reply(200, "application/json", `{"error":{"message":"key `+testCredential+` at `+srvURL+`","type":"server_error"}}`)(w, r)
	})
	srvURL = srv.URL
	a := newAdapter(t, ProtocolOpenAI, srv.URL)
	tests := []struct {
		name     string
		read     func([]byte) error
		wantType string
		wantMsg  string
	}{
		{"the translator: error in a 2xx", func(raw []byte) error {
			_, err := translate.Chat(ProtocolOpenAI).Answer(raw, testMeta())
			return err
		}, "server_error", "error in a 2xx response: key [redacted] at [redacted]"},
		{"a failure", func([]byte) error { return &translate.Failure{Type: "t", Message: "m"} }, "t", "error in a 2xx response: m"},
		{"a wrapped failure", func([]byte) error {
			return errors.Join(errors.New("x"), &translate.Failure{Malformed: true, Message: "no choices"})
		}, "", "no choices"},
		{"malformed without a message", func([]byte) error { return &translate.Failure{Malformed: true} }, "", "malformed response JSON"},
		{"another error", func([]byte) error { return io.ErrUnexpectedEOF }, "", "malformed response JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := a.Complete(testCtx(t), Call{Op: OpChat, Body: literal(`{}`)}, tc.read)
			e := asError(t, err)
			if e.Kind != KindProtocol || e.Type != tc.wantType || e.Message != tc.wantMsg || e.Provider != "up-openai" {
				t.Fatalf("got %+v", e)
			}
			assertNoLeak(t, err, leakCandidates(srv)...)
		})
	}
}

func TestCompleteAnswerTooLarge(t *testing.T) {
	big := `{"choices":[{"message":{"content":"` + strings.Repeat("a", maxResponseBytes) + `"}}]}`
	srv, _ := upstream(t, reply(200, "application/json", big))
	a := newAdapter(t, ProtocolOpenAI, srv.URL)
	read := false
	err := a.Complete(testCtx(t), Call{Op: OpChat, Body: literal(`{}`)}, func([]byte) error { read = true; return nil })
	if e := asError(t, err); e.Kind != KindProtocol || read {
		t.Fatalf("got %+v, read %v", e, read)
	}
}

// TestConnectionsAreReused guards the keep-alive path the gateway's throughput
// depends on: finished streams, JSON answers and error answers all leave their
// connection reusable.
func TestConnectionsAreReused(t *testing.T) {
	for _, p := range protocols {
		t.Run(p, func(t *testing.T) {
			body := streamBody(p, "a")
			var calls atomic.Int32
			srv, _ := upstream(t, func(w http.ResponseWriter, r *http.Request) {
				switch calls.Add(1) % 3 {
				case 0:
					reply(503, "application/json", `{"error":{"message":"busy"}}`)(w, r)
				case 1:
					w.Header().Set("Content-Type", "text/event-stream")
					for _, line := range strings.SplitAfter(body, "\n\n") {
						io.WriteString(w, line)
						w.(http.Flusher).Flush()
					}
				case 2:
					reply(200, "application/json", answerBody(p))(w, r)
				}
			})
			a := newAdapter(t, p, srv.URL)
			var dials atomic.Int32
			trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
				if !i.Reused {
					dials.Add(1)
				}
			}}
			ctx := httptrace.WithClientTrace(context.Background(), trace)
			for i := range 30 {
				switch i % 3 {
				case 0:
					s, err := startStream(ctx, a, chatBody(t, p, true))
					if err != nil {
						t.Fatal(err)
					}
					if _, err := drain(s); err != io.EOF {
						t.Fatal(err)
					}
					s.Close()
				case 1:
					if _, err := complete(ctx, a, chatBody(t, p, false)); err != nil {
						t.Fatal(err)
					}
				case 2:
					if _, err := complete(ctx, a, chatBody(t, p, false)); err == nil {
						t.Fatal("want 503")
					}
				}
			}
			if n := dials.Load(); n != 1 {
				t.Fatalf("%d connections dialled for 30 sequential calls, want 1", n)
			}
		})
	}
}

func TestSharedClient(t *testing.T) {
	srv, seen := upstream(t, reply(200, "application/json", oaiAnswer))
	shared := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	a := newAdapter(t, ProtocolOpenAI, srv.URL, func(c *Config) { c.Client = shared })
	if _, err := complete(testCtx(t), a, chatBody(t, ProtocolOpenAI, false)); err != nil {
		t.Fatal(err)
	}
	if h := (<-seen).header.Get("Authorization"); h != "Bearer "+testCredential {
		t.Fatalf("Authorization %q", h)
	}
	if shared.CheckRedirect != nil {
		t.Fatal("the caller's client was modified")
	}
}

func TestConcurrentUse(t *testing.T) {
	srv, _ := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Accept"), "event-stream") {
			reply(200, "text/event-stream", oaiText("a")+oaiText("b")+oaiFinish+oaiDone)(w, r)
			return
		}
		reply(200, "application/json", oaiAnswer)(w, r)
	})
	a := newAdapter(t, ProtocolOpenAI, srv.URL)
	body := chatBody(t, ProtocolOpenAI, false)
	streamed := chatBody(t, ProtocolOpenAI, true)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			if i%2 == 0 {
				ans, err := complete(context.Background(), a, body)
				if err != nil || !strings.Contains(string(ans.Body), "Hi there") {
					t.Error(ans, err)
				}
				return
			}
			s, err := startStream(context.Background(), a, streamed)
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			chunks, err := drain(s)
			if err != io.EOF || len(chunks) != 3 || textOf(chunks) != "ab" {
				t.Error(chunks, err)
			}
		})
	}
	wg.Wait()
}

func TestCloseAfterDoneIsBounded(t *testing.T) {
	for _, p := range protocols {
		t.Run(p, func(t *testing.T) {
			srv, _ := upstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, streamBody(p, "a"))
				w.(http.Flusher).Flush()
				<-r.Context().Done() // a misbehaving upstream that never ends the response
			})
			a := newAdapter(t, p, srv.URL)
			s, err := startStream(testCtx(t), a, chatBody(t, p, true))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := drain(s); err != io.EOF {
				t.Fatal(err)
			}
			start := time.Now()
			s.Close()
			if d := time.Since(start); d > time.Second {
				t.Fatalf("Close took %v", d)
			}
		})
	}
}

// A caller's Client with a cookie jar adds the jar's cookies to each
// request's header map: never to the map every request shares.
func TestJarCookiesStayOnTheirRequest(t *testing.T) {
	srv, seen := upstream(t, reply(200, "application/json", oaiAnswer))
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.URL)
	jar.SetCookies(u, []*http.Cookie{{Name: "session", Value: "s1"}})
	a := newAdapter(t, ProtocolOpenAI, srv.URL, func(c *Config) { c.Client = &http.Client{Jar: jar} })
	for range 2 {
		if _, err := complete(testCtx(t), a, chatBody(t, ProtocolOpenAI, false)); err != nil {
			t.Fatal(err)
		}
		if c := (<-seen).header.Values("Cookie"); len(c) != 1 || c[0] != "session=s1" {
			t.Fatalf("upstream saw Cookie %q, want one session=s1", c)
		}
	}
	for _, h := range baseOf(t, a).headers {
		if v := h.Get("Cookie"); v != "" {
			t.Fatalf("the shared headers carry Cookie %q", v)
		}
	}
}
