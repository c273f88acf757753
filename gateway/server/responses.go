package server

import (
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/gateway/provider"
)

// handleResponses serves POST /v1/responses, OpenAI's Responses API
// (Codex, the OpenAI SDKs' Responses clients): the chat request's path
// (keys, limits, budgets, routing, fallback before the commit point, one
// record), with the Responses API's events. A route to an OpenAI provider
// that serves the API itself (ProviderEndpoint responsesAPI) passes the
// body through but for model; any other route translates it to chat
// completions or Anthropic Messages (gateway/translate).
//
// The gateway keeps no responses: a request that builds on a stored one
// (previous_response_id, conversation) is refused, and a caller sends the
// whole history instead, as Codex does (store: false).
func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	s.handleExchange(w, r, &responsesIngress)
}

// handleStoredResponse answers GET /v1/responses/{id} (and the stored
// response's other endpoints): the gateway keeps no responses.
func (s *Server) handleStoredResponse(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := s.admitRead(w, r, apiResponses); !ok {
		return
	}
	writeError(w, &apiError{status: http.StatusNotFound, typ: typeInvalidRequest, code: "response_not_stored",
		message: "llmgw keeps no responses: send the whole conversation in input (store: false) instead of retrieving one"}, requestID(w))
}

// responsesFields are the members of a Responses request the gateway reads.
type responsesFields struct {
	model              string
	input              responsesInput
	instructions       *string
	tools              jsontext.Value
	maxOutputTokens    *int
	stream             *bool
	previousResponseID jsontext.Value
	conversation       jsontext.Value
}

// parseResponsesRequest reads and validates what the gateway needs of a
// Responses request: the alias, stream, the output cap, and the
// instructions, input and tools for the input estimate and the configured
// limits (each input item counts as a message). The rest is the
// provider's to judge, as for chat (parseChatRequest).
func parseResponsesRequest(body []byte, lim limits, countTokens func(string) int) (*parsedRequest, *apiError) {
	var f responsesFields
	if e := readBodyFields(body, []readMember{
		{"model", &f.model}, {"input", &f.input}, {"instructions", &f.instructions}, {"tools", &f.tools},
		{"max_output_tokens", &f.maxOutputTokens}, {"stream", &f.stream},
		{"previous_response_id", &f.previousResponseID}, {"conversation", &f.conversation},
	}); e != nil {
		return nil, e
	}
	p := &parsedRequest{op: provider.OpChat, body: body}
	if e := checkModel(f.model, p); e != nil {
		return nil, e
	}
	for _, stored := range []struct {
		name  string
		value jsontext.Value
	}{{"previous_response_id", f.previousResponseID}, {"conversation", f.conversation}} {
		if len(stored.value) > 0 && stored.value.Kind() != 'n' {
			return nil, errInvalid("unsupported_parameter", stored.name, stored.name+
				": llmgw keeps no responses; send the whole conversation in input (store: false)")
		}
	}
	if f.stream != nil {
		p.stream = *f.stream
	}
	if mt := f.maxOutputTokens; mt != nil {
		if *mt < 1 || *mt > maxTokensCeiling {
			return nil, errInvalid("invalid_value", "max_output_tokens", fmt.Sprintf("max_output_tokens must be between 1 and %d", maxTokensCeiling))
		}
		p.maxTokens = mt
	}
	if !f.input.set {
		return nil, errInvalid("missing_field", "input", "input is required")
	}
	if e := checkInput(f.input.items, lim, p, countTokens); e != nil {
		return nil, e
	}
	if f.instructions != nil {
		p.inputTokens += countTokens(*f.instructions)
	}
	if len(f.tools) > 0 {
		p.inputTokens += countTokens(string(f.tools))
	}
	return p, nil
}

// checkInput applies the message limits to the input's items and adds
// their estimate.
func checkInput(items []messageText, lim limits, p *parsedRequest, countTokens func(string) int) *apiError {
	if lim.maxMessages > 0 && len(items) > lim.maxMessages {
		return errInvalid("too_many_messages", "input", fmt.Sprintf("at most %d input items are allowed", lim.maxMessages))
	}
	for i := range items {
		m := &items[i]
		if lim.maxContentChars > 0 && utf8.RuneCountInString(m.text) > lim.maxContentChars {
			return errInvalid("content_too_long", fmt.Sprintf("input[%d]", i), fmt.Sprintf("an input item must be at most %d characters", lim.maxContentChars))
		}
		p.inputTokens += countTokens(m.text) + m.images*imageTokens
	}
	return nil
}

// responsesInput is what the gateway reads of a Responses input: a string
// (one user message) or an array of items, each read for what it says —
// a message's content, a function call's arguments, a tool output.
type responsesInput struct {
	set   bool
	items []messageText
}

var (
	errInputItemsShape = &errShape{msg: "must be a string or an array of input items"}
	errInputItemShape  = &errShape{msg: "must be an object"}
)

// UnmarshalJSONFrom reads the input.
func (in *responsesInput) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	in.set = true
	switch dec.PeekKind() {
	case '"':
		tok, err := dec.ReadToken()
		in.items = append(in.items, messageText{text: tok.String()})
		return err
	case '[':
	default:
		return errInputItemsShape
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for dec.PeekKind() != ']' {
		var m messageText
		if err := m.readItem(dec); err != nil {
			return err
		}
		in.items = append(in.items, m)
	}
	_, err := dec.ReadToken()
	return err
}

// readItem reads one input item: the text of its content, arguments,
// input or output (whichever it has), skipping the rest.
func (m *messageText) readItem(dec *jsontext.Decoder) error {
	return readObject(dec, errInputItemShape, func(name string, kind jsontext.Kind) (bool, error) {
		if (name == "content" || name == "output" || name == "arguments" || name == "input") && (kind == '"' || kind == '[') {
			return true, m.addContent(dec)
		}
		return false, nil
	})
}
