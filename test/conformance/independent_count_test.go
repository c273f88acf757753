// Package conformance holds black-box checks of the whole local stack (a
// real gateway over both mock providers, gateway/localstack) against counts
// made outside the gateway.
package conformance

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/wire/openai"
	"github.com/llmgw/llmgw/gateway/localstack"
	"github.com/llmgw/llmgw/mockproviders"
)

// The price list, as configured (some entries superseded or not yet in
// effect) and, separately, the prices that must apply to every request of
// the run. The expected costs are computed from applied with math/big,
// never with the gateway's own cost code.
var (
	past   = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	future = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

	configured = map[string][]snapshot.Price{
		"alpha": {
			{Model: "alpha-large", InputPerMillion: "9", OutputPerMillion: "9"}, // superseded in 2020
			{Model: "alpha-large", InputPerMillion: "2.5", CachedInputPerMillion: "1.25", OutputPerMillion: "10",
				ReasoningPerMillion: "12.5", EffectiveFrom: &past},
			{Model: "alpha-large", InputPerMillion: "999", OutputPerMillion: "999", EffectiveFrom: &future},
			{Model: "alpha-small", InputPerMillion: "0.15", OutputPerMillion: "0.6"},
		},
		"beta": {
			{Model: "beta-large", InputPerMillion: "3", CachedInputPerMillion: "0.3", OutputPerMillion: "15.000001"},
		},
	}

	// applied[provider][model]: per million input, cached input, output,
	// reasoning tokens (defaults spelled out: cached = input, reasoning =
	// output).
	applied = map[string]map[string][4]string{
		"alpha": {
			"alpha-large": {"2.5", "1.25", "10", "12.5"},
			"alpha-small": {"0.15", "0.15", "0.6", "0.6"},
		},
		"beta": {"beta-large": {"3", "0.3", "15.000001", "15.000001"}},
	}

	// routeModel[provider][alias] is the model a provider serves an alias
	// with, primary or fallback (gateway/localstack's demo aliases).
	routeModel = map[string]map[string]string{
		"alpha": {"chat-alpha": "alpha-large", "chat-beta": "alpha-large", "chat-restricted": "alpha-small"},
		"beta":  {"chat-alpha": "beta-large", "chat-beta": "beta-large"},
	}
)

// scenario is one kind of request in the mixed workload.
type scenario struct {
	name      string
	alias     string
	stream    bool
	directive string
	// cancelAfterChunks > 0: the client goes away after that many content
	// chunks; cancelAfter > 0: after that long (a JSON request).
	cancelAfterChunks int
	cancelAfter       time.Duration
}

var scenarios = []scenario{
	{name: "json", alias: "chat-alpha"},
	{name: "json cached+reasoning", alias: "chat-alpha", directive: "alpha:cached_tokens=2 alpha:reasoning_tokens=7"},
	{name: "json beta cached+reasoning", alias: "chat-beta", directive: "beta:cached_tokens=3 beta:reasoning_tokens=4"},
	{name: "sse alpha", alias: "chat-alpha", stream: true, directive: "alpha:cached_tokens=1 alpha:reasoning_tokens=5 alpha:chunks=3"},
	{name: "sse beta", alias: "chat-beta", stream: true, directive: "beta:cached_tokens=2 beta:reasoning_tokens=3"},
	{name: "fallback json after 503", alias: "chat-alpha", directive: "alpha:status=503 beta:cached_tokens=1"},
	{name: "fallback sse after 429", alias: "chat-beta", stream: true, directive: "beta:status=429 beta:retry_after=1 alpha:reasoning_tokens=2"},
	{name: "fallback sse after a cut before content", alias: "chat-alpha", stream: true, directive: "alpha:drop_after=0 beta:reasoning_tokens=1"},
	{name: "fallback sse after an error before content", alias: "chat-beta", stream: true, directive: "beta:error_after=0 alpha:cached_tokens=4"},
	{name: "stream cut", alias: "chat-alpha", stream: true, directive: "alpha:drop_after=2 alpha:chunks=5 alpha:cached_tokens=3"},
	{name: "stream error", alias: "chat-beta", stream: true, directive: "beta:error_after=1 beta:chunks=4 beta:cached_tokens=1"},
	{name: "client cancels a stream", alias: "chat-alpha", stream: true, directive: "alpha:stall_after=2 alpha:chunks=5 alpha:reasoning_tokens=9",
		cancelAfterChunks: 2},
	{name: "client cancels a json request", alias: "chat-beta", directive: "beta:delay_ms=5000", cancelAfter: 150 * time.Millisecond},
	{name: "sse without usage", alias: "chat-beta", stream: true, directive: "beta:no_usage=1 beta:cached_tokens=2"},
	{name: "json without usage", alias: "chat-alpha", directive: "alpha:no_usage=1 alpha:reasoning_tokens=3"},
	{name: "restricted alias", alias: "chat-restricted", directive: "alpha:cached_tokens=1"},
	{name: "every route fails", alias: "chat-alpha", directive: "*:status=503"},
}

const rounds = 2

type stackKey struct {
	id, plain string
}

// TestIndependentCount drives the workload for several keys at once, then
// checks, per key, the ledger's totals (GET /v1/usage/summary) against the
// mocks' own count of what they delivered (GET /mock/calls) and against a
// cost computed here from the price list: equal to the token and to the
// pico-unit.
func TestIndependentCount(t *testing.T) {
	keyC, keyD := newKey(t), newKey(t)
	st, err := localstack.Start(t.Context(), localstack.Options{Dir: t.TempDir(), DrainTimeout: 2 * time.Second,
		Logger: slog.New(slog.DiscardHandler),
		Mutate: func(s *snapshot.Snapshot) {
			off := 0 // breakers would reroute mid-run; routing is not under test here
			for i := range s.Providers {
				p := &s.Providers[i]
				p.Prices = configured[p.Name]
				p.CircuitBreaker.ConsecutiveFailures = &off
			}
			for i := range s.Keys {
				s.Keys[i].RateLimit = snapshot.RateLimit{RPM: 6000, Burst: 1000}
			}
			add := func(id, plain string, rl snapshot.RateLimit) {
				prefix, _ := keyformat.PrefixOf(plain)
				s.Keys = append(s.Keys, snapshot.Key{ID: id, Prefix: prefix, Hash: keyformat.Hash(plain),
					Models: []string{snapshot.AllModels}, RateLimit: rl})
			}
			add("key-c", keyC, snapshot.RateLimit{RPM: 6000, Burst: 1000})
			add("key-d", keyD, snapshot.RateLimit{RPM: 1, Burst: 3}) // most of its requests get 429
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("closing the stack: %v", err)
		}
	})
	keys := []stackKey{{"key-a", st.KeyA}, {"key-b", st.KeyB}, {"key-c", keyC}, {"key-d", keyD}}
	from := time.Now().Add(-time.Second).UTC()

	statuses := runWorkload(t, st.URL, keys)
	sent := map[string]int64{}
	for k, byCode := range statuses {
		for _, n := range byCode {
			sent[k] += n
		}
	}
	t.Logf("HTTP statuses by key: %v", statuses)
	// The workload must have reached what it is meant to cover.
	if statuses["key-d"][http.StatusTooManyRequests] == 0 {
		t.Errorf("key-d was never rate limited: %v", statuses["key-d"])
	}
	if statuses["key-b"][http.StatusForbidden] == 0 {
		t.Errorf("key-b was never refused chat-restricted: %v", statuses["key-b"])
	}

	to := time.Now().Add(time.Minute).UTC()
	waitLedger(t, st, keys, sent, from, to)
	alpha, beta := settledCalls(t, st.AlphaURL), settledCalls(t, st.BetaURL)
	mocks := map[string]mockproviders.Calls{"alpha": alpha, "beta": beta}

	covered := map[string]bool{}
	for _, k := range keys {
		got := summary(t, st.URL, k.plain, from, to)
		want, wantCost := expected(t, k.id, mocks)
		if got.InputTokens != want.InputTokens || got.CachedInputTokens != want.CachedInputTokens ||
			got.OutputTokens != want.OutputTokens || got.ReasoningTokens != want.ReasoningTokens {
			t.Errorf("%s: ledger tokens in/cached/out/reasoning = %d/%d/%d/%d, mocks delivered %d/%d/%d/%d",
				k.id, got.InputTokens, got.CachedInputTokens, got.OutputTokens, got.ReasoningTokens,
				want.InputTokens, want.CachedInputTokens, want.OutputTokens, want.ReasoningTokens)
		}
		if got.Requests != sent[k.id] {
			t.Errorf("%s: ledger has %d requests, the client sent %d", k.id, got.Requests, sent[k.id])
		}
		gotCost := decimal(t, got.Cost)
		if got.Currency != "USD" || gotCost.Cmp(wantCost) != 0 {
			t.Errorf("%s: ledger cost %s %s, independent count %s USD", k.id, got.Cost, got.Currency, wantCost.FloatString(12))
		}
		// The records' own costs add up to the summary's.
		recs := records(t, st.URL, k.plain)
		sum := new(big.Rat)
		for _, r := range recs {
			sum.Add(sum, decimal(t, r.Cost))
			covered[r.Status] = true
			if r.Fallbacks > 0 {
				covered["fallback"] = true
			}
			if r.CachedInputTokens > 0 && r.ReasoningTokens > 0 {
				covered["cached+reasoning"] = true
			}
		}
		if int64(len(recs)) != sent[k.id] || sum.Cmp(gotCost) != 0 {
			t.Errorf("%s: %d records adding up to %s; summary says %d requests, %s", k.id, len(recs), sum.FloatString(12),
				got.Requests, got.Cost)
		}
		t.Logf("%s: %d requests, tokens in/cached/out/reasoning %d/%d/%d/%d, cost %s %s", k.id, got.Requests,
			got.InputTokens, got.CachedInputTokens, got.OutputTokens, got.ReasoningTokens, got.Cost, got.Currency)
	}
	for _, c := range []string{"success", "partial", "canceled", "error", "rejected", "fallback", "cached+reasoning"} {
		if !covered[c] {
			t.Errorf("the workload produced no %s record", c)
		}
	}
}

func newKey(t *testing.T) string {
	t.Helper()
	plain, _, _, err := keyformat.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return plain
}

// runWorkload sends every scenario rounds times for every key, eight at a
// time, and returns the HTTP statuses seen per key (0: the client canceled).
func runWorkload(t *testing.T, base string, keys []stackKey) map[string]map[int]int64 {
	type job struct {
		key stackKey
		sc  scenario
	}
	jobs := make(chan job)
	var mu sync.Mutex
	statuses := map[string]map[int]int64{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for j := range jobs {
				code := send(t, base, j.key, j.sc)
				mu.Lock()
				if statuses[j.key.id] == nil {
					statuses[j.key.id] = map[int]int64{}
				}
				statuses[j.key.id][code]++
				mu.Unlock()
			}
		})
	}
	for range rounds {
		for _, sc := range scenarios {
			for _, k := range keys {
				jobs <- job{k, sc}
			}
		}
	}
	close(jobs)
	wg.Wait()
	return statuses
}

// send makes one request; user tags it with key and alias, so the mocks
// count what they delivered per key and per route model.
func send(t *testing.T, base string, k stackKey, sc scenario) int {
	content := "Tell me something deterministic please"
	if sc.directive != "" {
		content += "\n@mock " + sc.directive
	}
	user, on := k.id+"|"+sc.alias, true
	body := openai.ChatCompletionRequest{Model: sc.alias, User: &user, Messages: []openai.Message{
		{Role: "system", Content: openai.Text("You are terse")}, {Role: "user", Content: openai.Text(content)}}}
	if sc.stream {
		body.Stream, body.StreamOptions = &on, &openai.StreamOptions{IncludeUsage: &on}
	}
	raw, err := jsonv2.Marshal(body)
	if err != nil {
		t.Error(err)
		return -1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if sc.cancelAfter > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, sc.cancelAfter)
		defer stop()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", strings.NewReader(string(raw)))
	if err != nil {
		t.Error(err)
		return -1
	}
	req.Header.Set("Authorization", "Bearer "+k.plain)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if sc.cancelAfter > 0 && errors.Is(err, context.DeadlineExceeded) {
			return 0
		}
		t.Errorf("%s %s: %v", k.id, sc.name, err)
		return -1
	}
	defer resp.Body.Close()
	if sc.cancelAfterChunks > 0 && resp.StatusCode == http.StatusOK {
		if n := readChunks(resp.Body, sc.cancelAfterChunks); n != sc.cancelAfterChunks {
			t.Errorf("%s %s: got %d content chunks before the stall, want %d", k.id, sc.name, n, sc.cancelAfterChunks)
		}
		cancel()
		return 0
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Errorf("%s %s: reading the body: %v", k.id, sc.name, err)
	}
	if sc.cancelAfter > 0 && resp.StatusCode < 400 {
		// Only a refusal (a rate-limited key) may answer before the client gives up.
		t.Errorf("%s %s: answered %d before the client gave up", k.id, sc.name, resp.StatusCode)
	}
	return resp.StatusCode
}

// readChunks reads SSE events until n content chunks have arrived.
func readChunks(body io.Reader, n int) int {
	sc := bufio.NewScanner(body)
	got := 0
	for got < n && sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c openai.ChatCompletionChunk
		if jsonv2.Unmarshal([]byte(data), &c) == nil && len(c.Choices) == 1 && c.Choices[0].Delta.Content != nil &&
			*c.Choices[0].Delta.Content != "" {
			got++
		}
	}
	return got
}

// waitLedger waits until every request has its final record (canceled ones
// are finalized after the client left), reading the ledger in-process so
// that polling spends none of a key's read budget.
func waitLedger(t *testing.T, st *localstack.Stack, keys []stackKey, sent map[string]int64, from, to time.Time) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, k := range keys {
		for {
			tot, err := st.Ledger.Summary(t.Context(), k.id, from, to)
			if err != nil {
				t.Fatal(err)
			}
			if tot.Requests == sent[k.id] {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d final records, want %d", k.id, tot.Requests, sent[k.id])
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// settledCalls reads a mock's counters once every call has ended.
func settledCalls(t *testing.T, base string) mockproviders.Calls {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var c mockproviders.Calls
		getJSON(t, base+"/mock/calls", "", &c)
		if c.Done == c.Total {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("mock %s never settled: %d of %d calls done", base, c.Done, c.Total)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tokenTotals is what a key used, by kind.
type tokenTotals struct {
	InputTokens, CachedInputTokens, OutputTokens, ReasoningTokens int64
}

// expected adds up, for one key, what the mocks delivered, and prices it
// from the applied price list. Tokens a mock delivered without reporting
// usage count as plain input and output: the client (and the gateway) knew
// nothing of cache or reasoning for them.
func expected(t *testing.T, keyID string, mocks map[string]mockproviders.Calls) (tokenTotals, *big.Rat) {
	t.Helper()
	var tot tokenTotals
	cost := new(big.Rat)
	for provider, calls := range mocks {
		for user, tk := range calls.TokensByUser {
			id, alias, ok := strings.Cut(user, "|")
			if !ok {
				t.Fatalf("mock %s delivered to an untagged user %q: %+v", provider, user, tk)
			}
			if id != keyID {
				continue
			}
			model, ok := routeModel[provider][alias]
			if !ok {
				t.Fatalf("mock %s served alias %s, which it has no route for", provider, alias)
			}
			p := applied[provider][model]
			in := tk.InputTokens + tk.UnreportedInputTokens
			out := tk.OutputTokens + tk.UnreportedOutputTokens
			tot.InputTokens += in
			tot.CachedInputTokens += tk.CachedInputTokens
			tot.OutputTokens += out
			tot.ReasoningTokens += tk.ReasoningTokens
			for _, term := range []struct {
				tokens int64
				price  string
			}{
				{in - tk.CachedInputTokens, p[0]},
				{tk.CachedInputTokens, p[1]},
				{out - tk.ReasoningTokens, p[2]},
				{tk.ReasoningTokens, p[3]},
			} {
				c := new(big.Rat).Mul(new(big.Rat).SetInt64(term.tokens), decimal(t, term.price))
				cost.Add(cost, c.Quo(c, big.NewRat(1_000_000, 1)))
			}
		}
	}
	return tot, cost
}

func decimal(t *testing.T, s string) *big.Rat {
	t.Helper()
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		t.Fatalf("%q is not a decimal", s)
	}
	return r
}

type summaryJSON struct {
	Requests          int64  `json:"requests"`
	InputTokens       int64  `json:"input_tokens"`
	CachedInputTokens int64  `json:"cached_input_tokens"`
	OutputTokens      int64  `json:"output_tokens"`
	ReasoningTokens   int64  `json:"reasoning_tokens"`
	Cost              string `json:"cost"`
	Currency          string `json:"currency"`
}

func summary(t *testing.T, base, key string, from, to time.Time) summaryJSON {
	t.Helper()
	q := url.Values{"from": {from.Format(time.RFC3339Nano)}, "to": {to.Format(time.RFC3339Nano)}}
	var s summaryJSON
	getJSON(t, base+"/v1/usage/summary?"+q.Encode(), key, &s)
	return s
}

type recordJSON struct {
	Status            string `json:"status"`
	Fallbacks         int    `json:"fallbacks"`
	CachedInputTokens int    `json:"cached_input_tokens"`
	ReasoningTokens   int    `json:"reasoning_tokens"`
	Cost              string `json:"cost"`
	Currency          string `json:"currency"`
}

// records lists a key's records in one page (the run makes fewer than 500
// per key), spending one read of the key's read budget.
func records(t *testing.T, base, key string) []recordJSON {
	t.Helper()
	var page struct {
		Data    []recordJSON `json:"data"`
		HasMore bool         `json:"has_more"`
	}
	getJSON(t, base+"/v1/usage?limit=500", key, &page)
	if page.HasMore {
		t.Fatal("more than one page of records")
	}
	return page.Data
}

func getJSON(t *testing.T, u, key string, v any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	if err := jsonv2.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %s", u, err, b)
	}
}
