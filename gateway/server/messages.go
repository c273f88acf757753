package server

import (
	"fmt"
	"net/http"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/gateway/provider"
)

// handleMessages serves POST /v1/messages, Anthropic's Messages API (the
// Anthropic SDKs, Claude Code): the chat request's path (keys, limits,
// budgets, routing, fallback before the commit point, one record), with
// Anthropic's errors and events. A route to an Anthropic provider passes
// the body through but for model, forwards anthropic-version and
// anthropic-beta and answers with the provider's own errors; a route to an
// OpenAI provider translates both ways (gateway/translate).
func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	s.handleExchange(w, r, &messagesIngress)
}

// messagesFields are the members of a Messages request the gateway reads.
type messagesFields struct {
	model     string
	system    systemText
	messages  []messageText
	tools     jsontext.Value
	maxTokens *int
	stream    *bool
}

// parseMessagesRequest reads and validates what the gateway needs of a
// Messages request: the alias, stream, the output cap (max_tokens, which
// the API requires), and the system prompt, messages and tools for the
// input estimate and the configured limits. The rest is the provider's to
// judge, as for chat (parseChatRequest).
func parseMessagesRequest(body []byte, lim limits, countTokens func(string) int) (*parsedRequest, *apiError) {
	p, f, e := readMessages(body, lim, countTokens)
	if e != nil {
		return nil, e
	}
	if f.maxTokens == nil {
		return nil, errInvalid("missing_field", "max_tokens", "max_tokens is required")
	}
	if *f.maxTokens < 1 || *f.maxTokens > maxTokensCeiling {
		return nil, errInvalid("invalid_value", "max_tokens", fmt.Sprintf("max_tokens must be between 1 and %d", maxTokensCeiling))
	}
	p.maxTokens = f.maxTokens
	if f.stream != nil {
		p.stream = *f.stream
	}
	return p, nil
}

// readMessages reads the members a Messages request and a count_tokens
// request share, and estimates the input.
func readMessages(body []byte, lim limits, countTokens func(string) int) (*parsedRequest, *messagesFields, *apiError) {
	var f messagesFields
	if e := readBodyFields(body, []readMember{
		{"model", &f.model}, {"system", &f.system}, {"messages", &f.messages}, {"tools", &f.tools},
		{"max_tokens", &f.maxTokens}, {"stream", &f.stream},
	}); e != nil {
		return nil, nil, e
	}
	p := &parsedRequest{op: provider.OpChat, body: body}
	if e := checkModel(f.model, p); e != nil {
		return nil, nil, e
	}
	if e := checkMessages(f.messages, lim, p, countTokens); e != nil {
		return nil, nil, e
	}
	p.inputTokens += countTokens(f.system.text) + f.system.images*imageTokens
	if len(f.tools) > 0 {
		p.inputTokens += countTokens(string(f.tools))
	}
	return p, &f, nil
}

// systemText is what the gateway reads of a Messages request's system
// prompt: a string or an array of text blocks, read as a message's content.
type systemText struct{ messageText }

// UnmarshalJSONFrom reads the system prompt.
func (s *systemText) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return s.readContent(dec)
}

// sessionOf is the caller's agent session, kept on the usage record: the
// id Claude Code (X-Claude-Code-Session-Id) or Codex (Session-Id) sends
// with every request of a session. An id that is not a short printable
// token, or that looks like a key, is not kept.
func sessionOf(r *http.Request) string {
	id := header(r.Header, hdrClaudeSession)
	if id == "" {
		id = header(r.Header, hdrCodexSession)
	}
	return safeID(id)
}

// safeID is id when it may be stored and shown: at most 128 printable
// ASCII characters without spaces, and nothing that looks like a key; ""
// otherwise.
func safeID(id string) string {
	if id == "" || len(id) > 128 || keyformat.LooksLikeKey(id) {
		return ""
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return ""
		}
	}
	return id
}
