package specs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// The endpoints' names in usage records, and the headers agents name their
// session with (Claude Code on /v1/messages, Codex on /v1/responses).
const (
	endpointMessages  = "messages"
	endpointResponses = "responses"

	claudeSessionHeader = "X-Claude-Code-Session-Id"
	codexSessionHeader  = "Session-Id"
)

// anthropicClient is the official Anthropic Go SDK pointed at a gateway
// (base without /v1), authenticated by auth, naming session on every
// request. Nothing comes from the environment (ANTHROPIC_API_KEY,
// ANTHROPIC_BASE_URL, a profile): the spec says what is sent.
func anthropicClient(base string, auth aoption.RequestOption, session string) anthropic.Client {
	return anthropic.NewClient(aoption.WithoutEnvironmentDefaults(), aoption.WithBaseURL(base), auth,
		aoption.WithHeader(claudeSessionHeader, session), aoption.WithMaxRetries(0), aoption.WithHTTPClient(HTTP))
}

// xAPIKey authenticates with the key in x-api-key, as Claude Code sends
// ANTHROPIC_API_KEY. (This SDK's WithAPIKey sends a Bearer token: the
// header is set by hand so that the x-api-key path is the one driven.)
func xAPIKey(key string) aoption.RequestOption { return aoption.WithHeader("X-Api-Key", key) }

// bearer authenticates with the key as a Bearer token, as Claude Code sends
// ANTHROPIC_AUTH_TOKEN.
func bearer(key string) aoption.RequestOption { return aoption.WithAuthToken(key) }

// responsesClient is openai-go pointed at a gateway, naming session on
// every request, as Codex does.
func responsesClient(base, key, session string) openai.Client {
	return openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0),
		option.WithHTTPClient(HTTP), option.WithHeader(codexSessionHeader, session))
}

// messagesReply is one /v1/messages answer through the SDK, a stream
// accumulated into the message.
type messagesReply struct {
	RequestID  string // Request-Id, where Anthropic's API puts it
	XRequestID string // X-Request-Id, the gateway's own header
	Provider   string // X-Llmgw-Provider
	anthropic.Message
}

// messagesTurn sends p through the SDK, as JSON or streamed (the events
// accumulated into one message, as Claude Code does). An HTTP error is an
// error (an *anthropic.Error).
func messagesTurn(ctx context.Context, c anthropic.Client, p anthropic.MessageNewParams, stream bool) (messagesReply, error) {
	var resp *http.Response
	var r messagesReply
	header := func() {
		if resp != nil {
			r.RequestID, r.XRequestID = resp.Header.Get("Request-Id"), resp.Header.Get("X-Request-Id")
			r.Provider = resp.Header.Get("X-Llmgw-Provider")
		}
	}
	if !stream {
		m, err := c.Messages.New(ctx, p, aoption.WithResponseInto(&resp))
		header()
		if err != nil {
			return r, err
		}
		r.Message = *m
		return r, nil
	}
	s := c.Messages.NewStreaming(ctx, p, aoption.WithResponseInto(&resp))
	defer s.Close()
	var m anthropic.Message
	for s.Next() {
		if err := m.Accumulate(s.Current()); err != nil {
			header()
			return r, fmt.Errorf("accumulate: %w", err)
		}
	}
	header()
	if err := s.Err(); err != nil {
		return r, fmt.Errorf("stream: %w", err)
	}
	r.Message = m
	return r, nil
}

// textOf is the text of a message's text blocks, and how many there are.
func textOf(m anthropic.Message) (string, int) {
	var b strings.Builder
	n := 0
	for _, c := range m.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
			n++
		}
	}
	return b.String(), n
}

// toolUses are a message's tool_use blocks.
func toolUses(m anthropic.Message) []anthropic.ContentBlockUnion {
	var out []anthropic.ContentBlockUnion
	for _, c := range m.Content {
		if c.Type == "tool_use" {
			out = append(out, c)
		}
	}
	return out
}

// responsesReply is one /v1/responses answer through openai-go: the
// response, or a stream's response.completed response with what the
// stream's events said besides.
type responsesReply struct {
	RequestID, Provider string
	responses.Response
	Deltas string         // stream: the output_text deltas, concatenated
	Events map[string]int // stream: events by type
}

// responsesTurn sends p through the SDK, as JSON or streamed. A stream must
// end with exactly one response.completed (and no response.failed), whose
// response is the answer. An HTTP error is an error (an *openai.Error).
func responsesTurn(ctx context.Context, c openai.Client, p responses.ResponseNewParams, stream bool) (responsesReply, error) {
	var resp *http.Response
	var r responsesReply
	header := func() {
		if resp != nil {
			r.RequestID, r.Provider = resp.Header.Get("X-Request-Id"), resp.Header.Get("X-Llmgw-Provider")
		}
	}
	if !stream {
		out, err := c.Responses.New(ctx, p, option.WithResponseInto(&resp))
		header()
		if err != nil {
			return r, err
		}
		r.Response = *out
		return r, nil
	}
	s := c.Responses.NewStreaming(ctx, p, option.WithResponseInto(&resp))
	defer s.Close()
	r.Events = map[string]int{}
	var deltas strings.Builder
	for s.Next() {
		ev := s.Current()
		r.Events[ev.Type]++
		switch ev.Type {
		case "response.output_text.delta":
			deltas.WriteString(ev.Delta)
		case "response.completed":
			r.Response = ev.Response
		}
	}
	header()
	r.Deltas = deltas.String()
	if err := s.Err(); err != nil {
		return r, fmt.Errorf("stream: %w", err)
	}
	if r.Events["response.completed"] != 1 || r.Events["response.failed"] != 0 {
		return r, fmt.Errorf("the stream's lifecycle events: %v; want one response.completed and no response.failed", r.Events)
	}
	return r, nil
}

// functionCalls are a response's function_call items.
func functionCalls(r responses.Response) []responses.ResponseFunctionToolCall {
	var out []responses.ResponseFunctionToolCall
	for _, item := range r.Output {
		if item.Type == "function_call" {
			out = append(out, item.AsFunctionCall())
		}
	}
	return out
}

// sseEvent is one server-sent event: its event: name and its data: lines
// joined.
type sseEvent struct{ Name, Data string }

// parseEvents reads an event stream of named events (Anthropic's and the
// Responses API's): events separated by blank lines.
func parseEvents(body []byte) []sseEvent {
	var out []sseEvent
	var cur sseEvent
	var data []string
	flush := func() {
		if cur.Name != "" || len(data) > 0 {
			cur.Data = strings.Join(data, "\n")
			out = append(out, cur)
		}
		cur, data = sseEvent{}, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			flush()
		case strings.HasPrefix(line, "event:"):
			cur.Name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	flush()
	return out
}

// eventNames counts events by name.
func eventNames(evs []sseEvent) map[string]int {
	n := map[string]int{}
	for _, e := range evs {
		n[e.Name]++
	}
	return n
}

// postRaw posts body to base+path with hdr (and a JSON content type) and
// reads the whole answer.
func postRaw(ctx context.Context, base, path string, hdr http.Header, body any) (*http.Response, []byte, error) {
	b, err := jsonv2.Marshal(body)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(b))
	if err != nil {
		return nil, nil, err
	}
	req.Header = hdr.Clone()
	req.Header.Set("Content-Type", "application/json")
	resp, err := HTTP.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp, out, err
}

// usagePage is one page of GET /v1/usage.
type usagePage struct {
	Data    []Record `json:"data"`
	HasMore bool     `json:"has_more"`
	Partial bool     `json:"partial"`
}

// filteredUsage reads the first page (up to 500 records) of GET /v1/usage
// with key, filtered by q (endpoint=, session=).
func filteredUsage(ctx context.Context, base, key string, q url.Values) (usagePage, error) {
	var p usagePage
	q = maps.Clone(q) // the caller's values stay as they are
	if q == nil {
		q = url.Values{}
	}
	q.Set("limit", "500")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/usage?"+q.Encode(), nil)
	if err != nil {
		return p, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := HTTP.Do(req)
	if err != nil {
		return p, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return p, err
	}
	if resp.StatusCode != http.StatusOK {
		return p, fmt.Errorf("GET /v1/usage?%s: HTTP %d: %.300s", q.Encode(), resp.StatusCode, body)
	}
	if err := jsonv2.Unmarshal(body, &p); err != nil {
		return p, fmt.Errorf("GET /v1/usage?%s: %w", q.Encode(), err)
	}
	return p, nil
}
