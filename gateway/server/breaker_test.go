package server

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/llmgw/llmgw/api/snapshot"
)

// bstep is one step of a breaker scenario, on a fake clock. Exactly one of
// its actions runs: wait moves the clock; call asks for a pass and, when
// granted, reports v at once; hold asks for a pass and keeps it; settle
// reports the held pass number settle (1-based). Then the breaker must be in
// state and the step must have caused transition tr ("from>to", "" none).
type bstep struct {
	wait   time.Duration
	call   bool
	hold   bool
	settle int
	v      verdict
	// granted is what call and hold expect of allow.
	granted bool
	state   breakerState
	tr      string
}

func wait(d time.Duration, state breakerState) bstep { return bstep{wait: d, state: state} }
func call(v verdict, state breakerState, tr string) bstep {
	return bstep{call: true, v: v, granted: true, state: state, tr: tr}
}
func refused(state breakerState, tr string) bstep { return bstep{call: true, state: state, tr: tr} }
func hold(state breakerState, tr string) bstep {
	return bstep{hold: true, granted: true, state: state, tr: tr}
}
func settle(n int, v verdict, state breakerState, tr string) bstep {
	return bstep{settle: n, v: v, state: state, tr: tr}
}

const (
	ok, fail, none           = verdictSuccess, verdictFailure, verdictNone
	closed, halfOpen, opened = breakerClosed, breakerHalfOpen, breakerOpen
)

func TestBreakerStateMachine(t *testing.T) {
	three := breakerSettings{failures: 3, coolDown: 10 * time.Second, probes: 1}
	twoProbes := breakerSettings{failures: 1, coolDown: time.Second, probes: 2}
	// tripped opens a three-failure breaker.
	tripped := []bstep{call(fail, closed, ""), call(fail, closed, ""), call(fail, opened, "closed>open")}
	cases := []struct {
		name  string
		cfg   breakerSettings
		steps []bstep
	}{
		{"N blamed failures in a row open it", three, tripped},
		{"open, it refuses every call", three, append(tripped, refused(opened, ""), refused(opened, ""))},
		{"a success resets the count", three, []bstep{
			call(fail, closed, ""), call(fail, closed, ""), call(ok, closed, ""),
			call(fail, closed, ""), call(fail, closed, ""), call(fail, opened, "closed>open")}},
		{"a verdict-less call (the caller's 400) neither counts nor resets", three, []bstep{
			call(none, closed, ""), call(none, closed, ""), call(none, closed, ""), call(none, closed, ""),
			call(fail, closed, ""), call(none, closed, ""), call(fail, closed, ""), call(fail, opened, "closed>open")}},
		{"refused until the cool-down has passed, then one probe", three, append(tripped,
			wait(10*time.Second-time.Millisecond, opened), refused(opened, ""),
			wait(time.Millisecond, opened), call(ok, closed, "open>half_open,half_open>closed"))},
		{"half-open, only the probe goes through; its success closes it", three, append(tripped,
			wait(10*time.Second, opened), hold(halfOpen, "open>half_open"),
			refused(halfOpen, ""), refused(halfOpen, ""),
			settle(1, ok, closed, "half_open>closed"),
			call(ok, closed, ""), call(ok, closed, ""))},
		{"a failed probe opens it for another cool-down", three, append(tripped,
			wait(10*time.Second, opened), hold(halfOpen, "open>half_open"),
			settle(1, fail, opened, "half_open>open"),
			wait(10*time.Second-time.Millisecond, opened), refused(opened, ""),
			wait(time.Millisecond, opened), call(ok, closed, "open>half_open,half_open>closed"))},
		{"a probe without verdict frees its place for another", three, append(tripped,
			wait(10*time.Second, opened), hold(halfOpen, "open>half_open"), refused(halfOpen, ""),
			settle(1, none, halfOpen, ""),
			hold(halfOpen, ""), refused(halfOpen, ""), settle(2, ok, closed, "half_open>closed"))},
		{"halfOpenProbes 2: both go through, both must succeed", twoProbes, []bstep{
			call(fail, opened, "closed>open"), wait(time.Second, opened),
			hold(halfOpen, "open>half_open"), hold(halfOpen, ""), refused(halfOpen, ""),
			settle(1, ok, halfOpen, ""), refused(halfOpen, ""), settle(2, ok, closed, "half_open>closed")}},
		{"halfOpenProbes 2: one failing probe opens it", twoProbes, []bstep{
			call(fail, opened, "closed>open"), wait(time.Second, opened),
			hold(halfOpen, "open>half_open"), hold(halfOpen, ""),
			settle(1, ok, halfOpen, ""), settle(2, fail, opened, "half_open>open")}},
		{"a late verdict of an earlier state counts for nothing", three, []bstep{
			hold(closed, ""), hold(closed, ""),
			call(fail, closed, ""), call(fail, closed, ""), call(fail, opened, "closed>open"),
			settle(1, ok, opened, ""), settle(2, fail, opened, ""),
			wait(10*time.Second, opened), hold(halfOpen, "open>half_open"), settle(3, ok, closed, "half_open>closed")}},
		{"consecutiveFailures 0: it never opens", breakerSettings{failures: 0, coolDown: time.Second, probes: 1}, []bstep{
			call(fail, closed, ""), call(fail, closed, ""), call(fail, closed, ""), call(fail, closed, ""),
			call(fail, closed, ""), call(fail, closed, ""), call(fail, closed, ""), call(fail, closed, "")}},
		{"consecutiveFailures 1: the first failure opens it", breakerSettings{failures: 1, coolDown: time.Second, probes: 1}, []bstep{
			call(ok, closed, ""), call(fail, opened, "closed>open"), refused(opened, "")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			b := &breaker{cfg: tc.cfg}
			var held []pass
			for i, s := range tc.steps {
				var trs []string
				note := func(tr *transition) {
					if tr != nil {
						trs = append(trs, tr.from.String()+">"+tr.to.String())
					}
				}
				switch {
				case s.wait > 0:
					now = now.Add(s.wait)
				case s.call || s.hold:
					p, granted, tr := b.allow(now)
					note(tr)
					if granted != s.granted {
						t.Fatalf("step %d: allow granted=%v, want %v", i, granted, s.granted)
					}
					if s.hold {
						held = append(held, p)
					} else if granted {
						note(b.report(p, s.v, "timeout", now))
					}
				case s.settle > 0:
					note(b.report(held[s.settle-1], s.v, "status 503", now))
				}
				if got := strings.Join(trs, ","); got != s.tr {
					t.Fatalf("step %d: transition %q, want %q", i, got, s.tr)
				}
				b.mu.Lock() // not view: reading must not take the time-driven transition
				st := b.state
				b.mu.Unlock()
				if st != s.state {
					t.Fatalf("step %d: state %v, want %v", i, st, s.state)
				}
			}
		})
	}
}

// The reasons the transition log lines give.
func TestBreakerTransitionReasons(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := &breaker{cfg: breakerSettings{failures: 2, coolDown: 1500 * time.Millisecond, probes: 1}}
	fail := func(cause string) *transition {
		p, granted, _ := b.allow(now)
		if !granted {
			t.Fatal("refused")
		}
		return b.report(p, verdictFailure, cause, now)
	}
	fail("timeout")
	if tr := fail("status 503"); tr == nil || tr.reason != "2 consecutive failures, the last: status 503" {
		t.Fatalf("opening: %+v", tr)
	}
	v, _ := b.view(now)
	if v.failures != 2 || !v.openedAt.Equal(now) || !v.openUntil.Equal(now.Add(1500*time.Millisecond)) {
		t.Fatalf("view while open: %+v", v)
	}
	now = now.Add(1500 * time.Millisecond)
	p, _, tr := b.allow(now)
	if tr == nil || tr.reason != "cool-down of 1.5s passed" {
		t.Fatalf("half-opening: %+v", tr)
	}
	if v, _ := b.view(now); v.probes != 1 || !v.openUntil.IsZero() {
		t.Fatalf("view while probing: %+v", v)
	}
	if tr := b.report(p, verdictFailure, "connection", now); tr == nil || tr.reason != "probe failed: connection" {
		t.Fatalf("re-opening: %+v", tr)
	}
	now = now.Add(1500 * time.Millisecond)
	p, _, _ = b.allow(now)
	if tr := b.report(p, verdictSuccess, "", now); tr == nil || tr.reason != "1 of 1 probes succeeded" {
		t.Fatalf("closing: %+v", tr)
	}
	if v, _ := b.view(now); v.failures != 0 || v.state != breakerClosed {
		t.Fatalf("view after closing: %+v", v)
	}
}

// What an attempt's outcome tells the breaker: the failure table's blame
// column, a success, and a stream that relayed content.
func TestBreakerVerdict(t *testing.T) {
	tests := []struct {
		name string
		f    *failure
		want verdict
	}{
		{"answered", nil, verdictSuccess},
		{"timeout", &failure{kind: failTimeout}, verdictFailure},
		{"total deadline", &failure{kind: failDeadline}, verdictFailure},
		{"connection", &failure{kind: failConnection}, verdictFailure},
		{"stream failed before content", &failure{kind: failStream}, verdictFailure},
		{"unreadable answer", &failure{kind: failProtocol}, verdictFailure},
		{"429", &failure{kind: failRateLimited}, verdictFailure},
		{"5xx", &failure{kind: failUpstream}, verdictFailure},
		{"401/403: the gateway's credential", &failure{kind: failUpstreamAuth}, verdictFailure},
		{"400: the caller's request", &failure{kind: failRejected}, verdictNone},
		{"other 4xx", &failure{kind: failStatus}, verdictNone},
		{"client went away", &failure{kind: failCanceled}, verdictNone},
		{"stream cut after content", &failure{kind: failStream, sent: true}, verdictSuccess},
		{"stream stalled after content", &failure{kind: failTimeout, sent: true}, verdictSuccess},
	}
	for _, tc := range tests {
		if got := breakerVerdict(tc.f); got != tc.want {
			t.Errorf("%s: verdict %d, want %d", tc.name, got, tc.want)
		}
	}
	// Every blamed kind is a failure, every other one is not: the breaker
	// and the failure table cannot drift apart.
	for k := range numFailKinds {
		if got := breakerVerdict(&failure{kind: k}) == verdictFailure; got != failures[k].blame {
			t.Errorf("kind %d: breaker failure %v, table blame %v", k, got, failures[k].blame)
		}
	}
}

// fakeClock is a settable clock, safe for concurrent use.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testBreakers is a breaker set on a fake clock, logging JSON into logs.
func testBreakers(t *testing.T, providers ...snapshot.Provider) (*breakerSet, *fakeClock, *Metrics, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	m := NewMetrics(prometheus.NewRegistry())
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	bs := &breakerSet{}
	bs.init(slog.New(slog.NewJSONHandler(&logs, nil)), m, clk.Now)
	bs.sync(providers)
	return bs, clk, m, &logs
}

func breakerProvider(name, url string, failures, coolDownMs, probes int) snapshot.Provider {
	return snapshot.Provider{Name: name, Protocol: snapshot.ProtocolOpenAI, BaseURL: url,
		CircuitBreaker: snapshot.CircuitBreaker{ConsecutiveFailures: &failures, CoolDownMs: coolDownMs, HalfOpenProbes: probes}}
}

// metricValue is the value of c's series with exactly these labels, given
// as name, value pairs.
func metricValue(t *testing.T, c prometheus.Collector, pairs ...string) (float64, bool) {
	t.Helper()
	want := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		want[pairs[i]] = pairs[i+1]
	}
	ch := make(chan prometheus.Metric, 64)
	c.Collect(ch)
	close(ch)
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, l := range d.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if !maps.Equal(got, want) {
			continue
		}
		if d.Gauge != nil {
			return d.Gauge.GetValue(), true
		}
		return d.Counter.GetValue(), true
	}
	return 0, false
}

func openIt(t *testing.T, bs *breakerSet, name string, n int) {
	t.Helper()
	for range n {
		tk, skip := bs.admit(name, false)
		if skip || tk == nil {
			t.Fatalf("%s refused while closed", name)
		}
		tk.report(verdictFailure, "status 503")
	}
}

// The route loop's question, per breaker state and route position: a
// refusing breaker passes a route over unless it is the last one, which is
// called anyway (with no ticket: its outcome cannot move the breaker).
func TestBreakerAdmit(t *testing.T) {
	tests := []struct {
		name       string
		state      string // closed | open | probing (half-open, its probe out)
		last       bool
		wantTicket bool
		wantSkip   bool
	}{
		{"closed", "closed", false, true, false},
		{"closed, last route", "closed", true, true, false},
		{"open", "open", false, false, true},
		{"open, last route: called anyway", "open", true, false, false},
		{"half-open, probe out", "probing", false, false, true},
		{"half-open, probe out, last route", "probing", true, false, false},
		{"unknown provider", "unknown", false, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bs, clk, m, _ := testBreakers(t, breakerProvider("p", "http://p", 2, 1000, 1))
			name := "p"
			switch tc.state {
			case "open":
				openIt(t, bs, "p", 2)
			case "probing":
				openIt(t, bs, "p", 2)
				clk.Advance(time.Second)
				if tk, _ := bs.admit("p", false); tk == nil {
					t.Fatal("no probe after the cool-down")
				}
			case "unknown":
				name = "q"
			}
			skipsBefore, _ := metricValue(t, m.breakerSkips, "provider", "p")
			tk, skip := bs.admit(name, tc.last)
			if (tk != nil) != tc.wantTicket || skip != tc.wantSkip {
				t.Fatalf("ticket %v skip %v, want ticket %v skip %v", tk != nil, skip, tc.wantTicket, tc.wantSkip)
			}
			skips, _ := metricValue(t, m.breakerSkips, "provider", "p")
			if want := skipsBefore + map[bool]float64{true: 1}[tc.wantSkip]; skips != want {
				t.Fatalf("llmgw_provider_breaker_skipped_total = %v, want %v", skips, want)
			}
			tk.report(verdictSuccess, "") // a nil ticket must be harmless
		})
	}
}

// Every transition is one log line naming the provider, both states and the
// reason, and moves the state gauge and the transitions counter.
func TestBreakerLogsAndMetrics(t *testing.T) {
	bs, clk, m, logs := testBreakers(t, breakerProvider("p", "http://p", 2, 1000, 1), breakerProvider("q", "http://q", 5, 1000, 1))
	if v, found := metricValue(t, m.breakerState, "provider", "q"); !found || v != 0 {
		t.Fatalf("a new provider's gauge: %v %v", v, found)
	}
	openIt(t, bs, "p", 2)
	if v, _ := metricValue(t, m.breakerState, "provider", "p"); v != 2 {
		t.Fatalf("gauge while open: %v", v)
	}
	clk.Advance(time.Second)
	tk, _ := bs.admit("p", false)
	if v, _ := metricValue(t, m.breakerState, "provider", "p"); v != 1 {
		t.Fatalf("gauge while half-open: %v", v)
	}
	tk.report(verdictSuccess, "")
	tk.report(verdictFailure, "timeout") // a second verdict for one call is ignored
	if v, _ := metricValue(t, m.breakerState, "provider", "p"); v != 0 {
		t.Fatalf("gauge after closing: %v", v)
	}
	for _, tr := range [][2]string{{"closed", "open"}, {"open", "half_open"}, {"half_open", "closed"}} {
		if v, _ := metricValue(t, m.breakerTransitions, "provider", "p", "from", tr[0], "to", tr[1]); v != 1 {
			t.Fatalf("transitions %s>%s = %v, want 1", tr[0], tr[1], v)
		}
	}
	type line struct {
		Level, Msg, Provider, From, To, Reason string
	}
	var lines []line
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var ln line
		if err := json.Unmarshal([]byte(l), &ln); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		lines = append(lines, ln)
	}
	want := []line{
		{"WARN", "provider circuit breaker open", "p", "closed", "open", "2 consecutive failures, the last: status 503"},
		{"INFO", "provider circuit breaker half_open", "p", "open", "half_open", "cool-down of 1s passed"},
		{"INFO", "provider circuit breaker closed", "p", "half_open", "closed", "1 of 1 probes succeeded"},
	}
	if len(lines) != len(want) {
		t.Fatalf("log lines:\n%s", logs)
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d: %+v, want %+v", i, lines[i], want[i])
		}
	}
}

// A reload keeps a provider's breaker, open or not, unless it changes what
// the breaker judged (protocol, base URL) or how (its settings); then the
// provider starts closed, and the log says why. A provider that leaves the
// snapshot takes its gauge along.
func TestBreakerSurvivesReloads(t *testing.T) {
	base := breakerProvider("p", "http://p", 2, 1000, 1)
	tests := []struct {
		name      string
		change    func(p *snapshot.Provider)
		wantReset bool
	}{
		{"same provider", func(*snapshot.Provider) {}, false},
		{"other timeouts", func(p *snapshot.Provider) { p.ConnectTimeoutMs, p.ResponseHeaderTimeoutMs = 5, 6 }, false},
		{"other credential", func(p *snapshot.Provider) { p.Credential = &snapshot.Credential{File: "k"} }, false},
		{"other base URL", func(p *snapshot.Provider) { p.BaseURL = "http://p2" }, true},
		{"other protocol", func(p *snapshot.Provider) { p.Protocol = snapshot.ProtocolAnthropic }, true},
		{"other threshold", func(p *snapshot.Provider) { n := 3; p.CircuitBreaker.ConsecutiveFailures = &n }, true},
		{"other cool-down", func(p *snapshot.Provider) { p.CircuitBreaker.CoolDownMs = 2000 }, true},
		{"other probes", func(p *snapshot.Provider) { p.CircuitBreaker.HalfOpenProbes = 2 }, true},
		{"turned off", func(p *snapshot.Provider) { n := 0; p.CircuitBreaker.ConsecutiveFailures = &n }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bs, _, m, logs := testBreakers(t, base, breakerProvider("gone", "http://g", 1, 1000, 1))
			openIt(t, bs, "p", 2)
			next := base
			tc.change(&next)
			bs.sync([]snapshot.Provider{next})
			_, skip := bs.admit("p", false)
			if skip == tc.wantReset {
				t.Fatalf("after the reload the provider is skipped=%v; want reset=%v", skip, tc.wantReset)
			}
			gauge, _ := metricValue(t, m.breakerState, "provider", "p")
			if reset := strings.Contains(logs.String(), "reset: the provider's protocol, base URL or circuit breaker settings changed"); reset != tc.wantReset || (gauge == 0) != tc.wantReset {
				t.Fatalf("reset logged %v, gauge %v; want reset %v:\n%s", reset, gauge, tc.wantReset, logs)
			}
			if _, found := metricValue(t, m.breakerState, "provider", "gone"); found {
				t.Fatal("a removed provider keeps its state gauge")
			}
		})
	}
}

// A call admitted before a reload replaced its breaker reports into the old
// one: it must neither move the new breaker nor log or count for it.
func TestBreakerLateReportAfterReset(t *testing.T) {
	bs, _, m, logs := testBreakers(t, breakerProvider("p", "http://p", 1, 1000, 1))
	tk, _ := bs.admit("p", false)
	bs.sync([]snapshot.Provider{breakerProvider("p", "http://p2", 1, 1000, 1)})
	tk.report(verdictFailure, "timeout")
	if _, skip := bs.admit("p", false); skip {
		t.Fatal("an old call's failure opened the new breaker")
	}
	if v, _ := metricValue(t, m.breakerState, "provider", "p"); v != 0 || logs.Len() != 0 {
		t.Fatalf("gauge %v, logs %q", v, logs)
	}
}

// The management port's /health shows the breaker; the data port only up or
// down, and down is exactly "the breaker is not closed".
func TestProviderHealthOf(t *testing.T) {
	s := &Server{log: slog.New(slog.DiscardHandler), metrics: NewMetrics(nil)}
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s.breakers.init(s.log, s.metrics, clk.Now)
	p := breakerProvider("p", "http://p", 2, 30000, 1)
	s.breakers.sync([]snapshot.Provider{p})
	s.health.observe("p", false, clk.Now())

	data, _ := json.Marshal(s.providerHealthOf(&state{}, &p, false))
	if string(data) != `{"name":"p","protocol":"openai","status":"up"}` {
		t.Fatalf("data port, closed: %s", data)
	}
	openIt(t, &s.breakers, "p", 2)
	data, _ = json.Marshal(s.providerHealthOf(&state{}, &p, false))
	if string(data) != `{"name":"p","protocol":"openai","status":"down"}` {
		t.Fatalf("data port, open: %s", data)
	}
	mgmt, _ := json.Marshal(s.providerHealthOf(&state{}, &p, true))
	want := `{"name":"p","protocol":"openai","status":"down","successes":0,"failures":1,"last_failure_at":"2026-01-01T00:00:00Z",` +
		`"circuit_breaker":{"state":"open","consecutive_failures":2,"opened_at":"2026-01-01T00:00:00Z","open_until":"2026-01-01T00:00:30Z",` +
		`"failure_threshold":2,"cool_down_ms":30000,"half_open_probes":1}}`
	if string(mgmt) != want {
		t.Fatalf("management port, open:\n%s\nwant\n%s", mgmt, want)
	}
	clk.Advance(30 * time.Second) // half-open: still down until a probe succeeds
	if ph := s.providerHealthOf(&state{}, &p, false); ph.Status != "down" {
		t.Fatalf("half-open is %s", ph.Status)
	}
	tk, _ := s.breakers.admit("p", false)
	tk.report(verdictSuccess, "")
	if ph := s.providerHealthOf(&state{}, &p, false); ph.Status != "up" {
		t.Fatalf("closed again is %s", ph.Status)
	}
}

// A stream's ticket reports success at the commit point; the route loop's
// later verdict on the same call (a cut after content) is then ignored.
func TestStreamCommittedReportsOnce(t *testing.T) {
	bs, _, _, _ := testBreakers(t, breakerProvider("p", "http://p", 1, 1000, 1))
	tk, _ := bs.admit("p", false)
	ctx := withTicket(t.Context(), tk)
	streamCommitted(ctx)
	tk.report(verdictFailure, "stream_error")
	if _, skip := bs.admit("p", false); skip {
		t.Fatal("a stream cut after its commit point opened the breaker")
	}
	streamCommitted(t.Context()) // no ticket: nothing to do
}
