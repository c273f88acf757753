package server

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the gateway's Prometheus series. Labels are bounded by config
// (aliases, providers) or by fixed vocabularies (status, error type), never
// by caller input.
type Metrics struct {
	requests      *prometheus.CounterVec
	attempts      *prometheus.CounterVec
	reloads       *prometheus.CounterVec
	snapshotInfo  *prometheus.GaugeVec
	reloadFailing prometheus.Gauge
	inflight      prometheus.Gauge

	breakerState       *prometheus.GaugeVec
	breakerTransitions *prometheus.CounterVec
	breakerSkips       *prometheus.CounterVec

	credentialUnavailable *prometheus.GaugeVec

	// Per alias and provider (exchange_metrics.go): children are resolved
	// once per pair and cached in routes.
	added  *prometheus.HistogramVec
	ttfc   *prometheus.HistogramVec
	tokens *prometheus.HistogramVec
	routes routeSeriesCache
}

// Histogram buckets. Added latency must resolve tens of microseconds (the
// gateway's own cost on a fast path) up to the ledger stalls of a slow disk;
// time to first content spans a cached answer to a slow model's minute;
// token counts grow by doubling up to a million-token context.
var (
	addedBuckets = []float64{25e-6, 50e-6, 100e-6, 200e-6, 350e-6, 500e-6, 750e-6,
		1e-3, 2e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1}
	ttfcBuckets = []float64{1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3,
		1, 2.5, 5, 10, 20, 30, 60}
	tokenBuckets = prometheus.ExponentialBuckets(16, 2, 17) // 16 … 1,048,576
)

// NewMetrics registers the series on reg (nil: an unregistered set, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmgw_requests_total",
			Help: "Requests that route to providers, by endpoint (chat, embeddings, messages), alias, final status and HTTP status."}, []string{"endpoint", "alias", "status", "code"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmgw_provider_attempts_total",
			Help: "Upstream attempts by provider and outcome."}, []string{"provider", "outcome"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmgw_snapshot_reloads_total",
			Help: "Snapshot loads by result (applied or rejected)."}, []string{"result"}),
		snapshotInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "llmgw_snapshot_info",
			Help: "1 for the running snapshot version."}, []string{"version"}),
		reloadFailing: prometheus.NewGauge(prometheus.GaugeOpts{Name: "llmgw_snapshot_last_reload_failed",
			Help: "1 while the newest snapshot seen was rejected and an older one is still served."}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "llmgw_inflight_requests",
			Help: "Chat requests in flight."}),
		breakerState: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "llmgw_provider_breaker_state",
			Help: "Circuit breaker state per provider: 0 closed, 1 half-open, 2 open."}, []string{"provider"}),
		breakerTransitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmgw_provider_breaker_transitions_total",
			Help: "Circuit breaker state changes by provider, from and to."}, []string{"provider", "from", "to"}),
		breakerSkips: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmgw_provider_breaker_skipped_total",
			Help: "Routes passed over because the provider's circuit breaker was open (or half-open with its probes out)."}, []string{"provider"}),
		credentialUnavailable: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "llmgw_provider_credential_unavailable",
			Help: "1 for each provider of the running snapshot whose credential the gateway cannot read (its routes are passed over)."}, []string{"provider"}),
		added: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "llmgw_gateway_added_seconds",
			Help:    "Time the gateway added before the client had the answer's content: from the request's arrival to the JSON response written (stream=\"false\") or the first content event flushed (stream=\"true\"), minus the time spent in provider attempts and reading the request body until then.",
			Buckets: addedBuckets}, []string{"endpoint", "alias", "provider", "stream"}),
		ttfc: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "llmgw_time_to_first_content_seconds",
			Help:    "Streams: time from the request's arrival to the first content event flushed to the client, provider time included.",
			Buckets: ttfcBuckets}, []string{"endpoint", "alias", "provider"}),
		tokens: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "llmgw_request_tokens",
			Help:    "Tokens per request a provider answered, by kind (input, output), as recorded in the request's usage record.",
			Buckets: tokenBuckets}, []string{"endpoint", "alias", "provider", "kind"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.attempts, m.reloads, m.snapshotInfo, m.reloadFailing, m.inflight,
			m.breakerState, m.breakerTransitions, m.breakerSkips, m.credentialUnavailable,
			m.added, m.ttfc, m.tokens)
	}
	return m
}

func (m *Metrics) reload(ok bool, version string) {
	if !ok {
		m.reloads.WithLabelValues("rejected").Inc()
		m.reloadFailing.Set(1)
		return
	}
	m.reloads.WithLabelValues("applied").Inc()
	m.reloadFailing.Set(0)
	m.snapshotInfo.Reset()
	m.snapshotInfo.WithLabelValues(version).Set(1)
}

func (m *Metrics) request(endpoint, alias, status string, code int) {
	m.requests.WithLabelValues(endpoint, alias, status, strconv.Itoa(code)).Inc()
}

func (m *Metrics) attempt(provider, outcome string) {
	m.attempts.WithLabelValues(provider, outcome).Inc()
}
