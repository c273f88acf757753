package server

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/gateway/usage"
)

// The OpenTelemetry GenAI semantic conventions' metrics
// (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-metrics/),
// written through the gateway's Prometheus registry under the names the
// OpenTelemetry Prometheus exporter gives them (dots become underscores,
// seconds get their unit suffix), beside the llmgw_* series, with the
// buckets the conventions advise. The gateway is the GenAI server its
// callers see:
//
//   - gen_ai.operation.name: "chat" for the chat, messages and responses
//     endpoints, "embeddings" for embeddings;
//   - gen_ai.provider.name: the protocol of the provider whose answer
//     reached the client ("openai", "anthropic");
//   - gen_ai.request.model: the configured alias; gen_ai.response.model:
//     the model of the route that answered;
//   - llmgw_provider and llmgw_endpoint: the configured provider and the
//     ingress, as the llmgw_* series name them;
//   - error.type: the record's error type (the gateway's fixed vocabulary).
//
// Every label is a configured name or a fixed vocabulary: never a key id,
// a request id, a session or the model string a caller sent.

// Label names, in each vector's order.
var (
	genaiTokenLabels = []string{"gen_ai_operation_name", "gen_ai_token_type", "gen_ai_provider_name",
		"gen_ai_request_model", "gen_ai_response_model", "llmgw_provider", "llmgw_endpoint"}
	genaiDurationLabels = []string{"gen_ai_operation_name", "gen_ai_request_model", "gen_ai_provider_name",
		"gen_ai_response_model", "llmgw_provider", "llmgw_endpoint", "error_type"}
	genaiStreamLabels = []string{"gen_ai_operation_name", "gen_ai_request_model", "gen_ai_provider_name",
		"gen_ai_response_model", "llmgw_provider", "llmgw_endpoint"}
	costLabels = []string{"llmgw_endpoint", "gen_ai_request_model", "llmgw_provider", "currency"}
)

// The conventions' advised bucket boundaries (ExplicitBucketBoundaries).
var (
	genaiTokenBuckets = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576,
		4194304, 16777216, 67108864}
	genaiDurationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12,
		10.24, 20.48, 40.96, 81.92}
	genaiTTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0}
	genaiTPOTBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5}
)

// gen_ai.operation.name's values (metrics and spans): chat completions,
// messages and responses all generate, so they are "chat".
const (
	genaiChat       = "chat"
	genaiEmbeddings = "embeddings"
)

// genaiErrOther is error.type's value (metrics and spans) for a failure
// without a type of its own (the conventions' fallback); the gateway gives
// every failure one.
const genaiErrOther = "_OTHER"

// operationOf is an endpoint's gen_ai.operation.name.
func operationOf(endpoint string) string {
	if endpoint == usage.EndpointEmbeddings {
		return genaiEmbeddings
	}
	return genaiChat
}

// genaiKey is the route whose answer reached the client: endpoint, alias,
// provider, the provider's protocol, the route's model, and whether the
// answer is a stream (only streams have a first token).
type genaiKey struct {
	endpoint, alias, provider, protocol, model string
	stream                                     bool
}

func (k genaiKey) clone() genaiKey {
	return genaiKey{k.endpoint, strings.Clone(k.alias), strings.Clone(k.provider), strings.Clone(k.protocol),
		strings.Clone(k.model), k.stream}
}

// genaiSeries are one answering route's children. outputTokens is nil for
// embeddings (they have no output), ttft and tpot for JSON answers.
type genaiSeries struct {
	inputTokens, outputTokens prometheus.Observer
	duration                  prometheus.Observer // error_type ""
	ttft, tpot                prometheus.Observer
}

// genaiSeries returns the children of the route k, resolved once.
func (m *Metrics) genaiSeries(k genaiKey) *genaiSeries {
	return m.genai.get(k, m, buildGenAISeries)
}

func buildGenAISeries(m *Metrics, k genaiKey) *genaiSeries {
	op := operationOf(k.endpoint)
	s := &genaiSeries{
		inputTokens: m.genaiTokens.WithLabelValues(op, "input", k.protocol, k.alias, k.model, k.provider, k.endpoint),
		duration:    m.genaiDuration.WithLabelValues(op, k.alias, k.protocol, k.model, k.provider, k.endpoint, ""),
	}
	if op != genaiEmbeddings {
		s.outputTokens = m.genaiTokens.WithLabelValues(op, "output", k.protocol, k.alias, k.model, k.provider, k.endpoint)
	}
	if k.stream {
		s.ttft = m.genaiTTFT.WithLabelValues(op, k.alias, k.protocol, k.model, k.provider, k.endpoint)
		s.tpot = m.genaiTPOT.WithLabelValues(op, k.alias, k.protocol, k.model, k.provider, k.endpoint)
	}
	return s
}

// observeTokens observes the tokens r, an answered request's record, counts.
func (s *genaiSeries) observeTokens(r *usage.Record) {
	s.inputTokens.Observe(float64(r.InputTokens))
	if s.outputTokens != nil {
		s.outputTokens.Observe(float64(r.OutputTokens))
	}
}

// failedKey is a request that reached routing and did not succeed: its
// endpoint, alias, the provider its record names (the last one tried),
// that provider's protocol and model when its answer had reached the
// client (a stream cut or canceled after its commit point), else "", and
// the record's error type.
type failedKey struct {
	endpoint, alias, provider, protocol, model, errorType string
}

func (k failedKey) clone() failedKey {
	return failedKey{k.endpoint, strings.Clone(k.alias), strings.Clone(k.provider), strings.Clone(k.protocol),
		strings.Clone(k.model), k.errorType}
}

type failedSeries struct{ duration prometheus.Observer }

func buildFailedSeries(m *Metrics, k failedKey) *failedSeries {
	return &failedSeries{m.genaiDuration.WithLabelValues(operationOf(k.endpoint), k.alias, k.protocol, k.model,
		k.provider, k.endpoint, k.errorType)}
}

// costKey is a priced request's endpoint, alias, provider and currency.
type costKey struct{ endpoint, alias, provider, currency string }

func (k costKey) clone() costKey {
	return costKey{k.endpoint, strings.Clone(k.alias), strings.Clone(k.provider), strings.Clone(k.currency)}
}

type costSeries struct{ total prometheus.Counter }

func buildCostSeries(m *Metrics, k costKey) *costSeries {
	return &costSeries{m.cost.WithLabelValues(k.endpoint, k.alias, k.provider, k.currency)}
}

// observeModelRequest observes a request that reached routing, once its
// record is final: its duration (arrival to the record's end), a successful
// stream's time per output token, and a priced request's cost.
func (x *exchange) observeModelRequest() {
	m, t, r := x.s.metrics, &x.times, &x.rec
	d := max(r.FinishedAt.Sub(x.start), 0)
	if r.Status == statusSuccess && t.genai != nil {
		t.genai.duration.Observe(d.Seconds())
		// The first token's time is the first content's flush; a stream the
		// upstream sent at once is flushed after its record ends: no time
		// between its tokens.
		if t.genai.tpot != nil && t.firstContent > 0 && r.OutputTokens >= 2 {
			t.genai.tpot.Observe(max(d-t.firstContent, 0).Seconds() / float64(r.OutputTokens-1))
		}
	} else {
		k := failedKey{endpoint: x.ing.endpoint, alias: x.alias.Name, provider: r.Provider, errorType: r.ErrorType}
		if t.genai != nil {
			k.protocol, k.model = x.protocolOf(r.Provider), r.ProviderModel
		}
		if k.errorType == "" {
			k.errorType = genaiErrOther
		}
		m.failed.get(k, m, buildFailedSeries).duration.Observe(d.Seconds())
	}
	if r.Currency != "" {
		c := m.costs.get(costKey{x.ing.endpoint, x.alias.Name, r.Provider, r.Currency}, m, buildCostSeries)
		c.total.Add(float64(r.Cost) / money.PicosPerUnit)
	}
}

// protocolOf is a configured provider's protocol, gen_ai.provider.name of
// metrics and spans ("openai", "anthropic"); "" when unknown.
// An exchange without a state (a unit benchmark's) has none.
func (x *exchange) protocolOf(provider string) string {
	if x.st == nil {
		return ""
	}
	return x.st.protocols[provider]
}
