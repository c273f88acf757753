package server_test

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/localstack"
	"github.com/llmgw/llmgw/gateway/usage"
)

// The OpenTelemetry GenAI series (genai_metrics.go), driven by real
// requests through the local stack and read from /metrics as Prometheus
// reads them. Each case asserts exactly the series it adds to: their names,
// every label value and their counts; the token sums are the record's, the
// duration is the record's latency, time per output token follows from the
// duration and the time to first token, and the cost counter grows by the
// record's cost.

// genaiHarness is newMetricsHarness with more keys besides the demo's two,
// each allowed chat-alpha; it returns their plaintexts.
func genaiHarness(t *testing.T, more int) (*harness, string, []string) {
	t.Helper()
	var plains []string
	h, st := startStack(t, localstack.Options{Dir: t.TempDir(), MgmtAddr: "127.0.0.1:0",
		Mutate: func(s *snapshot.Snapshot) {
			to := snapshot.Timeouts{TotalMs: 5000, AttemptMs: 2000, FirstChunkMs: 2000, IdleMs: 1000}
			for i := range s.Aliases {
				s.Aliases[i].Timeouts = to
			}
			for i := range more {
				plain, prefix, hash, err := keyformat.Generate()
				if err != nil {
					t.Fatal(err)
				}
				plains = append(plains, plain)
				s.Keys = append(s.Keys, snapshot.Key{ID: fmt.Sprintf("extra-key-%02d", i), Prefix: prefix, Hash: hash,
					Models: []string{"chat-alpha"}})
			}
			for i := range s.Keys {
				s.Keys[i].RateLimit = snapshot.RateLimit{RPM: 6000, Burst: 1000}
			}
		}})
	return h, "http://" + st.MgmtAddr + "/metrics", plains
}

// promSample is one sample line of the text exposition.
type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrapeAll reads every sample from /metrics, and the raw text.
func scrapeAll(t *testing.T, url string) ([]promSample, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out []promSample
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			t.Fatalf("exposition line %q: %v", line, err)
		}
		out = append(out, s)
	}
	return out, string(raw)
}

// parseSample reads `name{k="v",...} value`, label values unquoted.
func parseSample(line string) (promSample, error) {
	s := promSample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, fmt.Errorf("no value")
	}
	s.name, line = line[:i], line[i:]
	if line[0] == '{' {
		line = line[1:]
		for line[0] != '}' {
			k, rest, ok := strings.Cut(line, "=")
			if !ok {
				return s, fmt.Errorf("label without value")
			}
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return s, err
			}
			v, _ := strconv.Unquote(q)
			s.labels[k] = v
			line = strings.TrimPrefix(rest[len(q):], ",")
			if line == "" {
				return s, fmt.Errorf("unterminated labels")
			}
		}
		line = line[1:]
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(line), 64)
	s.value = v
	return s, err
}

// seriesKey names a series: name{k=v,...} in label order, le left out.
func seriesKey(name string, labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		if k != "le" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(name + "{")
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k + "=" + labels[k])
	}
	return b.String() + "}"
}

// genaiValues are the samples of the GenAI histograms' _count and _sum and
// of the cost counter, by series.
func genaiValues(samples []promSample) map[string]float64 {
	out := map[string]float64{}
	for _, s := range samples {
		gen := strings.HasPrefix(s.name, "gen_ai_") && (strings.HasSuffix(s.name, "_count") || strings.HasSuffix(s.name, "_sum"))
		if gen || s.name == "llmgw_cost_total" {
			out[seriesKey(s.name, s.labels)] = s.value
		}
	}
	return out
}

// changed is after minus before, for the series that changed.
func changed(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// genaiCase is one request and the GenAI series it must add to.
type genaiCase struct {
	name   string
	send   func(h *harness) response
	status int
	// The labels of its series: endpoint, alias, the provider its record
	// names and, when that provider's answer reached the client, its
	// protocol and the route's model ("" otherwise).
	endpoint, alias, provider, protocol, model string
	errorType                                  string // "" on success
	// What it adds to: the input and output token histograms, the time to
	// first token, the time per output token (duration: always, when
	// routed).
	input, output, ttft, tpot bool
	routed                    bool // reached routing: a duration
	priced                    bool // its record carries a cost
	// outputTokens checks the record's output tokens (the precondition of
	// tpot), nil for none.
	outputTokens func(n int) bool
}

// want is the exact set of _count changes the case must make, all 1.
func (c *genaiCase) want() map[string]float64 {
	op := "chat"
	if c.endpoint == usage.EndpointEmbeddings {
		op = "embeddings"
	}
	base := map[string]string{"gen_ai_operation_name": op, "gen_ai_request_model": c.alias, "gen_ai_provider_name": c.protocol,
		"gen_ai_response_model": c.model, "llmgw_provider": c.provider, "llmgw_endpoint": c.endpoint}
	with := func(name, value string) map[string]string {
		m := map[string]string{name: value}
		for k, v := range base {
			m[k] = v
		}
		return m
	}
	w := map[string]float64{}
	if c.input {
		w[seriesKey("gen_ai_client_token_usage_count", with("gen_ai_token_type", "input"))] = 1
	}
	if c.output {
		w[seriesKey("gen_ai_client_token_usage_count", with("gen_ai_token_type", "output"))] = 1
	}
	if c.routed {
		w[seriesKey("gen_ai_server_request_duration_seconds_count", with("error_type", c.errorType))] = 1
	}
	if c.ttft {
		w[seriesKey("gen_ai_server_time_to_first_token_seconds_count", base)] = 1
	}
	if c.tpot {
		w[seriesKey("gen_ai_server_time_per_output_token_seconds_count", base)] = 1
	}
	return w
}

func TestGenAIMetricsPerRequest(t *testing.T) {
	h, metricsURL, _ := genaiHarness(t, 0)
	const session = "sess-0123456789abcdef"
	atLeast2 := func(n int) bool { return n >= 2 }
	exactly1 := func(n int) bool { return n == 1 }
	cases := []genaiCase{
		{name: "json chat", send: func(h *harness) response { return h.chat(h.keyA, chatBody("chat-alpha", false, "")) },
			status: 200, endpoint: "chat", alias: "chat-alpha", provider: "alpha", protocol: "openai", model: "alpha-large",
			input: true, output: true, routed: true, priced: true},
		{name: "stream", send: func(h *harness) response { return h.chat(h.keyA, chatBody("chat-beta", true, "")) },
			status: 200, endpoint: "chat", alias: "chat-beta", provider: "beta", protocol: "anthropic", model: "beta-large",
			input: true, output: true, ttft: true, tpot: true, routed: true, priced: true, outputTokens: atLeast2},
		{name: "stream of one output token", send: func(h *harness) response {
			return h.chat(h.keyB, `{"model":"chat-alpha","stream":true,"stream_options":{"include_usage":true},"max_tokens":1,`+
				`"messages":[{"role":"user","content":"Say one word"}]}`)
		},
			status: 200, endpoint: "chat", alias: "chat-alpha", provider: "alpha", protocol: "openai", model: "alpha-large",
			input: true, output: true, ttft: true, routed: true, priced: true, outputTokens: exactly1},
		{name: "embeddings", send: func(h *harness) response {
			return h.do(http.MethodPost, "/v1/embeddings", h.keyB, `{"model":"embed-alpha","input":"jumps over"}`)
		},
			status: 200, endpoint: "embeddings", alias: "embed-alpha", provider: "alpha", protocol: "openai", model: "alpha-embed",
			input: true, routed: true, priced: true},
		{name: "messages", send: func(h *harness) response {
			return h.postMessages(h.keyA, `{"model":"chat-beta","max_tokens":256,"messages":[{"role":"user","content":"Hello there"}]}`,
				http.Header{"X-Claude-Code-Session-Id": {session}})
		},
			status: 200, endpoint: "messages", alias: "chat-beta", provider: "beta", protocol: "anthropic", model: "beta-large",
			input: true, output: true, routed: true, priced: true},
		// The answering provider's protocol, not the caller's.
		{name: "messages stream to an openai provider", send: func(h *harness) response {
			return h.postMessages(h.keyA, `{"model":"chat-alpha","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"Hello there"}]}`,
				http.Header{"X-Claude-Code-Session-Id": {session}})
		},
			status: 200, endpoint: "messages", alias: "chat-alpha", provider: "alpha", protocol: "openai", model: "alpha-large",
			input: true, output: true, ttft: true, tpot: true, routed: true, priced: true, outputTokens: atLeast2},
		{name: "responses", send: func(h *harness) response {
			return h.do(http.MethodPost, "/v1/responses", h.keyA, `{"model":"chat-alpha","input":"Hello there"}`)
		},
			status: 200, endpoint: "responses", alias: "chat-alpha", provider: "alpha", protocol: "openai", model: "alpha-large",
			input: true, output: true, routed: true, priced: true},
		{name: "fallback to the other provider", send: func(h *harness) response {
			return h.chat(h.keyA, chatBody("chat-alpha", false, "alpha:status=503"))
		},
			status: 200, endpoint: "chat", alias: "chat-alpha", provider: "beta", protocol: "anthropic", model: "beta-large",
			input: true, output: true, routed: true, priced: true},
		{name: "provider 429", send: func(h *harness) response {
			return h.chat(h.keyA, chatBody("chat-restricted", false, "alpha:status=429"))
		},
			status: http.StatusTooManyRequests, endpoint: "chat", alias: "chat-restricted", provider: "alpha",
			errorType: "provider_error", routed: true},
		{name: "stream cut after its first content", send: func(h *harness) response {
			return h.chat(h.keyA, chatBody("chat-alpha", true, "alpha:chunks=3 alpha:error_after=1"))
		},
			status: 200, endpoint: "chat", alias: "chat-alpha", provider: "alpha", protocol: "openai", model: "alpha-large",
			errorType: "stream_error", input: true, output: true, ttft: true, routed: true, priced: true},
		{name: "refused: no key", send: func(h *harness) response { return h.chat("", chatBody("chat-alpha", false, "")) },
			status: http.StatusUnauthorized},
		{name: "refused: a model the key may not use", send: func(h *harness) response {
			return h.chat(h.keyB, chatBody("chat-restricted", false, ""))
		},
			status: http.StatusForbidden},
	}
	var records []usage.Record
	for _, c := range cases {
		before, _ := scrapeAll(t, metricsURL)
		r := c.send(h)
		if r.status != c.status {
			t.Fatalf("%s: status %d: %s", c.name, r.status, r.body)
		}
		rec := h.record(r.header.Get("X-Request-Id"))
		records = append(records, rec)
		after, _ := scrapeAll(t, metricsURL)
		got := changed(genaiValues(before), genaiValues(after))
		counts := map[string]float64{}
		for k, v := range got {
			if strings.Contains(k, "_count{") {
				counts[k] = v
			}
		}
		if w := c.want(); !mapsEqual(counts, w) {
			t.Errorf("%s: series counted:\n got %v\nwant %v", c.name, counts, w)
			continue
		}
		if c.outputTokens != nil && !c.outputTokens(rec.OutputTokens) {
			t.Fatalf("%s: the record has %d output tokens, not what the case needs", c.name, rec.OutputTokens)
		}
		checkGenAISums(t, &c, rec, got)
	}

	// The cost counter holds the records' cost, currency by currency.
	samples, raw := scrapeAll(t, metricsURL)
	total, want := map[string]float64{}, map[string]float64{}
	for _, s := range samples {
		if s.name == "llmgw_cost_total" {
			total[s.labels["currency"]] += s.value
		}
	}
	for _, r := range records {
		if r.Currency != "" {
			want[r.Currency] += float64(r.Cost) / money.PicosPerUnit
		}
	}
	if len(total) != len(want) || len(want) == 0 {
		t.Errorf("cost by currency %v, records say %v", total, want)
	}
	for cur, v := range want {
		if !near(total[cur], v) {
			t.Errorf("llmgw_cost_total in %s: %v, records say %v", cur, total[cur], v)
		}
	}

	// No label anywhere holds a key id, a request id or a session, and
	// neither a key nor those appear in the exposition at all.
	secret := []string{h.keyA, h.keyB, session}
	for _, r := range records {
		secret = append(secret, r.RequestID)
		if r.KeyID != "" {
			secret = append(secret, r.KeyID)
		}
	}
	for _, s := range secret {
		if strings.Contains(raw, s) {
			t.Errorf("/metrics holds %q", s)
		}
	}
	for _, s := range samples {
		for k := range s.labels {
			if strings.Contains(k, "key") || strings.Contains(k, "request_id") || strings.Contains(k, "session") {
				t.Errorf("%s has a label %q", s.name, k)
			}
		}
	}
}

// checkGenAISums checks the sums a case added: tokens are the record's,
// the duration its latency, time per output token what the duration and
// the time to first token make, the cost the record's.
func checkGenAISums(t *testing.T, c *genaiCase, rec usage.Record, got map[string]float64) {
	t.Helper()
	// sum is what name's one changed series grew by.
	sum := func(name string) (float64, bool) {
		for k, v := range got {
			if strings.HasPrefix(k, name+"{") {
				return v, true
			}
		}
		return 0, false
	}
	tokens := func(kind string) float64 {
		for k, v := range got {
			if strings.HasPrefix(k, "gen_ai_client_token_usage_sum{") && strings.Contains(k, "gen_ai_token_type="+kind+",") {
				return v
			}
		}
		return 0
	}
	if c.input && (tokens("input") != float64(rec.InputTokens) || rec.InputTokens == 0) {
		t.Errorf("%s: input tokens %v, record %d", c.name, tokens("input"), rec.InputTokens)
	}
	if c.output && tokens("output") != float64(rec.OutputTokens) {
		t.Errorf("%s: output tokens %v, record %d", c.name, tokens("output"), rec.OutputTokens)
	}
	if !c.routed {
		return
	}
	d, _ := sum("gen_ai_server_request_duration_seconds_sum")
	if ms := d * 1000; ms < float64(rec.LatencyMs)-1e-6 || ms >= float64(rec.LatencyMs)+1 {
		t.Errorf("%s: duration %vs, record latency %d ms", c.name, d, rec.LatencyMs)
	}
	if c.ttft {
		ttft, _ := sum("gen_ai_server_time_to_first_token_seconds_sum")
		tpot, ok := sum("gen_ai_server_time_per_output_token_seconds_sum")
		switch {
		case ttft <= 0:
			t.Errorf("%s: time to first token %v", c.name, ttft)
		case !c.tpot:
		case ttft <= d && !near(tpot*float64(rec.OutputTokens-1), d-ttft):
			t.Errorf("%s: time per output token %v × %d tokens after the first, duration %v − first token %v",
				c.name, tpot, rec.OutputTokens-1, d, ttft)
		case ttft > d && ok:
			// Sent at once, after the record ended: no time between tokens.
			t.Errorf("%s: time per output token %v for a stream flushed whole", c.name, tpot)
		}
	}
	cost, ok := sum("llmgw_cost_total")
	switch {
	case c.priced && (rec.Currency == "" || rec.Cost <= 0):
		t.Errorf("%s: the record is not priced (%d %q)", c.name, rec.Cost, rec.Currency)
	case !c.priced && (rec.Currency != "" || ok):
		t.Errorf("%s: unpriced, yet cost %v %q", c.name, cost, rec.Currency)
	case c.priced:
		k := seriesKey("llmgw_cost_total", map[string]string{"llmgw_endpoint": c.endpoint, "gen_ai_request_model": c.alias,
			"llmgw_provider": c.provider, "currency": rec.Currency})
		if v := got[k]; !near(v, float64(rec.Cost)/money.PicosPerUnit) {
			t.Errorf("%s: %s grew by %v, record cost %s", c.name, k, v, rec.Cost)
		}
	}
}

// near: equal within float rounding.
func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))+1e-15
}

// Label cardinality is bounded by the configuration: requests from many
// keys, with model names, sessions and client request ids the callers
// chose, add no series once each configured combination has its own.
func TestGenAISeriesDoNotGrowWithCallerInput(t *testing.T) {
	h, metricsURL, keys := genaiHarness(t, 12)
	round := func(i int, key string) {
		hdr := http.Header{"Authorization": {"Bearer " + key}, "X-Client-Request-Id": {fmt.Sprintf("client-req-%d", i)},
			"X-Claude-Code-Session-Id": {fmt.Sprintf("session-%d", i)}}
		for _, c := range []struct {
			body   string
			status int
		}{
			{chatBody("chat-alpha", false, ""), http.StatusOK},
			{chatBody("chat-alpha", true, ""), http.StatusOK},
			{chatBody(fmt.Sprintf("caller-model-%d", i), false, ""), http.StatusForbidden},
			{chatBody(fmt.Sprintf("caller-model-%d", i), true, ""), http.StatusForbidden},
		} {
			if r := postTo(t, h.gw.URL+"/v1/chat/completions", hdr, c.body); r.status != c.status {
				t.Fatalf("round %d: status %d: %s", i, r.status, r.body)
			}
		}
		bogus, _, _, err := keyformat.Generate()
		if err != nil {
			t.Fatal(err)
		}
		if r := h.chat(bogus, chatBody("chat-alpha", false, "")); r.status != http.StatusUnauthorized {
			t.Fatalf("unknown key: status %d", r.status)
		}
	}
	count := func() (int, string) {
		samples, raw := scrapeAll(t, metricsURL)
		n := 0
		for _, s := range samples {
			if strings.HasPrefix(s.name, "gen_ai_") || strings.HasPrefix(s.name, "llmgw_") {
				n++
			}
		}
		return n, raw
	}
	round(0, keys[0])
	first, _ := count()
	for i, k := range keys[1:] {
		round(i+1, k)
	}
	round(len(keys), h.keyA)
	round(len(keys)+1, h.keyB)
	last, raw := count()
	if last != first {
		t.Errorf("%d series after %d keys and as many model names, sessions and request ids; %d after one", last, len(keys)+2, first)
	}
	for _, s := range []string{"caller-model-", "session-", "client-req-", "extra-key-"} {
		if strings.Contains(raw, s) {
			t.Errorf("/metrics holds %q", s)
		}
	}
}
