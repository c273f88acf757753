package server_test

import (
	"bufio"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/localstack"
)

// newMetricsHarness is newHarness with the management port on, so that
// tests read the histograms the way Prometheus does.
func newMetricsHarness(t *testing.T) (*harness, string) {
	t.Helper()
	h, st := startStack(t, localstack.Options{Dir: t.TempDir(), MgmtAddr: "127.0.0.1:0",
		Mutate: func(s *snapshot.Snapshot) {
			to := snapshot.Timeouts{TotalMs: 5000, AttemptMs: 2000, FirstChunkMs: 2000, IdleMs: 1000}
			for i := range s.Aliases {
				s.Aliases[i].Timeouts = to
			}
			for i := range s.Keys {
				s.Keys[i].RateLimit = snapshot.RateLimit{RPM: 6000, Burst: 1000}
			}
		}})
	return h, "http://" + st.MgmtAddr + "/metrics"
}

// sample is one line of the text exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrape reads every llmgw_ sample from /metrics, and the raw text.
func scrape(t *testing.T, url string) ([]sample, string) {
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
	var out []sample
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "llmgw_") {
			continue
		}
		head, val, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("exposition line %q", line)
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			t.Fatalf("exposition line %q: %v", line, err)
		}
		s := sample{name: head, labels: map[string]string{}, value: v}
		if name, rest, ok := strings.Cut(head, "{"); ok {
			s.name = name
			for _, kv := range strings.Split(strings.TrimSuffix(rest, "}"), ",") {
				k, q, _ := strings.Cut(kv, "=")
				s.labels[k] = strings.Trim(q, `"`)
			}
		}
		out = append(out, s)
	}
	return out, string(raw)
}

// series sums name's samples by their labels (le excluded), written
// "k=v,k=v" in label order; zero series are left out.
func series(samples []sample, name string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range samples {
		if s.name != name || s.value == 0 {
			continue
		}
		var keys []string
		for k := range s.labels {
			if k != "le" {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		var b strings.Builder
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(k + "=" + s.labels[k])
		}
		out[b.String()] += s.value
	}
	return out
}

// The histograms, driven by real requests: JSON and SSE, fallbacks to the
// second provider, a stream cut after its first content, a provider
// failure and rejections. Each answered request lands once under the
// configured alias and the provider that answered, its tokens sum to its
// usage records', added latency leaves provider time out (a slow provider
// does not show in it, but does in the time to first content), and nothing
// the caller names becomes a label.
func TestHistogramsPerAliasAndProvider(t *testing.T) {
	h, metricsURL := newMetricsHarness(t)
	const slowMs = 600
	const unknownModel = "caller-chosen-model-xyz"
	cases := []struct {
		name      string
		key       string
		model     string
		stream    bool
		directive string
		status    int
		provider  string // "" when no provider answered
	}{
		{"json", h.keyA, "chat-alpha", false, "", 200, "alpha"},
		{"json again", h.keyA, "chat-alpha", false, "", 200, "alpha"},
		{"sse", h.keyA, "chat-alpha", true, "", 200, "alpha"},
		{"sse cut after first content", h.keyA, "chat-alpha", true, "alpha:chunks=3 alpha:error_after=1", 200, "alpha"},
		{"json fallback after a slow 503", h.keyA, "chat-alpha", false, "alpha:status=503 alpha:delay_ms=" + strconv.Itoa(slowMs), 200, "beta"},
		{"sse fallback", h.keyA, "chat-alpha", true, "alpha:status=503", 200, "beta"},
		{"sse slow provider", h.keyA, "chat-beta", true, "beta:delay_ms=" + strconv.Itoa(slowMs), 200, "beta"},
		{"provider failure", h.keyA, "chat-restricted", false, "alpha:status=503", http.StatusBadGateway, ""},
		{"unknown model", h.keyA, unknownModel, false, "", http.StatusForbidden, ""},
		{"alias not allowed", h.keyB, "chat-restricted", true, "", http.StatusForbidden, ""},
		{"no key", "", "chat-alpha", false, "", http.StatusUnauthorized, ""},
	}
	type pair struct{ alias, provider string }
	tokens := map[pair][2]int64{}
	for _, tc := range cases {
		start := time.Now()
		r := h.chat(tc.key, chatBody(tc.model, tc.stream, tc.directive))
		took := time.Since(start)
		if r.status != tc.status {
			t.Fatalf("%s: status %d: %s", tc.name, r.status, r.body)
		}
		if strings.Contains(tc.directive, "delay_ms") && took < slowMs*time.Millisecond {
			t.Fatalf("%s: answered in %v, before the provider's delay", tc.name, took)
		}
		if tc.provider == "" {
			continue
		}
		rec := h.record(r.header.Get("X-Request-Id"))
		if rec.Provider != tc.provider {
			t.Fatalf("%s: answered by %q", tc.name, rec.Provider)
		}
		p := pair{tc.model, tc.provider}
		tokens[p] = [2]int64{tokens[p][0] + int64(rec.InputTokens), tokens[p][1] + int64(rec.OutputTokens)}
	}

	samples, raw := scrape(t, metricsURL)
	if strings.Contains(raw, unknownModel) {
		t.Fatal("a model name the caller chose appears in /metrics")
	}
	want := map[string]map[string]float64{
		"llmgw_gateway_added_seconds_count": {
			"alias=chat-alpha,endpoint=chat,provider=alpha,stream=false": 2,
			"alias=chat-alpha,endpoint=chat,provider=alpha,stream=true":  2,
			"alias=chat-alpha,endpoint=chat,provider=beta,stream=false":  1,
			"alias=chat-alpha,endpoint=chat,provider=beta,stream=true":   1,
			"alias=chat-beta,endpoint=chat,provider=beta,stream=true":    1,
		},
		"llmgw_time_to_first_content_seconds_count": {
			"alias=chat-alpha,endpoint=chat,provider=alpha": 2,
			"alias=chat-alpha,endpoint=chat,provider=beta":  1,
			"alias=chat-beta,endpoint=chat,provider=beta":   1,
		},
		"llmgw_request_tokens_count": {
			"alias=chat-alpha,endpoint=chat,kind=input,provider=alpha":  4,
			"alias=chat-alpha,endpoint=chat,kind=output,provider=alpha": 4,
			"alias=chat-alpha,endpoint=chat,kind=input,provider=beta":   2,
			"alias=chat-alpha,endpoint=chat,kind=output,provider=beta":  2,
			"alias=chat-beta,endpoint=chat,kind=input,provider=beta":    1,
			"alias=chat-beta,endpoint=chat,kind=output,provider=beta":   1,
		},
	}
	for name, w := range want {
		if got := series(samples, name); !mapsEqual(got, w) {
			t.Errorf("%s:\n got %v\nwant %v", name, got, w)
		}
	}
	// Every series of the three, empty ones included, is labelled with
	// configured names only.
	for _, s := range samples {
		if !strings.HasPrefix(s.name, "llmgw_gateway_added_seconds") && !strings.HasPrefix(s.name, "llmgw_time_to_first_content_seconds") &&
			!strings.HasPrefix(s.name, "llmgw_request_tokens") {
			continue
		}
		if a := s.labels["alias"]; a != "chat-alpha" && a != "chat-beta" {
			t.Errorf("%s has alias %q", s.name, a)
		}
		if p := s.labels["provider"]; p != "alpha" && p != "beta" {
			t.Errorf("%s has provider %q", s.name, p)
		}
	}

	sums := series(samples, "llmgw_request_tokens_sum")
	for p, n := range tokens {
		for i, kind := range []string{"input", "output"} {
			k := "alias=" + p.alias + ",endpoint=chat,kind=" + kind + ",provider=" + p.provider
			if sums[k] != float64(n[i]) || n[i] == 0 {
				t.Errorf("%s tokens sum %v, records say %d", k, sums[k], n[i])
			}
		}
	}

	// Provider time is outside added latency (the slow 503 attempt, the slow
	// stream's wait for its headers), inside time to first content.
	addedSums := series(samples, "llmgw_gateway_added_seconds_sum")
	slow := float64(slowMs) / 1000
	for _, k := range []string{"alias=chat-alpha,endpoint=chat,provider=beta,stream=false", "alias=chat-beta,endpoint=chat,provider=beta,stream=true"} {
		if v := addedSums[k]; v <= 0 || v > slow/2 {
			t.Errorf("added latency of %s: %vs (the provider took %vs)", k, v, slow)
		}
	}
	if v := series(samples, "llmgw_time_to_first_content_seconds_sum")["alias=chat-beta,endpoint=chat,provider=beta"]; v < slow {
		t.Errorf("time to first content of the slow stream: %vs, under the provider's %vs", v, slow)
	}
}

func mapsEqual(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
