package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/tokens"
	"github.com/llmgw/llmgw/api/wire/anthropic"
	"github.com/llmgw/llmgw/gateway/provider"
	"github.com/llmgw/llmgw/gateway/translate"
)

// handleCountTokens serves POST /v1/messages/count_tokens: how many input
// tokens a Messages request would take. It is a read, never billed and
// never recorded: the client-address limit, the key, the key's read bucket
// and its model permissions apply, budgets do not. The alias's primary
// route answers when its provider counts (an Anthropic provider's own
// count_tokens, the request passed through but for model); otherwise, or
// when that provider cannot be reached, the gateway's own count answers
// (the estimate admission uses: the same tokenizer for every model, so an
// approximation of the provider's). A provider's refusal (4xx) is the
// caller's answer, as the provider wrote it.
func (s *Server) handleCountTokens(w http.ResponseWriter, r *http.Request) {
	id := requestID(w)
	w.Header()[hdrAnthropicRequestID] = []string{id}
	st, k, ok := s.admitRead(w, r, apiAnthropic)
	if !ok {
		return
	}
	fail := func(e *apiError) { apiAnthropic.writeError(w, e, id) }
	lim := st.snap.Limits
	held, aerr := s.takeBody(r, lim.MaxBodyBytes)
	if aerr != nil {
		fail(aerr)
		return
	}
	defer s.bodies.give(held)
	body, aerr := readBody(w, r, lim.MaxBodyBytes)
	if aerr != nil {
		fail(aerr)
		return
	}
	p, _, aerr := readMessages(body, limits{maxMessages: lim.MaxMessages, maxContentChars: lim.MaxContentChars}, tokens.Count)
	if aerr != nil {
		fail(aerr)
		return
	}
	alias, aerr := authorizeModel(st, k, p.alias)
	if aerr != nil {
		fail(aerr)
		return
	}
	if s.providerCount(w, r, st, alias.Primary, body) {
		return
	}
	writeJSON(w, http.StatusOK, anthropic.CountTokensResponse{InputTokens: p.inputTokens})
}

// providerCount asks rt's provider to count, when it is an Anthropic
// provider that is available, and writes its answer or its refusal: true
// when it wrote one. Any other failure (a timeout, a connection failure, a
// 5xx, an answer without input_tokens) leaves the answer to the gateway's
// own count.
func (s *Server) providerCount(w http.ResponseWriter, r *http.Request, st *state, rt snapshot.Route, body []byte) bool {
	if st.protocols[rt.Provider] != translate.ProtocolAnthropic {
		return false
	}
	if _, down := st.unavailable[rt.Provider]; down {
		return false
	}
	out, err := translate.Messages(translate.ProtocolAnthropic).Request(&translate.ChatRequest{Body: body}, rt.Model)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(r.Context(), countTimeout)
	defer cancel()
	var answer []byte
	err = st.adapters[rt.Provider].Complete(ctx, provider.Call{Op: provider.OpCountTokens, Body: out, Header: passThroughHeaders(r.Header)},
		func(raw []byte) error {
			var c struct {
				InputTokens *int `json:"input_tokens"`
			}
			if json.Unmarshal(raw, &c) != nil || c.InputTokens == nil {
				return &translate.Failure{Malformed: true, Message: "count_tokens answer without input_tokens"}
			}
			answer = raw
			return nil
		})
	var pe *provider.Error
	switch {
	case err == nil:
		w.Header()["Content-Type"] = jsonType
		w.Header()[hdrProvider] = []string{rt.Provider}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(answer)
		return true
	case errors.As(err, &pe) && pe.Kind == provider.KindStatus && pe.StatusCode >= 400 && pe.StatusCode < 500 &&
		pe.StatusCode != http.StatusTooManyRequests && pe.Body != nil:
		w.Header()[hdrProvider] = []string{rt.Provider}
		writeProviderError(w, pe)
		return true
	}
	s.log.Warn("count_tokens: provider did not count; the gateway counted", "provider", rt.Provider, "err", err)
	return false
}

// countTimeout bounds a provider's count: the gateway's own count is the
// answer past it.
const countTimeout = 10 * time.Second
