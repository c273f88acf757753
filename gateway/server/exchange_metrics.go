package server

import (
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The per-request histograms: gateway-added latency, time to first content
// and tokens, per alias and provider. Their labels are the configured alias
// (x.alias, never the requested model) and the configured provider of the
// route that answered, so cardinality is bounded by the configuration.
//
// Added latency is the in-process part of what the benchmark calls "added":
// from the handler's start to the moment the client has the answer's
// content (JSON: the response written; SSE: the first content event
// written), minus the time spent in provider attempts before that moment
// and minus the time spent reading the request body from the client. A
// provider attempt counts from the adapter call to its answer (JSON) or to
// its first content event (SSE), the adapter's own encoding and decoding
// included. What a stream costs after its first content is not in it: that
// pace is the provider's.

// exchangeTimes are the marks an exchange keeps for the histograms.
type exchangeTimes struct {
	attemptStart time.Time     // the running provider attempt's start (route)
	upstream     time.Duration // time in finished provider attempts
	clientBody   time.Duration // time reading the request body
	series       *routeSeries  // set once a provider's answer reached the client
}

// routeKey is an endpoint, alias and provider.
type routeKey struct{ endpoint, alias, provider string }

// routeSeries are one pair's histogram children, resolved once per pair so
// that an observation is a cached map read and atomic adds, with no label
// hashing or allocation per request.
type routeSeries struct {
	addedJSON, addedSSE, ttfc, inputTokens, outputTokens prometheus.Observer
}

// routeSeriesCache maps pairs to their children. Readers take no lock: the
// map is replaced, never modified, and each pair is added once. A pair of an
// alias or provider that left the configuration keeps its series until the
// process restarts, like llmgw_requests_total's.
type routeSeriesCache struct {
	mu sync.Mutex
	m  atomic.Pointer[map[routeKey]*routeSeries]
}

// routeSeries returns the children of an endpoint (one of the ingresses'
// names), alias and provider (configured names: the caller's requested
// model never comes here).
func (m *Metrics) routeSeries(endpoint, alias, provider string) *routeSeries {
	k := routeKey{endpoint, alias, provider}
	if cur := m.routes.m.Load(); cur != nil {
		if rs, ok := (*cur)[k]; ok {
			return rs
		}
	}
	m.routes.mu.Lock()
	defer m.routes.mu.Unlock()
	cur := m.routes.m.Load()
	if cur != nil {
		if rs, ok := (*cur)[k]; ok {
			return rs
		}
	}
	// Private copies: the names must not pin the snapshot they came from.
	k = routeKey{endpoint, strings.Clone(alias), strings.Clone(provider)}
	rs := &routeSeries{
		addedJSON:    m.added.WithLabelValues(k.endpoint, k.alias, k.provider, "false"),
		addedSSE:     m.added.WithLabelValues(k.endpoint, k.alias, k.provider, "true"),
		ttfc:         m.ttfc.WithLabelValues(k.endpoint, k.alias, k.provider),
		inputTokens:  m.tokens.WithLabelValues(k.endpoint, k.alias, k.provider, "input"),
		outputTokens: m.tokens.WithLabelValues(k.endpoint, k.alias, k.provider, "output"),
	}
	next := make(map[routeKey]*routeSeries, 1+len(deref(cur)))
	maps.Copy(next, deref(cur))
	next[k] = rs
	m.routes.m.Store(&next)
	return rs
}

func deref(m *map[routeKey]*routeSeries) map[routeKey]*routeSeries {
	if m == nil {
		return nil
	}
	return *m
}

// elapsed is the time since the request arrived. It reads the monotonic
// clock only, half the cost of a time.Now.
func (x *exchange) elapsed() time.Duration { return time.Since(x.start) }

// observeCommit runs at a stream's commit point: from here the stream's
// tokens are observed under its route's series (observeEnd), whether or
// not anything reaches the client.
func (x *exchange) observeCommit(rl *sseRelay) {
	x.times.series = x.s.metrics.routeSeries(x.ing.endpoint, x.alias.Name, rl.sa.route.Provider)
}

// observeFirstWrite runs once a committed stream's first write (the head,
// the role and the first content, with whatever arrived with them) has
// succeeded. When the upstream sent its whole answer at once, that write
// comes after the record is final (end), which is then part of the added
// latency.
func (x *exchange) observeFirstWrite(rl *sseRelay) {
	t := &x.times
	since := x.elapsed()
	t.series.addedSSE.Observe((since - t.clientBody - rl.providerTime).Seconds())
	if rl.sa.said {
		t.series.ttfc.Observe(since.Seconds())
	}
}

// observeEnd runs once the handler is done with the exchange: a JSON answer's
// added latency, and the tokens of every request a provider answered (a
// committed stream's whatever its end, as its record counts them).
func (x *exchange) observeEnd() {
	t := &x.times
	if t.series == nil {
		if x.rec.Status != statusSuccess || x.rec.Stream || x.alias == nil {
			return // refused, failed, or a stream that never committed
		}
		t.series = x.s.metrics.routeSeries(x.ing.endpoint, x.alias.Name, x.rec.Provider)
		t.series.addedJSON.Observe((x.elapsed() - t.clientBody - t.upstream).Seconds())
	}
	t.series.inputTokens.Observe(float64(x.rec.InputTokens))
	t.series.outputTokens.Observe(float64(x.rec.OutputTokens))
}
