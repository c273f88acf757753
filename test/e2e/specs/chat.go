package specs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	wire "github.com/llmgw/llmgw/api/wire/openai"
)

// HTTP is the client of every helper here: bounded, keeping connections
// (through a kubectl port-forward a new connection is a new stream).
var HTTP = &http.Client{
	Timeout:   90 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second, DisableCompression: true},
}

// Prompt is a user message: text, then a `@mock` directive line when one is given.
func Prompt(text, directive string) string {
	if directive == "" {
		return text
	}
	return text + "\n@mock " + directive
}

// Client is the official OpenAI Go SDK pointed at a gateway (base without /v1).
func Client(base, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(key),
		option.WithMaxRetries(0), option.WithHTTPClient(HTTP))
}

// APIError is the gateway's error object, read from its wire form
// (wire.ErrorDetail) or from the SDK's error.
type APIError struct {
	Message   string
	Type      string
	Code      string
	RequestID string
}

func apiError(d wire.ErrorDetail) APIError {
	e := APIError{Message: d.Message, Type: d.Type, Code: d.CodeString()}
	if d.RequestID != nil {
		e.RequestID = *d.RequestID
	}
	return e
}

// errorBody reads an error answer; a body that is not one is an empty APIError.
func errorBody(body []byte) APIError {
	var e wire.ErrorResponse
	_ = jsonv2.Unmarshal(body, &e)
	return apiError(e.Error)
}

// Reply is what one chat request got, JSON or stream.
type Reply struct {
	Status    int
	RequestID string // X-Request-Id
	Provider  string // X-Llmgw-Provider
	Model     string
	Content   string // the message, or the concatenated deltas of a stream
	Finish    string
	Err       APIError // the error body (status ≥ 400)
	Usage     openai.CompletionUsage
}

func (r Reply) String() string {
	s := fmt.Sprintf("HTTP %d request %s provider %q model %q finish %q content %q", r.Status, r.RequestID, r.Provider, r.Model, r.Finish, r.Content)
	if r.Err.Code != "" || r.Err.Type != "" {
		s += fmt.Sprintf(" error %s/%s: %s", r.Err.Type, r.Err.Code, r.Err.Message)
	}
	return s
}

func params(model, prompt string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}}
}

// fromSDKError fills r from an SDK error; other errors (transport) are returned.
func fromSDKError(r *Reply, err error) error {
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		return err
	}
	r.Status = apiErr.StatusCode
	r.Err = APIError{Message: apiErr.Message, Type: apiErr.Type, Code: apiErr.Code}
	if apiErr.Response != nil {
		r.RequestID = apiErr.Response.Header.Get("X-Request-Id")
		r.Provider = apiErr.Response.Header.Get("X-Llmgw-Provider")
	}
	r.Err.RequestID = r.RequestID
	return nil
}

// ChatSDK sends one non-streaming chat completion through the SDK. An HTTP
// error is a Reply with its status and error body, not an error.
func ChatSDK(ctx context.Context, base, key, model, prompt string) (Reply, error) {
	var resp *http.Response
	c := Client(base, key)
	comp, err := c.Chat.Completions.New(ctx, params(model, prompt), option.WithResponseInto(&resp))
	var r Reply
	if err != nil {
		return r, fromSDKError(&r, err)
	}
	r.Status, r.RequestID, r.Provider = resp.StatusCode, resp.Header.Get("X-Request-Id"), resp.Header.Get("X-Llmgw-Provider")
	r.Model, r.Usage = comp.Model, comp.Usage
	if len(comp.Choices) != 1 {
		return r, fmt.Errorf("%d choices, want 1", len(comp.Choices))
	}
	r.Content, r.Finish = comp.Choices[0].Message.Content, comp.Choices[0].FinishReason
	return r, nil
}

// StreamSDK sends one streaming chat completion (include_usage) through the
// SDK and gathers the deltas. Every chunk must name the same model.
func StreamSDK(ctx context.Context, base, key, model, prompt string) (Reply, error) {
	var resp *http.Response
	c := Client(base, key)
	p := params(model, prompt)
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := c.Chat.Completions.NewStreaming(ctx, p, option.WithResponseInto(&resp))
	defer stream.Close()
	var r Reply
	var b strings.Builder
	for stream.Next() {
		ch := stream.Current()
		if r.Model == "" {
			r.Model = ch.Model
		} else if ch.Model != r.Model {
			return r, fmt.Errorf("chunk model %q after %q", ch.Model, r.Model)
		}
		for _, c := range ch.Choices {
			b.WriteString(c.Delta.Content)
			if c.FinishReason != "" {
				r.Finish = c.FinishReason
			}
		}
		if ch.Usage.TotalTokens > 0 {
			r.Usage = ch.Usage
		}
	}
	r.Content = b.String()
	if resp != nil {
		r.Status, r.RequestID, r.Provider = resp.StatusCode, resp.Header.Get("X-Request-Id"), resp.Header.Get("X-Llmgw-Provider")
	}
	if err := stream.Err(); err != nil {
		if ferr := fromSDKError(&r, err); ferr != nil {
			return r, fmt.Errorf("stream: %w", ferr)
		}
	}
	return r, nil
}

// ChatBody is a chat request body with one user message.
func ChatBody(model, prompt string, stream bool) []byte {
	body := map[string]any{"model": model, "messages": []map[string]string{{"role": "user", "content": prompt}}}
	if stream {
		body["stream"] = true
		body["stream_options"] = map[string]bool{"include_usage": true}
	}
	b, _ := jsonv2.Marshal(body)
	return b
}

// Post sends body to POST /v1/chat/completions with net/http; key "" sends
// no Authorization header. The caller closes the body.
func Post(ctx context.Context, base, key string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return HTTP.Do(req)
}

// Raw is one chat request sent and read with net/http, byte for byte.
type Raw struct {
	Status int
	Header http.Header
	Body   []byte
	SSE    SSE // parsed when the answer is an event stream
	Err    APIError
}

// RequestID is the X-Request-Id header.
func (r Raw) RequestID() string { return r.Header.Get("X-Request-Id") }

// Provider is the X-Llmgw-Provider header.
func (r Raw) Provider() string { return r.Header.Get("X-Llmgw-Provider") }

func (r Raw) String() string {
	return fmt.Sprintf("HTTP %d request %s provider %q: %.600s", r.Status, r.RequestID(), r.Provider(), r.Body)
}

// RawChat sends one chat request with net/http and reads the whole answer.
func RawChat(ctx context.Context, base, key, model, prompt string, stream bool) (Raw, error) {
	resp, err := Post(ctx, base, key, ChatBody(model, prompt, stream))
	if err != nil {
		return Raw{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	r := Raw{Status: resp.StatusCode, Header: resp.Header, Body: body}
	if err != nil {
		return r, fmt.Errorf("reading the answer: %w", err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		r.SSE = ParseSSE(body)
	} else if resp.StatusCode >= 400 {
		r.Err = errorBody(body)
	}
	return r, nil
}

// SSE is an event stream as the gateway sent it.
type SSE struct {
	Data       []string   // every data: payload, in order
	Done       int        // how many data: [DONE]
	DoneIsLast bool       // the last event is [DONE]
	Content    string     // the concatenated content deltas
	Chunks     int        // chunks with content
	Errors     []APIError // in-stream error events
	Finish     string
	Models     []string // distinct chunk models
	Usage      *wire.Usage
}

// ParseSSE reads an event stream: events separated by blank lines, their
// data: lines joined.
func ParseSSE(body []byte) SSE {
	var s SSE
	var cur []string
	flush := func() {
		if len(cur) == 0 {
			return
		}
		s.Data = append(s.Data, strings.Join(cur, "\n"))
		cur = nil
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			flush()
			continue
		}
		if d, ok := strings.CutPrefix(line, "data:"); ok {
			cur = append(cur, strings.TrimPrefix(d, " "))
		}
	}
	flush()
	for i, d := range s.Data {
		if d == "[DONE]" {
			s.Done++
			s.DoneIsLast = i == len(s.Data)-1
			continue
		}
		var e struct {
			Error *wire.ErrorDetail `json:"error"`
		}
		if jsonv2.Unmarshal([]byte(d), &e) == nil && e.Error != nil {
			s.Errors = append(s.Errors, apiError(*e.Error))
			continue
		}
		var ev wire.ChatCompletionChunk
		if jsonv2.Unmarshal([]byte(d), &ev) != nil {
			continue
		}
		if ev.Model != "" && !slices.Contains(s.Models, ev.Model) {
			s.Models = append(s.Models, ev.Model)
		}
		for _, c := range ev.Choices {
			if c.Delta.Content != nil && *c.Delta.Content != "" {
				s.Content += *c.Delta.Content
				s.Chunks++
			}
			if c.FinishReason != nil && *c.FinishReason != "" {
				s.Finish = *c.FinishReason
			}
		}
		if ev.Usage.Usage != nil && ev.Usage.TotalTokens > 0 {
			s.Usage = ev.Usage.Usage
		}
	}
	return s
}

// CheckTerminated is the SSE invariant: exactly one data: [DONE], and it is
// the last event.
func (s SSE) CheckTerminated() error {
	if s.Done != 1 || !s.DoneIsLast {
		return fmt.Errorf("stream has %d data: [DONE] (last event is [DONE]: %v); want exactly one, last", s.Done, s.DoneIsLast)
	}
	return nil
}

// Status sends one minimal chat request and returns its HTTP status (-1 when
// it could not be sent or read): the probe of the paced loads.
func Status(ctx context.Context, base, key, model, prompt string) int {
	resp, err := Post(ctx, base, key, ChatBody(model, prompt, false))
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return -1
	}
	return resp.StatusCode
}

// Models is GET /v1/models: the alias ids the key may use, sorted as served,
// or the HTTP status and error when refused.
func Models(ctx context.Context, base, key string) (ids []string, status int, apiErr APIError, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/models", nil)
	if err != nil {
		return nil, 0, apiErr, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := HTTP.Do(req)
	if err != nil {
		return nil, 0, apiErr, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, resp.StatusCode, apiErr, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, errorBody(body), nil
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := jsonv2.Unmarshal(body, &list); err != nil {
		return nil, resp.StatusCode, apiErr, fmt.Errorf("GET /v1/models: %w", err)
	}
	ids = []string{}
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	return ids, resp.StatusCode, apiErr, nil
}

// ModelsStatus is the HTTP status of GET /v1/models (-1: not answered).
func ModelsStatus(ctx context.Context, base, key string) int {
	_, status, _, err := Models(ctx, base, key)
	if err != nil {
		return -1
	}
	return status
}

// ServesModel reports whether GET /v1/models with key lists model.
func ServesModel(ctx context.Context, base, key, model string) bool {
	ids, status, _, err := Models(ctx, base, key)
	return err == nil && status == http.StatusOK && slices.Contains(ids, model)
}
