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
	applySeconds  prometheus.Histogram
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
	routes seriesCache[routeKey, routeSeries]

	// The OpenTelemetry GenAI semantic conventions' series and the cost
	// (genai_metrics.go), cached the same way.
	genaiTokens   *prometheus.HistogramVec
	genaiDuration *prometheus.HistogramVec
	genaiTTFT     *prometheus.HistogramVec
	genaiTPOT     *prometheus.HistogramVec
	cost          *prometheus.CounterVec
	genai         seriesCache[genaiKey, genaiSeries]
	failed        seriesCache[failedKey, failedSeries]
	costs         seriesCache[costKey, costSeries]
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
			Help: "Requests that route to providers, by endpoint (chat, embeddings, messages, responses), alias, final status and HTTP status."}, []string{"endpoint", "alias", "status", "code"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmgw_provider_attempts_total",
			Help: "Upstream attempts by provider and outcome."}, []string{"provider", "outcome"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmgw_snapshot_reloads_total",
			Help: "Snapshot loads by result (applied or rejected)."}, []string{"result"}),
		snapshotInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "llmgw_snapshot_info",
			Help: "1 for the running snapshot version."}, []string{"version"}),
		reloadFailing: prometheus.NewGauge(prometheus.GaugeOpts{Name: "llmgw_snapshot_last_reload_failed",
			Help: "1 while the newest snapshot seen was rejected and an older one is still served."}),
		applySeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "llmgw_snapshot_apply_seconds",
			Help:    "The gateway's half of a hot load: building a new snapshot's routing state and swapping it in (the controller's half is llmgw_controller_publish_seconds).",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "llmgw_inflight_requests",
			Help: "Model requests in flight, every endpoint that routes to providers (chat, embeddings, messages, responses), from arrival to the handler's end."}),
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
		genaiTokens: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gen_ai_client_token_usage",
			Help:    "OpenTelemetry GenAI gen_ai.client.token.usage: tokens per request a provider answered, by type (input; output, except embeddings), as recorded in the request's usage record.",
			Buckets: genaiTokenBuckets}, genaiTokenLabels),
		genaiDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gen_ai_server_request_duration_seconds",
			Help:    "OpenTelemetry GenAI gen_ai.server.request.duration: every request that reached routing, from its arrival to its usage record's end (a stream's whole answer); error_type is empty on success. gen_ai_provider_name and gen_ai_response_model are empty when no provider's answer reached the client.",
			Buckets: genaiDurationBuckets}, genaiDurationLabels),
		genaiTTFT: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gen_ai_server_time_to_first_token_seconds",
			Help:    "OpenTelemetry GenAI gen_ai.server.time_to_first_token: streams, from the request's arrival to the first content event flushed to the client (as llmgw_time_to_first_content_seconds).",
			Buckets: genaiTTFTBuckets}, genaiStreamLabels),
		genaiTPOT: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gen_ai_server_time_per_output_token_seconds",
			Help:    "OpenTelemetry GenAI gen_ai.server.time_per_output_token: successful streams of at least 2 output tokens, (request duration - time to first token) / (output tokens - 1).",
			Buckets: genaiTPOTBuckets}, genaiStreamLabels),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmgw_cost_total",
			Help: "Cost of priced requests, in units of currency, as their usage records price them."}, costLabels),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.attempts, m.reloads, m.snapshotInfo, m.reloadFailing, m.applySeconds, m.inflight,
			m.breakerState, m.breakerTransitions, m.breakerSkips, m.credentialUnavailable,
			m.added, m.ttfc, m.tokens,
			m.genaiTokens, m.genaiDuration, m.genaiTTFT, m.genaiTPOT, m.cost)
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
