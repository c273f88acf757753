package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/api/snapshot"
)

// withPrices prices alpha-large (cached and reasoning apart) and beta-large
// (defaults); alpha-small stays unpriced.
func withPrices(s *snapshot.Snapshot) {
	for i := range s.Providers {
		p := &s.Providers[i]
		switch p.Name {
		case "alpha":
			p.Prices = []snapshot.Price{{Model: "alpha-large", InputPerMillion: "2", CachedInputPerMillion: "0.5",
				OutputPerMillion: "8", ReasoningPerMillion: "20"}}
		case "beta":
			p.Prices = []snapshot.Price{{Model: "beta-large", Currency: "USD", InputPerMillion: "3", OutputPerMillion: "15"}}
		}
	}
}

type usageWire struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// TestCostOnEveryRecord: the record, the response's usage and /v1/usage
// agree on the tokens, and the cost is the route's price applied to them:
// cached and reasoning tokens at their own rates, JSON and streamed.
func TestCostOnEveryRecord(t *testing.T) {
	h := newHarness(t, withPrices)
	price := func(u usageWire, in, cached, out, reasoning int64) money.Picos {
		// The expected cost by hand: rates are micro-units per million, which
		// is pico-units per token.
		return money.Picos(int64(u.PromptTokens-u.PromptTokensDetails.CachedTokens)*in +
			int64(u.PromptTokensDetails.CachedTokens)*cached +
			int64(u.CompletionTokens-u.CompletionTokensDetails.ReasoningTokens)*out +
			int64(u.CompletionTokensDetails.ReasoningTokens)*reasoning)
	}
	t.Run("json", func(t *testing.T) {
		r := h.chat(h.keyA, chatBody("chat-alpha", false, "alpha:cached_tokens=2 alpha:reasoning_tokens=5"))
		if r.status != http.StatusOK {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		var body struct{ Usage usageWire }
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatal(err)
		}
		u := body.Usage
		if u.PromptTokensDetails.CachedTokens != 2 || u.CompletionTokensDetails.ReasoningTokens != 5 ||
			u.TotalTokens != u.PromptTokens+u.CompletionTokens {
			t.Fatalf("usage %s", r.body)
		}
		rec := h.record(r.header.Get("X-Request-Id"))
		want := price(u, 2_000_000, 500_000, 8_000_000, 20_000_000)
		if rec.Cost != want || rec.Currency != "USD" || rec.CachedInputTokens != 2 || rec.ReasoningTokens != 5 ||
			rec.InputTokens != u.PromptTokens || rec.OutputTokens != u.CompletionTokens {
			t.Fatalf("record %+v, want cost %s", rec, want)
		}
	})
	t.Run("stream", func(t *testing.T) {
		r := h.chat(h.keyA, chatBody("chat-beta", true, "beta:cached_tokens=3"))
		if r.status != http.StatusOK {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		var u *usageWire
		for line := range strings.SplitSeq(string(r.body), "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || !strings.Contains(data, `"prompt_tokens"`) {
				continue
			}
			var c struct{ Usage *usageWire }
			if err := json.Unmarshal([]byte(data), &c); err != nil {
				t.Fatal(err)
			}
			u = c.Usage
		}
		if u == nil || u.PromptTokensDetails.CachedTokens != 3 {
			t.Fatalf("usage chunk: %s", r.body)
		}
		rec := h.record(r.header.Get("X-Request-Id"))
		// beta-large names no cached or reasoning rate: both default to input and output.
		if want := price(*u, 3_000_000, 3_000_000, 15_000_000, 15_000_000); rec.Cost != want || rec.Currency != "USD" {
			t.Fatalf("record cost %s %s, want %s", rec.Cost, rec.Currency, want)
		}
	})
	t.Run("unpriced route", func(t *testing.T) {
		r := h.chat(h.keyA, chatBody("chat-restricted", false, ""))
		rec := h.record(r.header.Get("X-Request-Id"))
		if r.status != http.StatusOK || rec.OutputTokens == 0 || rec.Cost != 0 || rec.Currency != "" {
			t.Fatalf("status %d, record %+v", r.status, rec)
		}
	})
	t.Run("usage listing", func(t *testing.T) {
		r := h.do(http.MethodGet, "/v1/usage?limit=10", h.keyA, "")
		var page struct {
			Data []map[string]any `json:"data"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil || len(page.Data) != 3 {
			t.Fatalf("listing %d: %s", r.status, r.body)
		}
		for _, item := range page.Data {
			for _, f := range []string{"cost", "currency", "cached_input_tokens", "reasoning_tokens"} {
				if _, ok := item[f]; !ok {
					t.Errorf("item lacks %s: %v", f, item)
				}
			}
			rec := h.record(item["request_id"].(string))
			if item["cost"] != rec.Cost.String() || item["currency"] != rec.Currency {
				t.Errorf("item cost %v %v, record %s %s", item["cost"], item["currency"], rec.Cost, rec.Currency)
			}
		}
	})
}

// TestUsageSummary: a key's totals over a range, only its own; the range
// is validated.
func TestUsageSummary(t *testing.T) {
	h := newHarness(t, withPrices)
	for range 2 {
		if r := h.chat(h.keyA, chatBody("chat-alpha", false, "alpha:cached_tokens=1 alpha:reasoning_tokens=2")); r.status != 200 {
			t.Fatalf("status %d", r.status)
		}
	}
	if r := h.chat(h.keyA, chatBody("chat-alpha", true, "")); r.status != 200 {
		t.Fatalf("status %d", r.status)
	}
	if r := h.chat(h.keyB, chatBody("chat-beta", false, "")); r.status != 200 {
		t.Fatalf("status %d", r.status)
	}
	recs, _, _, err := h.ledger.List(t.Context(), "key-a", 10, "")
	if err != nil || len(recs) != 3 {
		t.Fatalf("records %v, %v", recs, err)
	}
	var want struct {
		in, cached, out, reasoning int
		cost                       money.Picos
	}
	for _, r := range recs {
		want.in += r.InputTokens
		want.cached += r.CachedInputTokens
		want.out += r.OutputTokens
		want.reasoning += r.ReasoningTokens
		want.cost += r.Cost
	}
	type summary struct {
		Object            string  `json:"object"`
		KeyID             string  `json:"key_id"`
		From              string  `json:"from"`
		To                string  `json:"to"`
		Requests          int     `json:"requests"`
		InputTokens       int     `json:"input_tokens"`
		CachedInputTokens int     `json:"cached_input_tokens"`
		OutputTokens      int     `json:"output_tokens"`
		ReasoningTokens   int     `json:"reasoning_tokens"`
		Cost              *string `json:"cost"`
		Currency          *string `json:"currency"`
		Costs             []struct {
			Currency, Cost string
		} `json:"costs"`
	}
	get := func(key, query string) (summary, response) {
		r := h.do(http.MethodGet, "/v1/usage/summary"+query, key, "")
		var s summary
		if r.status == http.StatusOK {
			if err := json.Unmarshal(r.body, &s); err != nil {
				t.Fatal(err)
			}
		}
		return s, r
	}

	// The default range is the current calendar month (UTC) up to now.
	s, r := get(h.keyA, "")
	now := time.Now().UTC()
	if r.status != http.StatusOK || s.Object != "usage.summary" || s.KeyID != "key-a" ||
		!strings.HasPrefix(s.From, now.Format("2006-01")+"-01T00:00:00") {
		t.Fatalf("default summary %d: %s", r.status, r.body)
	}
	if s.Requests != 3 || s.InputTokens != want.in || s.CachedInputTokens != want.cached || s.OutputTokens != want.out ||
		s.ReasoningTokens != want.reasoning || s.Cost == nil || *s.Cost != want.cost.String() || *s.Currency != "USD" ||
		len(s.Costs) != 1 || s.Costs[0].Cost != want.cost.String() || want.cached != 2 || want.reasoning != 4 {
		t.Fatalf("summary %s, want %+v", r.body, want)
	}

	// Key B sees only its own request.
	if s, _ := get(h.keyB, ""); s.Requests != 1 || s.KeyID != "key-b" {
		t.Fatalf("key B summary %+v", s)
	}
	// A range before the requests: nothing, cost "0" with no currency.
	q := "?" + url.Values{"from": {"2020-01-01T00:00:00Z"}, "to": {"2020-02-01T00:00:00+01:00"}}.Encode()
	if s, r := get(h.keyA, q); r.status != 200 || s.Requests != 0 || *s.Cost != "0" || *s.Currency != "" || len(s.Costs) != 0 ||
		s.To != "2020-01-31T23:00:00Z" {
		t.Fatalf("empty range: %s", r.body)
	}
	for _, tc := range []struct{ query, param string }{
		{"?from=yesterday", "from"},
		{"?to=2026-13-01T00:00:00Z", "to"},
		{"?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z", "to"},
		{"?from=2024-01-01T00:00:00Z&to=2026-01-01T00:00:00Z", "from"},
	} {
		_, r := get(h.keyA, tc.query)
		var e struct {
			Error struct{ Param, Code string }
		}
		_ = json.Unmarshal(r.body, &e)
		if r.status != http.StatusBadRequest || e.Error.Param != tc.param || e.Error.Code != "invalid_value" {
			t.Errorf("%s: %d %s", tc.query, r.status, r.body)
		}
	}
	if _, r := get("", ""); r.status != http.StatusUnauthorized {
		t.Fatalf("no key: %d", r.status)
	}
}
