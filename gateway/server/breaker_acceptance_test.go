package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
)

// Circuit breakers on the local stack: mock alpha fails on request (fault
// directives), /mock/calls proves which calls reached it, and a fake clock
// passes cool-downs without sleeping. The demo aliases: chat-alpha = alpha,
// then beta; chat-beta = beta, then alpha; chat-restricted = alpha only.

// breakersOff turns every provider's breaker off, for tests about something
// else that fail one provider many times in a row.
func breakersOff(s *snapshot.Snapshot) {
	for i := range s.Providers {
		zero := 0
		s.Providers[i].CircuitBreaker.ConsecutiveFailures = &zero
	}
}

// alphaBreaker gives alpha a breaker that opens after n failures, with a
// cool-down only the fake clock passes.
func alphaBreaker(n, probes int) func(*snapshot.Snapshot) {
	return func(s *snapshot.Snapshot) {
		for i := range s.Providers {
			if s.Providers[i].Name == "alpha" {
				s.Providers[i].CircuitBreaker = snapshot.CircuitBreaker{ConsecutiveFailures: &n, CoolDownMs: 60_000, HalfOpenProbes: probes}
			}
		}
	}
}

// longAttempts lets a probe be slow enough for other requests to meet it.
func longAttempts(s *snapshot.Snapshot) {
	for i := range s.Aliases {
		s.Aliases[i].Timeouts = snapshot.Timeouts{TotalMs: 20000, AttemptMs: 8000, FirstChunkMs: 8000, IdleMs: 8000}
	}
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// breakerHarness is the local stack with the breakers on a fake clock.
func breakerHarness(t *testing.T, mutate ...func(*snapshot.Snapshot)) (*harness, *clock) {
	h := newHarness(t, mutate...)
	clk := &clock{t: time.Now()}
	h.srv.SetBreakerClockForTest(clk.Now)
	return h, clk
}

func (h *harness) alphaCalls() int64 { h.t.Helper(); return mockCalls(h.t, h.alpha).Total }

// served asserts a 200 answered by provider.
func (h *harness) served(r response, provider string) {
	h.t.Helper()
	if r.status != http.StatusOK || r.header.Get("X-Llmgw-Provider") != provider {
		h.t.Fatalf("status %d from %q, want 200 from %s: %s", r.status, r.header.Get("X-Llmgw-Provider"), provider, r.body)
	}
}

type providerState struct {
	Name, Status string
	Breaker      *struct {
		State               string     `json:"state"`
		ConsecutiveFailures int        `json:"consecutive_failures"`
		OpenUntil           *time.Time `json:"open_until"`
	} `json:"circuit_breaker"`
}

// health reads /health from the data port (mgmt false) or the management
// port's handler.
func (h *harness) health(mgmt bool) (status string, providers map[string]providerState, raw string) {
	h.t.Helper()
	var body []byte
	if mgmt {
		rec := httptest.NewRecorder()
		h.srv.ManagementHealthHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
		body = rec.Body.Bytes()
	} else {
		body = h.do(http.MethodGet, "/health", "", "").body
	}
	var out struct {
		Status    string          `json:"status"`
		Providers []providerState `json:"providers"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		h.t.Fatalf("/health: %v: %s", err, body)
	}
	providers = map[string]providerState{}
	for _, p := range out.Providers {
		providers[p.Name] = p
	}
	return out.Status, providers, string(body)
}

// breakerState is alpha's breaker state on the management port, and checks
// that the data port agrees in its own words (up or down, nothing more).
func (h *harness) breakerState(name string) string {
	h.t.Helper()
	_, mgmt, _ := h.health(true)
	status, data, raw := h.health(false)
	b := mgmt[name].Breaker
	if b == nil {
		h.t.Fatalf("management /health shows no breaker for %s", name)
	}
	want := "down"
	if b.State == "closed" {
		want = "up"
	}
	if data[name].Status != want || mgmt[name].Status != want {
		h.t.Fatalf("breaker %s, but the data port says %q and the management port %q", b.State, data[name].Status, mgmt[name].Status)
	}
	if want == "down" && status != "degraded" {
		h.t.Fatalf("a provider is down, yet /health is %q", status)
	}
	if strings.Contains(raw, "circuit_breaker") || strings.Contains(raw, "successes") || strings.Contains(raw, "open_until") {
		h.t.Fatalf("the data port's /health shows more than up or down: %s", raw)
	}
	return b.State
}

// logged counts the gateway's transition log lines for provider to state.
func (h *harness) logged(provider, to string) []map[string]any {
	h.t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(h.logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		if msg, _ := m["msg"].(string); !strings.HasPrefix(msg, "provider circuit breaker") {
			continue
		}
		if m["provider"] == provider && m["to"] == to {
			out = append(out, m)
		}
	}
	return out
}

// tripAlpha fails alpha n times through chat-alpha; beta serves each one.
func (h *harness) tripAlpha(n int, stream bool, directive string) {
	h.t.Helper()
	before := h.alphaCalls()
	for range n {
		r := h.chat(h.keyA, chatBody("chat-alpha", stream, directive))
		h.served(r, "beta")
	}
	if got := h.alphaCalls() - before; got != int64(n) {
		h.t.Fatalf("alpha got %d calls while failing %d times", got, n)
	}
}

// N failures open it; then alpha is skipped, not called (/mock/calls), and
// beta answers with no attempt of alpha in the record; after the cool-down
// exactly one probe reaches alpha, other requests skip it meanwhile, and the
// probe's success closes the breaker.
func TestBreakerOpensSkipsProbesCloses(t *testing.T) {
	h, clk := breakerHarness(t, alphaBreaker(3, 1), longAttempts)
	h.tripAlpha(2, false, "alpha:status=503")
	if st := h.breakerState("alpha"); st != "closed" {
		t.Fatalf("open after 2 of 3 failures: %s", st)
	}
	h.tripAlpha(1, false, "alpha:status=503")
	if st := h.breakerState("alpha"); st != "open" {
		t.Fatalf("after 3 failures the breaker is %s", st)
	}
	if l := h.logged("alpha", "open"); len(l) != 1 || l[0]["reason"] != "3 consecutive failures, the last: status 503" || l[0]["from"] != "closed" {
		t.Fatalf("transition log lines: %v", l)
	}

	calls := h.alphaCalls()
	for _, stream := range []bool{false, true, false} {
		r := h.chat(h.keyA, chatBody("chat-alpha", stream, ""))
		h.served(r, "beta")
		rec := h.record(r.header.Get("X-Request-Id"))
		if len(rec.Attempts) != 1 || rec.Attempts[0].Provider != "beta" || rec.Fallbacks != 0 || rec.Status != "success" {
			t.Fatalf("record of a request that skipped alpha: %+v", rec)
		}
	}
	if got := h.alphaCalls(); got != calls {
		t.Fatalf("alpha was called %d times while its breaker was open", got-calls)
	}

	clk.Advance(60 * time.Second)
	probe := make(chan response, 1)
	go func() { probe <- h.chat(h.keyA, chatBody("chat-alpha", false, "alpha:delay_ms=1500")) }()
	waitFor(t, 5*time.Second, func() bool { return h.alphaCalls() == calls+1 })
	for range 3 { // while the probe is out, alpha stays skipped
		h.served(h.chat(h.keyA, chatBody("chat-alpha", false, "")), "beta")
	}
	if st := h.breakerState("alpha"); st != "half_open" {
		t.Fatalf("with the probe out the breaker is %s", st)
	}
	select {
	case <-probe:
		t.Fatal("the probe finished before the requests meant to meet it; the test proved nothing")
	default:
	}
	h.served(<-probe, "alpha")
	if got := h.alphaCalls(); got != calls+1 {
		t.Fatalf("%d calls reached alpha during the half-open period, want exactly 1 probe", got-calls)
	}
	if st := h.breakerState("alpha"); st != "closed" {
		t.Fatalf("after a successful probe the breaker is %s", st)
	}
	if l := h.logged("alpha", "closed"); len(l) != 1 || l[0]["reason"] != "1 of 1 probes succeeded" {
		t.Fatalf("closing log lines: %v", l)
	}
	h.served(h.chat(h.keyA, chatBody("chat-alpha", false, "")), "alpha")
}

// A failing probe opens the breaker again for a whole cool-down; the next
// probe's success closes it.
func TestBreakerFailedProbeReopens(t *testing.T) {
	h, clk := breakerHarness(t, alphaBreaker(2, 1))
	h.tripAlpha(2, false, "alpha:status=500")
	clk.Advance(60 * time.Second)
	h.tripAlpha(1, false, "alpha:status=503") // the probe, failing; beta serves it
	if st := h.breakerState("alpha"); st != "open" {
		t.Fatalf("after a failed probe the breaker is %s", st)
	}
	if l := h.logged("alpha", "open"); len(l) != 2 || l[1]["from"] != "half_open" || l[1]["reason"] != "probe failed: status 503" {
		t.Fatalf("re-opening log lines: %v", l)
	}
	calls := h.alphaCalls()
	clk.Advance(59 * time.Second)
	h.served(h.chat(h.keyA, chatBody("chat-alpha", false, "")), "beta")
	if h.alphaCalls() != calls {
		t.Fatal("alpha was called before the new cool-down ended")
	}
	clk.Advance(time.Second)
	h.served(h.chat(h.keyA, chatBody("chat-alpha", false, "")), "alpha")
	if st := h.breakerState("alpha"); st != "closed" {
		t.Fatalf("after a successful probe the breaker is %s", st)
	}
}

// The last route an alias may try is never skipped: chat-restricted has
// only alpha, and chat-beta's last route is alpha; both still reach alpha
// while its breaker is open, and those calls do not close it.
func TestBreakerNeverSkipsTheLastRoute(t *testing.T) {
	h, _ := breakerHarness(t, alphaBreaker(2, 1))
	h.tripAlpha(2, false, "alpha:status=503")
	calls := h.alphaCalls()
	h.served(h.chat(h.keyA, chatBody("chat-restricted", false, "")), "alpha")
	h.served(h.chat(h.keyA, chatBody("chat-restricted", true, "")), "alpha")
	r := h.chat(h.keyA, chatBody("chat-beta", false, "beta:status=503"))
	h.served(r, "alpha")
	if rec := h.record(r.header.Get("X-Request-Id")); len(rec.Attempts) != 2 || rec.Attempts[0].Provider != "beta" || rec.Fallbacks != 1 {
		t.Fatalf("record: %+v", rec)
	}
	if got := h.alphaCalls() - calls; got != 3 {
		t.Fatalf("alpha, the last route, got %d calls, want 3", got)
	}
	if r := h.chat(h.keyA, chatBody("chat-restricted", false, "alpha:status=503")); r.status != http.StatusBadGateway {
		t.Fatalf("the last route failing: %d %s", r.status, r.body)
	}
	if st := h.breakerState("alpha"); st != "open" {
		t.Fatalf("calls made past an open breaker moved it to %s", st)
	}
	// A skipped primary does not use up the alias's route: chat-alpha's
	// fallback, beta, is its last route and is tried.
	r = h.chat(h.keyA, chatBody("chat-alpha", false, "beta:status=503"))
	if r.status != http.StatusBadGateway || r.header.Get("X-Llmgw-Provider") != "beta" {
		t.Fatalf("alpha skipped, beta failing: %d from %q", r.status, r.header.Get("X-Llmgw-Provider"))
	}
}

// A provider's 400 is about the request, not the provider: any number of
// them leaves the breaker closed. consecutiveFailures 0 never opens it.
func TestBreakerIgnoresRejectedRequests(t *testing.T) {
	h, _ := breakerHarness(t, alphaBreaker(2, 1), func(s *snapshot.Snapshot) {
		zero := 0
		for i := range s.Providers {
			if s.Providers[i].Name == "beta" {
				s.Providers[i].CircuitBreaker.ConsecutiveFailures = &zero
			}
		}
	})
	for range 6 {
		r := h.chat(h.keyA, chatBody("chat-alpha", false, "alpha:status=400"))
		if r.status != http.StatusBadRequest || r.errorBody(t).Error.Code != "upstream_rejected_request" {
			t.Fatalf("provider 400: %d %s", r.status, r.body)
		}
	}
	if st := h.breakerState("alpha"); st != "closed" {
		t.Fatalf("after six 400s the breaker is %s", st)
	}
	calls := h.alphaCalls()
	h.served(h.chat(h.keyA, chatBody("chat-alpha", false, "")), "alpha")
	if h.alphaCalls() != calls+1 {
		t.Fatal("alpha was skipped after answering 400s")
	}
	// beta's breaker is off: six failures in a row and it is still tried.
	for range 6 {
		h.served(h.chat(h.keyA, chatBody("chat-beta", false, "beta:status=503")), "alpha")
	}
	betaCalls := mockCalls(t, h.beta).Total
	h.served(h.chat(h.keyA, chatBody("chat-beta", false, "")), "beta")
	if mockCalls(t, h.beta).Total != betaCalls+1 || h.breakerState("beta") != "closed" {
		t.Fatal("a provider whose breaker is off was skipped")
	}
}

// A stream counts as a success once it relays content: streams that fail
// before their first content open the breaker; streams cut after it do not;
// and a probe that is a stream closes the breaker at its first content, not
// when it ends.
func TestBreakerJudgesStreamsAtFirstContent(t *testing.T) {
	h, clk := breakerHarness(t, alphaBreaker(2, 1), longAttempts)
	for range 4 {
		r := h.chat(h.keyA, chatBody("chat-alpha", true, "alpha:chunks=3 alpha:error_after=1"))
		h.served(r, "alpha") // committed to alpha, then cut: an in-stream error
	}
	if st := h.breakerState("alpha"); st != "closed" {
		t.Fatalf("streams cut after their content opened the breaker: %s", st)
	}
	h.tripAlpha(2, true, "alpha:error_after=0")
	if st := h.breakerState("alpha"); st != "open" {
		t.Fatalf("streams failing before content left the breaker %s", st)
	}

	clk.Advance(60 * time.Second)
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, h.gw.URL+"/v1/chat/completions",
		strings.NewReader(chatBody("chat-alpha", true, "alpha:chunks=3 alpha:chunk_delay_ms=1500")))
	req.Header.Set("Authorization", "Bearer "+h.keyA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("X-Llmgw-Provider") != "alpha" {
		t.Fatalf("the probe went to %q", resp.Header.Get("X-Llmgw-Provider"))
	}
	br := bufio.NewReader(resp.Body)
	for { // up to the first content: the commit point
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, `"content":"alpha/`) {
			break
		}
	}
	if st := h.breakerState("alpha"); st != "closed" {
		t.Fatalf("a probe stream that relays content left the breaker %s", st)
	}
	h.served(h.chat(h.keyA, chatBody("chat-alpha", false, "")), "alpha") // while the probe still streams
	rest, err := bufio.NewReader(br).ReadString(0)
	if !strings.HasSuffix(rest, "data: [DONE]\n\n") {
		t.Fatalf("the probe stream did not end cleanly (%v): %q", err, rest)
	}
}

// Reloads keep the breakers: an open one stays open across a new snapshot
// version. One that changes alpha's breaker settings starts it closed.
func TestBreakerSurvivesHotReload(t *testing.T) {
	h, _ := breakerHarness(t, alphaBreaker(2, 1))
	h.tripAlpha(2, false, "alpha:status=503")
	next := h.snap.Clone()
	next.Aliases = append(next.Aliases, snapshot.Alias{Name: "chat-new", Primary: snapshot.Route{Provider: "beta", Model: "beta-small"}})
	v := h.srv.Version()
	if err := h.srv.Apply(context.Background(), next); err != nil || h.srv.Version() == v {
		t.Fatalf("reload: %v (version changed: %v)", err, h.srv.Version() != v)
	}
	calls := h.alphaCalls()
	h.served(h.chat(h.keyA, chatBody("chat-alpha", false, "")), "beta")
	if h.alphaCalls() != calls || h.breakerState("alpha") != "open" {
		t.Fatal("a reload closed alpha's breaker")
	}

	changed := next.Clone()
	for i := range changed.Providers {
		if changed.Providers[i].Name == "alpha" {
			changed.Providers[i].CircuitBreaker.CoolDownMs = 1234
		}
	}
	if err := h.srv.Apply(context.Background(), changed); err != nil {
		t.Fatal(err)
	}
	if st := h.breakerState("alpha"); st != "closed" {
		t.Fatalf("new breaker settings kept the old state: %s", st)
	}
	h.served(h.chat(h.keyA, chatBody("chat-alpha", false, "")), "alpha")
	if l := h.logged("alpha", "closed"); len(l) != 1 || !strings.HasPrefix(l[0]["reason"].(string), "reset:") {
		t.Fatalf("reset log lines: %v", l)
	}
}

// A hung primary (alpha answers after 5 s, the attempt timeout is 1 s) costs
// callers its timeout only until the breaker opens; from then on beta
// answers at once and alpha gets no call.
func TestBreakerCapsTheCostOfAHungPrimary(t *testing.T) {
	h, _ := breakerHarness(t, alphaBreaker(2, 1))
	const attempt = time.Second // newHarness's attemptMs
	timed := func() (response, time.Duration) {
		t0 := time.Now()
		r := h.chat(h.keyA, chatBody("chat-alpha", false, "alpha:delay_ms=5000"))
		return r, time.Since(t0)
	}
	for i := range 2 {
		r, took := timed()
		h.served(r, "beta")
		if took < attempt {
			t.Fatalf("request %d took %v: alpha was not waited for", i, took)
		}
	}
	calls := h.alphaCalls()
	for i := range 5 {
		r, took := timed()
		h.served(r, "beta")
		if took >= attempt/2 {
			t.Fatalf("request %d after the breaker opened took %v", i, took)
		}
	}
	if h.alphaCalls() != calls {
		t.Fatal("the hung primary was called after its breaker opened")
	}
}
