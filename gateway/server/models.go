package server

import (
	"errors"
	"net/http"
	"sort"
	"strconv"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/usage"
)

type modelJSON struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

type listJSON[T any] struct {
	Object     string `json:"object"`
	Data       []T    `json:"data"`
	HasMore    *bool  `json:"has_more,omitempty"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// admitRead admits a request to an endpoint that reads and is not
// recorded (/v1/models, /v1/usage, count_tokens): the client-address
// limit, authentication, then the key's read bucket, with errors in api's
// shape.
func (s *Server) admitRead(w http.ResponseWriter, r *http.Request, api callerAPI) (*state, *snapshot.Key, bool) {
	id := requestID(w)
	if aerr := s.checkClientIP(r); aerr != nil {
		api.writeError(w, aerr, id)
		return nil, nil, false
	}
	st := s.state.Load()
	if st == nil {
		api.writeError(w, &apiError{status: http.StatusServiceUnavailable, typ: typeOverloaded, code: "not_ready",
			message: "the gateway has no configuration loaded yet"}, id)
		return nil, nil, false
	}
	k, _, aerr := s.authenticate(st, r)
	if aerr == nil {
		aerr = s.checkRead(k)
	}
	if aerr != nil {
		api.writeError(w, aerr, id)
		return nil, nil, false
	}
	return st, k, true
}

// handleModels lists only the aliases the calling key may use.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	api := apiOf(r)
	st, k, ok := s.admitRead(w, r, api)
	if !ok {
		return
	}
	if api == apiAnthropic {
		writeAnthropicModels(w, st, k)
		return
	}
	out := listJSON[modelJSON]{Object: "list", Data: []modelJSON{}}
	created := st.loadedAt.Unix()
	for _, a := range st.snap.Aliases {
		if k.Allows(a.Name) {
			out.Data = append(out.Data, modelJSON{ID: a.Name, Object: "model", Created: created, OwnedBy: "llmgw"})
		}
	}
	sort.Slice(out.Data, func(i, j int) bool { return out.Data[i].ID < out.Data[j].ID })
	writeJSON(w, http.StatusOK, out)
}

type attemptJSON struct {
	Provider   string `json:"provider"`
	Model      string `json:"model"`
	Outcome    string `json:"outcome"`
	StatusCode int    `json:"status_code,omitempty"`
	LatencyMs  int64  `json:"latency_ms"`
}

type recordJSON struct {
	Object          string        `json:"object"`
	RequestID       string        `json:"request_id"`
	ClientRequestID string        `json:"client_request_id,omitempty"`
	KeyID           string        `json:"key_id"`
	KeyFingerprint  string        `json:"key_fingerprint"`
	Model           string        `json:"model"`
	Provider        string        `json:"provider,omitempty"`
	ProviderModel   string        `json:"provider_model,omitempty"`
	Status          string        `json:"status"`
	HTTPStatus      int           `json:"http_status"`
	ErrorType       string        `json:"error_type,omitempty"`
	Fallbacks       int           `json:"fallbacks"`
	Attempts        []attemptJSON `json:"attempts"`
	Stream          bool          `json:"stream"`
	InputTokens     int           `json:"input_tokens"`
	OutputTokens    int           `json:"output_tokens"`
	// Cached input tokens are part of input_tokens, reasoning tokens part
	// of output_tokens; cost is exact decimal text in currency ("0" and ""
	// for an unpriced route).
	CachedInputTokens int    `json:"cached_input_tokens"`
	ReasoningTokens   int    `json:"reasoning_tokens"`
	Cost              string `json:"cost"`
	Currency          string `json:"currency"`
	LatencyMs         int64  `json:"latency_ms"`
	CreatedAt         int64  `json:"created_at"`
	// The endpoint the request came in on and the caller's agent session:
	// omitted when empty, like the other fields a record may lack (a
	// record written before the gateway stored the endpoint, a request
	// without a session).
	Endpoint string `json:"endpoint,omitempty"`
	Session  string `json:"session,omitempty"`
	// The key's budget group and owner labels when the request was made.
	Group  string            `json:"group,omitempty"`
	Owners map[string]string `json:"owners,omitempty"`
}

// handleUsage lists the calling key's own records, newest first, those of
// one endpoint and/or one agent session when asked (usageFilter).
func (s *Server) handleUsage(w http.ResponseWriter, r *http.Request) {
	_, k, ok := s.admitRead(w, r, apiOpenAI)
	if !ok {
		return
	}
	reqID := requestID(w)
	q := r.URL.Query()
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			writeError(w, errInvalid("invalid_value", "limit", "limit must be an integer between 1 and 500"), reqID)
			return
		}
		limit = n
	}
	f, aerr := usageFilter(q)
	if aerr != nil {
		writeError(w, aerr, reqID)
		return
	}
	recs, next, more, err := s.ledger.ListFiltered(r.Context(), k.ID, f, limit, q.Get("cursor"))
	if errors.Is(err, usage.ErrBadCursor) {
		writeError(w, errInvalid("invalid_value", "cursor", "cursor is not one this gateway issued"), reqID)
		return
	}
	if err != nil {
		s.log.Error("usage list failed", "request_id", reqID, "err", err)
		writeError(w, &apiError{status: http.StatusInternalServerError, typ: typeInternal, code: "usage_unavailable",
			message: "the usage store could not be read"}, reqID)
		return
	}
	if s.peers != nil {
		s.writeUsageAcrossReplicas(w, r, k.ID, f, recs, more, limit, reqID)
		return
	}
	out := listJSON[recordJSON]{Object: "list", Data: make([]recordJSON, 0, len(recs)), HasMore: &more, NextCursor: next}
	for _, rec := range recs {
		out.Data = append(out.Data, toRecordJSON(rec))
	}
	writeJSON(w, http.StatusOK, out)
}

func toRecordJSON(rec usage.Record) recordJSON {
	j := recordJSON{Object: "usage.record", RequestID: rec.RequestID, ClientRequestID: rec.ClientRequestID,
		KeyID: rec.KeyID, KeyFingerprint: rec.KeyFingerprint, Model: rec.Alias, Provider: rec.Provider,
		ProviderModel: rec.ProviderModel, Status: rec.Status, HTTPStatus: rec.HTTPStatus, ErrorType: rec.ErrorType,
		Fallbacks: rec.Fallbacks, Attempts: make([]attemptJSON, 0, len(rec.Attempts)), Stream: rec.Stream,
		InputTokens: rec.InputTokens, OutputTokens: rec.OutputTokens, LatencyMs: rec.LatencyMs, CreatedAt: rec.CreatedAt.Unix(),
		CachedInputTokens: rec.CachedInputTokens, ReasoningTokens: rec.ReasoningTokens, Cost: rec.Cost.String(), Currency: rec.Currency,
		Endpoint: rec.Endpoint, Session: rec.Session, Group: rec.Group, Owners: rec.Owners}
	for _, a := range rec.Attempts {
		j.Attempts = append(j.Attempts, attemptJSON{Provider: a.Provider, Model: a.Model, Outcome: a.Outcome,
			StatusCode: a.StatusCode, LatencyMs: a.LatencyMs})
	}
	return j
}
