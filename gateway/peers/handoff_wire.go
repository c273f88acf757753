package peers

import (
	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/gateway/usage"
)

// HandoffRecord is a usage record on the hand-off wire: every column of
// usage.Record, times as integer microseconds since the epoch (the ledger's
// own precision; 0 for none), cost as exact pico-units (money.Picos).
type HandoffRecord struct {
	RequestID         string            `json:"request_id"`
	ClientRequestID   string            `json:"client_request_id,omitzero"`
	Endpoint          string            `json:"endpoint,omitzero"`
	Session           string            `json:"session,omitzero"`
	Group             string            `json:"group,omitzero"`
	Owners            map[string]string `json:"owners,omitzero"`
	KeyID             string            `json:"key_id,omitzero"`
	KeyFingerprint    string            `json:"key_fingerprint,omitzero"`
	Alias             string            `json:"alias,omitzero"`
	Provider          string            `json:"provider,omitzero"`
	ProviderModel     string            `json:"provider_model,omitzero"`
	Status            string            `json:"status"`
	HTTPStatus        int               `json:"http_status,omitzero"`
	ErrorType         string            `json:"error_type,omitzero"`
	Fallbacks         int               `json:"fallbacks,omitzero"`
	Attempts          []HandoffAttempt  `json:"attempts,omitzero"`
	Stream            bool              `json:"stream,omitzero"`
	InputTokens       int               `json:"input_tokens,omitzero"`
	OutputTokens      int               `json:"output_tokens,omitzero"`
	CachedInputTokens int               `json:"cached_input_tokens,omitzero"`
	ReasoningTokens   int               `json:"reasoning_tokens,omitzero"`
	CostPicos         int64             `json:"cost_picos,omitzero"`
	Currency          string            `json:"currency,omitzero"`
	LatencyMs         int64             `json:"latency_ms,omitzero"`
	CreatedAtUs       int64             `json:"created_at_us"`
	FinishedAtUs      int64             `json:"finished_at_us"`
}

// HandoffAttempt is one upstream attempt of a HandoffRecord.
type HandoffAttempt struct {
	Provider   string `json:"provider,omitzero"`
	Model      string `json:"model,omitzero"`
	Outcome    string `json:"outcome,omitzero"`
	StatusCode int    `json:"status_code,omitzero"`
	LatencyMs  int64  `json:"latency_ms,omitzero"`
}

// handoffBody is a hand-off request's body.
type handoffBody struct {
	Records []HandoffRecord `json:"records"`
}

// HandoffAnswer is the receiver's answer to a batch: how many records it
// got and how many of them it did not have yet.
type HandoffAnswer struct {
	Received int `json:"received"`
	Added    int `json:"added"`
}

func recordOf(r usage.Record) HandoffRecord {
	h := HandoffRecord{
		RequestID: r.RequestID, ClientRequestID: r.ClientRequestID, Endpoint: r.Endpoint, Session: r.Session,
		Group: r.Group, Owners: r.Owners, KeyID: r.KeyID, KeyFingerprint: r.KeyFingerprint, Alias: r.Alias,
		Provider: r.Provider, ProviderModel: r.ProviderModel, Status: r.Status, HTTPStatus: r.HTTPStatus,
		ErrorType: r.ErrorType, Fallbacks: r.Fallbacks, Stream: r.Stream,
		InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CachedInputTokens: r.CachedInputTokens,
		ReasoningTokens: r.ReasoningTokens, CostPicos: int64(r.Cost), Currency: r.Currency, LatencyMs: r.LatencyMs,
		CreatedAtUs: usage.Micros(r.CreatedAt), FinishedAtUs: usage.Micros(r.FinishedAt),
	}
	if len(r.Attempts) > 0 {
		h.Attempts = make([]HandoffAttempt, len(r.Attempts))
		for i, a := range r.Attempts {
			h.Attempts[i] = HandoffAttempt{Provider: a.Provider, Model: a.Model, Outcome: a.Outcome, StatusCode: a.StatusCode, LatencyMs: a.LatencyMs}
		}
	}
	return h
}

func (h HandoffRecord) usage() usage.Record {
	r := usage.Record{
		RequestID: h.RequestID, ClientRequestID: h.ClientRequestID, Endpoint: h.Endpoint, Session: h.Session,
		Group: h.Group, Owners: h.Owners, KeyID: h.KeyID, KeyFingerprint: h.KeyFingerprint, Alias: h.Alias,
		Provider: h.Provider, ProviderModel: h.ProviderModel, Status: h.Status, HTTPStatus: h.HTTPStatus,
		ErrorType: h.ErrorType, Fallbacks: h.Fallbacks, Stream: h.Stream,
		InputTokens: h.InputTokens, OutputTokens: h.OutputTokens, CachedInputTokens: h.CachedInputTokens,
		ReasoningTokens: h.ReasoningTokens, Cost: money.Picos(h.CostPicos), Currency: h.Currency, LatencyMs: h.LatencyMs,
		CreatedAt: usage.FromMicros(h.CreatedAtUs), FinishedAt: usage.FromMicros(h.FinishedAtUs),
	}
	if len(h.Owners) == 0 {
		r.Owners = nil // an empty object and none are one thing in the ledger
	}
	if len(h.Attempts) > 0 {
		r.Attempts = make([]usage.Attempt, len(h.Attempts))
		for i, a := range h.Attempts {
			r.Attempts[i] = usage.Attempt{Provider: a.Provider, Model: a.Model, Outcome: a.Outcome, StatusCode: a.StatusCode, LatencyMs: a.LatencyMs}
		}
	}
	return r
}
