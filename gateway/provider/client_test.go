package provider

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

func TestEndpoint(t *testing.T) {
	tests := []struct{ protocol, base, want string }{
		{"openai", "http://h:1", "http://h:1/v1/chat/completions"},
		{"openai", "http://h:1/", "http://h:1/v1/chat/completions"},
		{"openai", "https://api.example.com/v1", "https://api.example.com/v1/chat/completions"},
		{"openai", "https://api.example.com/v1/", "https://api.example.com/v1/chat/completions"},
		{"openai", "http://h/proxy/openai", "http://h/proxy/openai/v1/chat/completions"},
		{"anthropic", "https://api.example.com", "https://api.example.com/v1/messages"},
		{"anthropic", "https://api.example.com/v1", "https://api.example.com/v1/messages"},
	}
	for _, tc := range tests {
		a, err := New(Config{Name: "x", Protocol: tc.protocol, BaseURL: tc.base})
		if err != nil {
			t.Fatal(err)
		}
		var got string
		switch v := a.(type) {
		case *openAI:
			got = v.endpoint
		case *anthropic:
			got = v.endpoint
		}
		if got != tc.want {
			t.Errorf("%s %s: %s, want %s", tc.protocol, tc.base, got, tc.want)
		}
	}
}

// TestConnectionsAreReused guards the keep-alive path the gateway's throughput
// depends on: finished streams, JSON answers and error answers all leave their
// connection reusable.
func TestConnectionsAreReused(t *testing.T) {
	bodies := map[string]string{
		ProtocolOpenAI:    oaiPre + oaiText("a") + oaiFinish + oaiUsageChunk + oaiDone,
		ProtocolAnthropic: antStart + antText("a") + antDelta("end_turn", 1) + antStop,
	}
	for p, body := range bodies {
		t.Run(p, func(t *testing.T) {
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
					reply(200, "application/json", `{"type":"message","content":[],"choices":[{"message":{"content":"x"}}]}`)(w, r)
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
					s, err := a.Stream(ctx, minimalRequest)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := drain(s); err != io.EOF {
						t.Fatal(err)
					}
					s.Close()
				case 1:
					if _, err := a.Complete(ctx, minimalRequest); err != nil {
						t.Fatal(err)
					}
				case 2:
					if _, err := a.Complete(ctx, minimalRequest); err == nil {
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
	srv, got := upstream(t, reply(200, "application/json", `{"choices":[{"message":{"content":"x"}}]}`))
	shared := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	a := newAdapter(t, ProtocolOpenAI, srv.URL, func(c *Config) { c.Client = shared })
	if _, err := a.Complete(testCtx(t), minimalRequest); err != nil {
		t.Fatal(err)
	}
	if h := (<-got).header.Get("Authorization"); h != "Bearer "+testCredential {
		t.Fatalf("Authorization %q", h)
	}
	if shared.CheckRedirect != nil {
		t.Fatal("the caller's client was modified")
	}
}

func TestConcurrentUse(t *testing.T) {
	srv, _ := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Accept"), "event-stream") {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, oaiText("a")+oaiText("b")+oaiFinish+oaiDone)
			return
		}
		reply(200, "application/json", `{"choices":[{"message":{"content":"ab"}}]}`)(w, r)
	})
	a := newAdapter(t, ProtocolOpenAI, srv.URL)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			if i%2 == 0 {
				c, err := a.Complete(context.Background(), minimalRequest)
				if err != nil || c.Text != "ab" {
					t.Error(c, err)
				}
				return
			}
			s, err := a.Stream(context.Background(), minimalRequest)
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			evs, err := drain(s)
			if err != io.EOF || len(evs) != 3 {
				t.Error(evs, err)
			}
		})
	}
	wg.Wait()
}

func TestCloseAfterDoneIsBounded(t *testing.T) {
	srv, _ := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, oaiText("a")+oaiDone)
		w.(http.Flusher).Flush()
		<-r.Context().Done() // a misbehaving upstream that never ends the response
	})
	a := newAdapter(t, ProtocolOpenAI, srv.URL)
	s, err := a.Stream(testCtx(t), minimalRequest)
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
}

// A caller's Client with a cookie jar adds the jar's cookies to each
// request's header map: never to the map every request shares.
func TestJarCookiesStayOnTheirRequest(t *testing.T) {
	srv, got := upstream(t, reply(200, "application/json", `{"choices":[{"message":{"content":"x"}}]}`))
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.URL)
	jar.SetCookies(u, []*http.Cookie{{Name: "session", Value: "s1"}})
	a := newAdapter(t, ProtocolOpenAI, srv.URL, func(c *Config) { c.Client = &http.Client{Jar: jar} })
	for range 2 {
		if _, err := a.Complete(testCtx(t), minimalRequest); err != nil {
			t.Fatal(err)
		}
		if c := (<-got).header.Values("Cookie"); len(c) != 1 || c[0] != "session=s1" {
			t.Fatalf("upstream saw Cookie %q, want one session=s1", c)
		}
	}
	for _, h := range a.(*openAI).headers {
		if v := h.Get("Cookie"); v != "" {
			t.Fatalf("the shared headers carry Cookie %q", v)
		}
	}
}
