package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
)

// Quotas end to end: the demo stack with prices on both demo routes of
// chat-alpha (input free, output $1 per million tokens, so a request's
// cost is its output tokens in micro-dollars) and limits per test. The mock
// answers 10 to 18 words and truncates at max_tokens, and a token is a word
// (api/tokens), so a request with max_tokens ≤ 10 uses exactly max_tokens
// output tokens: its real cost equals what admission reserved.

func priced(s *snapshot.Snapshot) {
	for i := range s.Providers {
		model := s.Providers[i].Name + "-large"
		s.Providers[i].Prices = []snapshot.Price{{Model: model, InputPerMillion: "0", OutputPerMillion: "1"}}
	}
}

// quotaBody is a chat-alpha request with max_tokens and an optional mock
// directive.
func quotaBody(maxTokens int, stream bool, directive string) string {
	content := "Tell me something deterministic please"
	if directive != "" {
		content += "\n@mock " + directive
	}
	m := map[string]any{"model": "chat-alpha", "max_tokens": maxTokens,
		"messages": []map[string]string{{"role": "user", "content": content}}}
	if stream {
		m["stream"] = true
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func wantQuotaError(t *testing.T, r response, status int, typ, code string, retryAfter int) {
	t.Helper()
	e := r.errorBody(t)
	if r.status != status || e.Error.Type != typ || e.Error.Code != code {
		t.Fatalf("got %d %s/%s (%s), want %d %s/%s", r.status, e.Error.Type, e.Error.Code, e.Error.Message, status, typ, code)
	}
	if retryAfter >= 0 {
		if got := r.header.Get("Retry-After"); got != strconv.Itoa(retryAfter) {
			t.Fatalf("Retry-After %q, want %d", got, retryAfter)
		}
	}
}

// The test: 200 parallel requests against a budget with room for
// exactly 50 admit at most 50 (here exactly 50, as each costs what it
// reserved); the rest get 429 budget_exceeded, and the provider is called
// only for the admitted ones.
func TestBudgetAdmitsAtMostItsRoom(t *testing.T) {
	const room, parallel, maxTokens = 50, 200, 3
	h := newHarness(t, func(s *snapshot.Snapshot) {
		priced(s)
		// 50 requests × 3 tokens × $0.000001
		s.Keys[0].Budget = &snapshot.Budget{Amount: "0.00015", Period: snapshot.PeriodMonth}
		for i := range s.Aliases {
			s.Aliases[i].Timeouts = snapshot.Timeouts{TotalMs: 60000, AttemptMs: 30000, FirstChunkMs: 30000, IdleMs: 30000}
		}
	})
	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < parallel; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r := h.chat(h.keyA, quotaBody(maxTokens, i%2 == 0, ""))
			switch r.status {
			case http.StatusOK:
				ok.Add(1)
			case http.StatusTooManyRequests:
				e := r.errorBody(t)
				if e.Error.Type != "insufficient_quota" || e.Error.Code != "budget_exceeded" || r.header.Get("Retry-After") == "" {
					t.Errorf("429 %+v %v", e.Error, r.header)
				}
				if rec := h.record(r.header.Get("X-Request-Id")); rec.Status != "rejected" || len(rec.Attempts) != 0 {
					t.Errorf("refused request's record %+v", rec)
				}
				refused.Add(1)
			default:
				t.Errorf("status %d: %s", r.status, r.body)
			}
		}()
	}
	close(start)
	wg.Wait()
	calls := mockCalls(t, h.alpha).Total + mockCalls(t, h.beta).Total
	t.Logf("admitted %d, refused %d, provider calls %d", ok.Load(), refused.Load(), calls)
	if ok.Load() != room || refused.Load() != parallel-room || calls != room {
		t.Fatalf("admitted %d, refused %d, provider calls %d; want %d, %d, %d", ok.Load(), refused.Load(), calls, room, parallel-room, room)
	}
}

// A request that does not fit the key's tokens per minute gets 429 with the
// exact wait until the bucket has refilled enough; after it, it fits.
func TestTokensPerMinuteRefusalAndRefill(t *testing.T) {
	h := newHarness(t, func(s *snapshot.Snapshot) { s.Keys[0].TokensPerMinute = 60 })
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 5, 12, 0, 0, 0, time.UTC).UnixNano())
	h.srv.SetClockForTest(func() time.Time { return time.Unix(0, now.Load()) })

	// Input "Tell me something deterministic please" is 5 tokens; 40 more
	// may come out: 45 reserved of 60, what the mock really answers kept.
	r := h.chat(h.keyA, quotaBody(40, false, ""))
	if r.status != 200 {
		t.Fatalf("first request: %d %s", r.status, r.body)
	}
	rec := h.record(r.header.Get("X-Request-Id"))
	used := rec.InputTokens + rec.OutputTokens
	if rec.InputTokens != 5 || rec.OutputTokens < 10 || used >= 45 {
		t.Fatalf("first request used %d+%d tokens", rec.InputTokens, rec.OutputTokens)
	}
	left := 60 - used

	// 5 + 50 > left: refused, never reaching a provider; at 1 token a
	// second it fits after (55-left) seconds.
	before := mockCalls(t, h.alpha).Total
	r = h.chat(h.keyA, quotaBody(50, false, ""))
	wantQuotaError(t, r, 429, "rate_limit_error", "tokens_per_minute_exceeded", 55-left)
	if rec := h.record(r.header.Get("X-Request-Id")); rec.Status != "rejected" || rec.ErrorType != "rate_limit_error" {
		t.Fatalf("record %+v", rec)
	}
	if c := mockCalls(t, h.alpha).Total; c != before {
		t.Fatalf("a refused request reached the provider (%d calls, %d before)", c, before)
	}
	// Key B has no token limit: unaffected.
	if r := h.chat(h.keyB, quotaBody(50, false, "")); r.status != 200 {
		t.Fatalf("key B: %d %s", r.status, r.body)
	}
	now.Add(int64(time.Duration(55-left-1) * time.Second))
	wantQuotaError(t, h.chat(h.keyA, quotaBody(50, false, "")), 429, "rate_limit_error", "tokens_per_minute_exceeded", 1)
	now.Add(int64(time.Second))
	if r := h.chat(h.keyA, quotaBody(50, false, "")); r.status != 200 {
		t.Fatalf("after the refill: %d %s", r.status, r.body)
	}
}

// Two keys in one group draw from the group's budget; the group's refusal
// says so, and its Retry-After is the end of the period (the UTC day here).
func TestGroupBudgetSharedByTwoKeys(t *testing.T) {
	h := newHarness(t, func(s *snapshot.Snapshot) {
		priced(s)
		s.Keys[0].Group, s.Keys[1].Group = "team", "team"
		// room for 3 requests of max_tokens 4
		s.Groups = []snapshot.Group{{Name: "team", Budget: &snapshot.Budget{Amount: "0.000012", Period: snapshot.PeriodDay}}}
	})
	h.srv.SetClockForTest(func() time.Time { return time.Date(2026, 11, 5, 23, 59, 30, 0, time.UTC) })
	for i, key := range []string{h.keyA, h.keyB, h.keyA} {
		if r := h.chat(key, quotaBody(4, i == 1, "")); r.status != 200 {
			t.Fatalf("request %d: %d %s", i, r.status, r.body)
		}
	}
	for _, key := range []string{h.keyB, h.keyA} {
		r := h.chat(key, quotaBody(1, false, ""))
		wantQuotaError(t, r, 429, "insufficient_quota", "budget_exceeded", 30)
		if e := r.errorBody(t); !strings.Contains(e.Error.Message, `budget group "team"`) {
			t.Fatalf("message %q does not name the group", e.Error.Message)
		}
	}
	// /v1/usage says what was spent: 3 × 4 tokens at $1/M.
	var spent int64
	for _, key := range []string{h.keyA, h.keyB} {
		u := h.do(http.MethodGet, "/v1/usage", key, "")
		var list struct {
			Data []struct {
				Status string `json:"status"`
				Cost   string `json:"cost"`
			} `json:"data"`
		}
		if err := json.Unmarshal(u.body, &list); err != nil {
			t.Fatal(err)
		}
		for _, d := range list.Data {
			if d.Status == "success" {
				if d.Cost != "0.000004" {
					t.Fatalf("a request cost %s, want 0.000004", d.Cost)
				}
				spent++
			}
		}
	}
	if spent != 3 {
		t.Fatalf("%d successful requests in /v1/usage, want 3", spent)
	}
}

// A key whose group does not exist is refused before any provider is
// called (fail closed).
func TestMissingGroupFailsClosed(t *testing.T) {
	h := newHarness(t, func(s *snapshot.Snapshot) { s.Keys[0].Group = "gone" })
	r := h.chat(h.keyA, quotaBody(5, false, ""))
	wantQuotaError(t, r, 403, "permission_error", "budget_group_missing", -1)
	if c := mockCalls(t, h.alpha).Total; c != 0 {
		t.Fatalf("provider called %d times", c)
	}
	if r := h.chat(h.keyB, quotaBody(5, false, "")); r.status != 200 {
		t.Fatalf("key B: %d %s", r.status, r.body)
	}
}

// Settlement returns what a request reserved but did not use, on every way
// a request can end. Each case runs in a budget period of its own (the
// clock moves a month): the budget has room for 30 tokens, the case
// reserves all 30 and uses less; then exactly what it did not use must be
// free again: a request reserving one token more is refused, one reserving
// exactly that is admitted (without settlement both would be refused).
func TestSettlementReturnsUnusedRoom(t *testing.T) {
	h := newHarness(t, func(s *snapshot.Snapshot) {
		priced(s)
		s.Keys[0].Budget = &snapshot.Budget{Amount: "0.00003", Period: snapshot.PeriodMonth} // 30 tokens
	})
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 5, 12, 0, 0, 0, time.UTC).UnixNano())
	h.srv.SetClockForTest(func() time.Time { return time.Unix(0, now.Load()) })
	chat := func(directive string, stream bool) string {
		r := h.chat(h.keyA, quotaBody(30, stream, directive))
		return r.header.Get("X-Request-Id")
	}
	cases := []struct {
		name, status string
		run          func() string // returns the request id
	}{
		{"success", "success", func() string { return chat("", false) }},
		{"success, stream", "success", func() string { return chat("", true) }},
		{"every route fails", "error", func() string { return chat("*:status=500", false) }},
		{"fallback", "success", func() string { return chat("alpha:status=503", false) }},
		{"stream cut after the commit point", "partial", func() string { return chat("alpha:chunks=5 alpha:drop_after=2", true) }},
		{"client cancel", "canceled", func() string {
			id := h.cancelAfterFirstBytes(h.keyA, quotaBody(30, true, "alpha:chunks=5 alpha:stall_after=1"))
			waitFor(t, 5*time.Second, func() bool {
				r, err := h.ledger.Get(context.Background(), id)
				return err == nil && r.Status != "in_progress"
			})
			return id
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			now.Store(time.Unix(0, now.Load()).AddDate(0, 1, 0).UnixNano())
			rec := h.record(c.run())
			used := 0
			if rec.Provider != "" {
				used = rec.OutputTokens // $1/M, input free
			}
			t.Logf("record %s, %d+%d tokens, cost %s", rec.Status, rec.InputTokens, rec.OutputTokens, rec.Cost)
			if rec.Status != c.status {
				t.Fatalf("record status %s, want %s", rec.Status, c.status)
			}
			if used >= 30 {
				t.Fatalf("the request used all it reserved (%d tokens): nothing to give back", used)
			}
			left := 30 - used
			wantQuotaError(t, h.chat(h.keyA, quotaBody(left+1, false, "*:status=400")), 429, "insufficient_quota", "budget_exceeded", -1)
			// A provider 400 costs nothing, so it hands all of left back.
			if r := h.chat(h.keyA, quotaBody(left, false, "*:status=400")); r.status != 400 {
				t.Fatalf("%d of the budget should be free: %d %s", left, r.status, r.body)
			}
			if r := h.chat(h.keyA, quotaBody(left, false, "*:status=400")); r.status != 400 {
				t.Fatalf("a provider error kept some of the budget: %d %s", r.status, r.body)
			}
		})
	}
}
