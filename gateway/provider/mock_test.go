package provider

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/tokens"
	"github.com/llmgw/llmgw/mockproviders"
)

// These tests run the adapters against the project's mock providers: alpha speaks
// the OpenAI protocol, beta the Anthropic one, and both require the credential.

type mockCase struct {
	flavor   mockproviders.Flavor
	protocol string
	model    string
}

var mockCases = []mockCase{
	{mockproviders.Alpha, ProtocolOpenAI, "alpha-large"},
	{mockproviders.Beta, ProtocolAnthropic, "beta-large"},
}

func startMock(t *testing.T, mc mockCase, mod ...func(*Config)) (Adapter, *httptest.Server) {
	t.Helper()
	h, err := mockproviders.NewHandler(mockproviders.Options{Flavor: mc.flavor, RequireKey: testCredential})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return newAdapter(t, mc.protocol, srv.URL, mod...), srv
}

func mockRequest(model, directive string) *Request {
	last := "Tell me about rivers."
	if directive != "" {
		last += "\n@mock " + directive
	}
	return &Request{
		Model: model,
		Messages: []Message{
			{"system", "You are terse."},
			{"user", "Hello there."},
			{"assistant", "Hi."},
			{"user", last},
		},
		Temperature: ptr(0.2),
		User:        "u-1",
	}
}

func TestMockHappyPath(t *testing.T) {
	for _, mc := range mockCases {
		t.Run(string(mc.flavor), func(t *testing.T) {
			a, _ := startMock(t, mc)
			req := mockRequest(mc.model, "*:chunks=5")
			c, err := a.Complete(testCtx(t), req)
			if err != nil {
				t.Fatal(err)
			}
			prefix := string(mc.flavor) + "/" + mc.model + " says:"
			wantIn := tokens.CountMessages("You are terse.", "Hello there.", "Hi.", "Tell me about rivers.")
			if !strings.HasPrefix(c.Text, prefix) || c.FinishReason != "stop" || !c.HasUsage ||
				c.Usage.OutputTokens != tokens.Count(c.Text) || c.Usage.InputTokens != wantIn {
				t.Fatalf("completion %+v (want input %d)", c, wantIn)
			}

			s, err := a.Stream(testCtx(t), req)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			evs, err := drain(s)
			if err != io.EOF {
				t.Fatal(err)
			}
			var text strings.Builder
			var texts int
			var fin string
			var u *Usage
			for _, ev := range evs {
				switch {
				case ev.Text != "":
					if fin != "" || u != nil {
						t.Fatal("text after finish or usage")
					}
					texts++
					text.WriteString(ev.Text)
				case ev.FinishReason != "":
					fin = ev.FinishReason
				case ev.Usage != nil:
					u = ev.Usage
				}
			}
			if texts != 5 || text.String() != c.Text || fin != "stop" || u == nil || *u != c.Usage {
				t.Fatalf("stream: %d chunks %q finish %q usage %v; JSON said %+v", texts, text.String(), fin, u, c)
			}
		})
	}
}

func TestMockMaxTokensAndStop(t *testing.T) {
	for _, mc := range mockCases {
		t.Run(string(mc.flavor), func(t *testing.T) {
			a, _ := startMock(t, mc)
			req := mockRequest(mc.model, "")
			req.MaxTokens = ptr(3)
			c, err := a.Complete(testCtx(t), req)
			if err != nil || c.FinishReason != "length" || c.Usage.OutputTokens != 3 {
				t.Fatalf("max_tokens: %+v, %v", c, err)
			}
			req = mockRequest(mc.model, "")
			req.Stop = []string{"says:"}
			c, err = a.Complete(testCtx(t), req)
			if err != nil || c.FinishReason != "stop" || strings.Contains(c.Text, "says:") {
				t.Fatalf("stop: %+v, %v", c, err)
			}
		})
	}
}

func TestMockWrongCredential(t *testing.T) {
	wantType := map[mockproviders.Flavor]string{mockproviders.Alpha: "invalid_request_error", mockproviders.Beta: "authentication_error"}
	for _, mc := range mockCases {
		t.Run(string(mc.flavor), func(t *testing.T) {
			a, srv := startMock(t, mc, func(c *Config) { c.Credential = "wrong-" + testCredential })
			_, err := a.Complete(testCtx(t), mockRequest(mc.model, ""))
			e := asError(t, err)
			if e.Kind != KindStatus || e.StatusCode != 401 || e.Type != wantType[mc.flavor] {
				t.Fatalf("got %+v", e)
			}
			assertNoLeak(t, err, append(leakCandidates(srv), "wrong-"+testCredential)...)
		})
	}
}

func TestMockStatusFaults(t *testing.T) {
	tests := []struct {
		directive  string
		status     int
		retryAfter time.Duration
	}{
		{"*:status=400", 400, 0},
		{"*:status=403", 403, 0},
		{"*:status=429 *:retry_after=3", 429, 3 * time.Second},
		{"*:status=500", 500, 0},
		{"*:status=503", 503, 0},
	}
	for _, mc := range mockCases {
		a, srv := startMock(t, mc)
		for _, tc := range tests {
			t.Run(string(mc.flavor)+"/"+tc.directive, func(t *testing.T) {
				for _, stream := range []bool{false, true} {
					var err error
					if stream {
						_, err = a.Stream(testCtx(t), mockRequest(mc.model, tc.directive))
					} else {
						_, err = a.Complete(testCtx(t), mockRequest(mc.model, tc.directive))
					}
					e := asError(t, err)
					if e.Kind != KindStatus || e.StatusCode != tc.status || e.RetryAfter != tc.retryAfter ||
						!strings.Contains(e.Message, "mock fault") {
						t.Fatalf("stream=%v: got %+v", stream, e)
					}
					assertNoLeak(t, err, leakCandidates(srv)...)
				}
			})
		}
	}
}

// The directive targets one flavor only: the other answers normally.
func TestMockDirectiveTargetsOneFlavor(t *testing.T) {
	for _, mc := range mockCases {
		a, _ := startMock(t, mc)
		_, err := a.Complete(testCtx(t), mockRequest(mc.model, "alpha:status=503 beta:status=429"))
		want := map[mockproviders.Flavor]int{mockproviders.Alpha: 503, mockproviders.Beta: 429}[mc.flavor]
		if e := asError(t, err); e.StatusCode != want {
			t.Fatalf("%s: %+v", mc.flavor, e)
		}
	}
}

func TestMockTimeouts(t *testing.T) {
	for _, mc := range mockCases {
		t.Run(string(mc.flavor), func(t *testing.T) {
			a, _ := startMock(t, mc, func(c *Config) { c.ResponseHeaderTimeout = 100 * time.Millisecond })
			_, err := a.Complete(testCtx(t), mockRequest(mc.model, "*:delay_ms=2000"))
			if e := asError(t, err); e.Kind != KindTimeout {
				t.Fatalf("header delay: %+v", e)
			}
			// Headers on time, first byte late: the caller's first-chunk deadline.
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			s, err := a.Stream(ctx, mockRequest(mc.model, "*:first_byte_delay_ms=2000"))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, err = s.Next()
			if e := asError(t, err); e.Kind != KindTimeout || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("first byte delay: %+v", e)
			}
		})
	}
}

func TestMockStreamFaults(t *testing.T) {
	tests := []struct {
		directive string
		kind      Kind
		typ       map[mockproviders.Flavor]string
		cancel    bool
	}{
		{"*:drop_after=2", KindStream, nil, false},
		{"*:error_after=2", KindStream, map[mockproviders.Flavor]string{mockproviders.Alpha: "server_error", mockproviders.Beta: "overloaded_error"}, false},
		{"*:stall_after=2", KindCanceled, nil, true},
	}
	for _, mc := range mockCases {
		a, srv := startMock(t, mc)
		for _, tc := range tests {
			t.Run(string(mc.flavor)+"/"+tc.directive, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				s, err := a.Stream(ctx, mockRequest(mc.model, tc.directive+" *:chunks=6"))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				for i := range 2 {
					ev, err := s.Next()
					if err != nil || ev.Text == "" {
						t.Fatalf("event %d: %+v, %v", i, ev, err)
					}
				}
				if tc.cancel {
					time.AfterFunc(50*time.Millisecond, cancel)
				}
				_, err = s.Next()
				e := asError(t, err)
				if e.Kind != tc.kind || e.Type != tc.typ[mc.flavor] {
					t.Fatalf("got %+v", e)
				}
				assertNoLeak(t, err, leakCandidates(srv)...)
			})
		}
	}
}

func TestMockNoUsage(t *testing.T) {
	for _, mc := range mockCases {
		a, _ := startMock(t, mc)
		c, err := a.Complete(testCtx(t), mockRequest(mc.model, "*:no_usage=1"))
		if err != nil || c.HasUsage {
			t.Fatalf("%s: %+v, %v", mc.flavor, c, err)
		}
		s, err := a.Stream(testCtx(t), mockRequest(mc.model, "*:no_usage=1"))
		if err != nil {
			t.Fatal(err)
		}
		evs, err := drain(s)
		s.Close()
		if err != io.EOF || len(evs) < 2 {
			t.Fatalf("%s: %v, %v", mc.flavor, evs, err)
		}
		for _, ev := range evs {
			if ev.Usage != nil {
				t.Fatalf("%s: usage despite no_usage", mc.flavor)
			}
		}
	}
}
