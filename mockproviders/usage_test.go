package mockproviders

import (
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/tokens"
	"github.com/llmgw/llmgw/api/wire/anthropic"
	"github.com/llmgw/llmgw/api/wire/openai"
)

// settled polls /mock/calls until every call has ended (Done == Total): a
// handler finishes just after its client has the last byte.
func (m *mock) settled(t *testing.T) Calls {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := m.calls(t)
		if c.Done == c.Total {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls never settled: %+v", c)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestUsageDirectives: cached_tokens and reasoning_tokens change the usage
// each protocol reports, in its own shape, and /mock/calls counts what was
// reported.
func TestUsageDirectives(t *testing.T) {
	for _, fl := range flavors {
		t.Run(string(fl), func(t *testing.T) {
			m := newMock(t, Options{Flavor: fl})
			plain := m.call(t, reqSpec{user: "count my tokens please"})
			pa := decodeAnswer(t, fl, plain.body)
			r := m.call(t, reqSpec{user: "count my tokens please\n@mock *:cached_tokens=3 *:reasoning_tokens=5"})
			a := decodeAnswer(t, fl, r.body)
			if a.text != pa.text {
				t.Fatalf("the directives changed the answer: %q vs %q", a.text, pa.text)
			}
			in, visible := 4, tokens.Count(a.text) // the prompt, without the directive line
			switch fl {
			case Alpha:
				var c openai.ChatCompletion
				mustUnmarshal(t, string(r.body), &c)
				if u := c.Usage; u == nil || u.PromptTokens != in || u.CompletionTokens != visible+5 ||
					u.PromptTokensDetails == nil || u.PromptTokensDetails.CachedTokens != 3 ||
					u.CompletionTokensDetails == nil || u.CompletionTokensDetails.ReasoningTokens != 5 {
					t.Fatalf("alpha usage %s", r.body)
				}
				var p openai.ChatCompletion
				mustUnmarshal(t, string(plain.body), &p)
				if p.Usage.PromptTokensDetails != nil || p.Usage.CompletionTokensDetails != nil {
					t.Fatalf("details without a directive: %s", plain.body)
				}
			case Beta:
				var m anthropic.MessageResponse
				mustUnmarshal(t, string(r.body), &m)
				if u := m.Usage; u == nil || !is(u.InputTokens, in-3) || !is(u.CacheReadInputTokens, 3) || !is(u.OutputTokens, visible+5) {
					t.Fatalf("beta usage %s", r.body)
				}
				var p anthropic.MessageResponse
				mustUnmarshal(t, string(plain.body), &p)
				if p.Usage.CacheReadInputTokens != nil {
					t.Fatalf("cache_read_input_tokens without a directive: %s", plain.body)
				}
			}
			c := m.settled(t)
			wantReasoning := int64(5)
			if fl == Beta {
				wantReasoning = 0 // the Messages protocol has no reasoning count: output only
			}
			want := Tokens{InputTokens: int64(2 * in), CachedInputTokens: 3,
				OutputTokens: int64(2*visible + 5), ReasoningTokens: wantReasoning}
			if c.Tokens != want {
				t.Fatalf("tokens %+v, want %+v", c.Tokens, want)
			}
		})
	}
}

// TestCachedTokensClampedToPrompt: a directive cannot report more cached
// tokens than the prompt has.
func TestCachedTokensClampedToPrompt(t *testing.T) {
	m := newMock(t, Options{Flavor: Alpha})
	r := m.call(t, reqSpec{user: "two words\n@mock alpha:cached_tokens=1000"})
	var c openai.ChatCompletion
	mustUnmarshal(t, string(r.body), &c)
	if c.Usage == nil || c.Usage.PromptTokens != 2 || c.Usage.PromptTokensDetails == nil || c.Usage.PromptTokensDetails.CachedTokens != 2 {
		t.Fatalf("usage %s", r.body)
	}
}

// TestDeliveredTokens: what /mock/calls counts for each way an answer can
// end, on both protocols. Streams ask for usage (alpha's include_usage).
func TestDeliveredTokens(t *testing.T) {
	const prompt = "one two three four five"
	for _, fl := range flavors {
		t.Run(string(fl), func(t *testing.T) {
			for _, tc := range []struct {
				name      string
				directive string
				stream    bool
				// want computes the expected counts from the answer's
				// visible pieces and the raw prompt (directive line included).
				want func(pieces []string, raw int) Tokens
			}{
				{"json", "", false, func(p []string, _ int) Tokens {
					return Tokens{InputTokens: 5, OutputTokens: int64(countAll(p))}
				}},
				{"stream", "", true, func(p []string, _ int) Tokens {
					return Tokens{InputTokens: 5, OutputTokens: int64(countAll(p))}
				}},
				{"json without usage", "*:no_usage=1", false, func(p []string, raw int) Tokens {
					return Tokens{UnreportedInputTokens: int64(raw), UnreportedOutputTokens: int64(countAll(p))}
				}},
				{"stream without usage", "*:no_usage=1 *:reasoning_tokens=9", true, func(p []string, raw int) Tokens {
					return Tokens{UnreportedInputTokens: int64(raw), UnreportedOutputTokens: int64(countAll(p))}
				}},
				{"stream cut after two pieces", "*:drop_after=2 *:chunks=4 *:cached_tokens=2", true, func(p []string, raw int) Tokens {
					return Tokens{UnreportedInputTokens: int64(raw), UnreportedOutputTokens: int64(countAll(p))}
				}},
				{"stream error after one piece", "*:error_after=1", true, func(p []string, raw int) Tokens {
					return Tokens{UnreportedInputTokens: int64(raw), UnreportedOutputTokens: int64(countAll(p))}
				}},
				{"stream cut before any piece", "*:drop_after=0", true, func([]string, int) Tokens { return Tokens{} }},
				{"json cut", "*:drop_after=1", false, func([]string, int) Tokens { return Tokens{} }},
				{"error status", "*:status=503", false, func([]string, int) Tokens { return Tokens{} }},
			} {
				t.Run(tc.name, func(t *testing.T) {
					m := newMock(t, Options{Flavor: fl})
					user := prompt
					if tc.directive != "" {
						user += "\n@mock " + tc.directive
					}
					r := m.call(t, reqSpec{user: user, stream: tc.stream, includeUsage: tc.stream})
					var pieces []string
					switch {
					case tc.stream:
						// A cut stream's body ends mid-way; the pieces before the cut are whole.
						pieces = contentPieces(t, fl, parseSSEPrefix(r.body))
					case r.resp.StatusCode == 200 && r.readErr == nil:
						pieces = []string{decodeAnswer(t, fl, r.body).text}
					}
					raw := tokens.Count(user)
					got := m.settled(t)
					if want := tc.want(pieces, raw); got.Tokens != want {
						t.Fatalf("tokens %+v, want %+v (pieces %q)", got.Tokens, want, pieces)
					}
				})
			}
		})
	}
}

// is reports whether p points at want.
func is(p *int, want int) bool { return p != nil && *p == want }

func countAll(pieces []string) int {
	n := 0
	for _, p := range pieces {
		n += tokens.Count(p)
	}
	return n
}

// parseSSEPrefix parses the complete events of a body that may be cut.
func parseSSEPrefix(body []byte) []sseEvent {
	var evs []sseEvent
	for _, block := range strings.SplitAfter(string(body), "\n\n") {
		if !strings.HasSuffix(block, "\n\n") {
			break
		}
		var e sseEvent
		for line := range strings.SplitSeq(strings.TrimSuffix(block, "\n\n"), "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				e.name = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				e.data = v
			}
		}
		evs = append(evs, e)
	}
	return evs
}

// TestTokensByUser: tokens are grouped by the request's user (alpha's user
// field, beta's metadata.user_id), and the groups are bounded.
func TestTokensByUser(t *testing.T) {
	for _, fl := range flavors {
		t.Run(string(fl), func(t *testing.T) {
			m := newMock(t, Options{Flavor: fl})
			send := func(user string) {
				var b map[string]any
				mustUnmarshal(t, string(reqSpec{user: "hello there"}.body(fl)), &b)
				if fl == Alpha {
					b["user"] = user
				} else {
					b["metadata"] = map[string]any{"user_id": user}
				}
				raw := mustMarshal(b)
				if r := m.do(t, t.Context(), raw, nil); r.resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", r.resp.StatusCode, r.body)
				}
			}
			send("team-a")
			send("team-a")
			send("team-b")
			m.call(t, reqSpec{user: "hello there"}) // no user
			c := m.settled(t)
			a, b, none := c.TokensByUser["team-a"], c.TokensByUser["team-b"], c.TokensByUser[""]
			if a.InputTokens != 4 || b.InputTokens != 2 || none.InputTokens != 2 || c.Tokens.InputTokens != 8 {
				t.Fatalf("by user %+v, total %+v", c.TokensByUser, c.Tokens)
			}
			if a.OutputTokens != 2*b.OutputTokens || a.OutputTokens+b.OutputTokens+none.OutputTokens != c.Tokens.OutputTokens {
				t.Fatalf("output by user %+v, total %+v", c.TokensByUser, c.Tokens)
			}
			for i := range maxUsers + 5 {
				send("u" + strings.Repeat("x", i))
			}
			if c := m.settled(t); len(c.TokensByUser) != maxUsers+1 || c.TokensByUser["other"].InputTokens == 0 {
				t.Fatalf("tokens_by_user not bounded: %d entries", len(c.TokensByUser))
			}
		})
	}
}
