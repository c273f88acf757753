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
	// firstContent is the time from the request's arrival to a stream's
	// first content flushed to the client (0: none was).
	firstContent time.Duration
	series       *routeSeries // set once a provider's answer reached the client
	genai        *genaiSeries // set with series: the answering route's (genai_metrics.go)
}

// routeKey is an endpoint, alias and provider.
type routeKey struct{ endpoint, alias, provider string }

// clone is k with private copies of the names: a cached key must not pin
// the snapshot its names came from. The endpoint is one of the ingresses'
// constant names.
func (k routeKey) clone() routeKey {
	return routeKey{k.endpoint, strings.Clone(k.alias), strings.Clone(k.provider)}
}

// routeSeries are one pair's histogram children, resolved once per pair so
// that an observation is a cached map read and atomic adds, with no label
// hashing or allocation per request.
type routeSeries struct {
	addedJSON, addedSSE, ttfc, inputTokens, outputTokens prometheus.Observer
}

// seriesCache maps label combinations (K) to their resolved children (V).
// Readers take no lock: the map is replaced, never modified, and each
// combination is added once. A combination of an alias or provider that
// left the configuration keeps its series until the process restarts, like
// llmgw_requests_total's.
type seriesCache[K cacheKey[K], V any] struct {
	mu sync.Mutex
	m  atomic.Pointer[map[K]*V]
}

// cacheKey is a label combination: comparable, and able to copy its names
// out of the snapshot they came from.
type cacheKey[K any] interface {
	comparable
	clone() K
}

// get returns k's children, resolved by build (from m's vectors) the first
// time k is seen. build is a plain function, not a closure, so that a
// lookup allocates nothing.
func (c *seriesCache[K, V]) get(k K, m *Metrics, build func(*Metrics, K) *V) *V {
	if cur := c.m.Load(); cur != nil {
		if v, ok := (*cur)[k]; ok {
			return v
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var old map[K]*V
	if cur := c.m.Load(); cur != nil {
		old = *cur
		if v, ok := old[k]; ok {
			return v
		}
	}
	k = k.clone()
	v := build(m, k)
	next := make(map[K]*V, 1+len(old))
	maps.Copy(next, old)
	next[k] = v
	c.m.Store(&next)
	return v
}

// routeSeries returns the children of an endpoint (one of the ingresses'
// names), alias and provider (configured names: the caller's requested
// model never comes here).
func (m *Metrics) routeSeries(endpoint, alias, provider string) *routeSeries {
	return m.routes.get(routeKey{endpoint, alias, provider}, m, buildRouteSeries)
}

func buildRouteSeries(m *Metrics, k routeKey) *routeSeries {
	return &routeSeries{
		addedJSON:    m.added.WithLabelValues(k.endpoint, k.alias, k.provider, "false"),
		addedSSE:     m.added.WithLabelValues(k.endpoint, k.alias, k.provider, "true"),
		ttfc:         m.ttfc.WithLabelValues(k.endpoint, k.alias, k.provider),
		inputTokens:  m.tokens.WithLabelValues(k.endpoint, k.alias, k.provider, "input"),
		outputTokens: m.tokens.WithLabelValues(k.endpoint, k.alias, k.provider, "output"),
	}
}

// elapsed is the time since the request arrived. It reads the monotonic
// clock only, half the cost of a time.Now.
func (x *exchange) elapsed() time.Duration { return time.Since(x.start) }

// observeCommit runs at a stream's commit point: from here the stream's
// tokens are observed under its route's series (observeEnd), whether or
// not anything reaches the client.
func (x *exchange) observeCommit(rl *sseRelay) {
	x.answered(rl.sa.route.Provider, rl.sa.route.Model, true)
}

// answered resolves the series of the route whose answer reaches the
// client: provider and model, configured names, as its record names them.
func (x *exchange) answered(provider, model string, stream bool) {
	m := x.s.metrics
	x.times.series = m.routeSeries(x.ing.endpoint, x.alias.Name, provider)
	x.times.genai = m.genaiSeries(genaiKey{endpoint: x.ing.endpoint, alias: x.alias.Name, provider: provider,
		protocol: x.protocolOf(provider), model: model, stream: stream})
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
		t.firstContent = since
		s := since.Seconds()
		t.series.ttfc.Observe(s)
		t.genai.ttft.Observe(s)
	}
}

// observeEnd runs once the handler is done with the exchange, its record
// final: a JSON answer's added latency, the tokens of every request a
// provider answered (a committed stream's whatever its end, as its record
// counts them), and the GenAI series of every request that reached routing
// (observeModelRequest).
func (x *exchange) observeEnd() {
	t := &x.times
	if t.series == nil && x.rec.Status == statusSuccess && !x.rec.Stream && x.alias != nil {
		x.answered(x.rec.Provider, x.rec.ProviderModel, false)
		t.series.addedJSON.Observe((x.elapsed() - t.clientBody - t.upstream).Seconds())
	}
	if t.series != nil {
		t.series.inputTokens.Observe(float64(x.rec.InputTokens))
		t.series.outputTokens.Observe(float64(x.rec.OutputTokens))
		t.genai.observeTokens(&x.rec)
	}
	// A record names a provider once a route was tried: the request
	// passed admission and reached routing. (Refused, it has none.)
	if x.alias != nil && x.rec.Provider != "" {
		x.observeModelRequest()
	}
}
