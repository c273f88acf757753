package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/llmgw/llmgw/api/snapshot"
)

// Agents' traffic through the real server and both mocks, with the official
// SDK as the client: tools, tool results, images, structured output and
// embeddings, on an alias of each protocol (chat-alpha: OpenAI protocol
// first; chat-beta: Anthropic Messages first, translated both ways).

// weatherTool is the tool the conversations offer.
var weatherTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name:        "get_weather",
	Description: openai.String("The weather in a city"),
	Parameters: shared.FunctionParameters{"type": "object", "required": []string{"city"},
		"properties": map[string]any{"city": map[string]any{"type": "string"}}},
})

// toolCallParams is a first turn whose last user message asks the mocks
// (through a directive) to call get_weather for Paris.
func toolCallParams(alias, directive string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model: alias,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("You answer with tools"),
			openai.UserMessage("What is the weather in Paris?\n@mock *:tool=get_weather *:args={\"city\":\"Paris\"} " + directive),
		},
		Tools: []openai.ChatCompletionToolUnionParam{weatherTool},
	}
}

// secondTurn is the conversation after the assistant's tool call: the call
// in history and the tool's result (which may carry a directive line).
func secondTurn(first openai.ChatCompletionNewParams, call openai.ChatCompletionMessage, result string) openai.ChatCompletionNewParams {
	p := first
	p.Messages = append(append([]openai.ChatCompletionMessageParamUnion(nil), first.Messages...),
		call.ToParam(), openai.ToolMessage(result, call.ToolCalls[0].ID))
	return p
}

// checkToolCall asserts a first turn's answer: one call of get_weather with
// the directive's arguments.
func checkToolCall(t *testing.T, alias string, c *openai.ChatCompletion) openai.ChatCompletionMessage {
	t.Helper()
	if len(c.Choices) != 1 || c.Model != alias {
		t.Fatalf("answer %+v", c)
	}
	ch := c.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 {
		t.Fatalf("finish %q, tool calls %+v", ch.FinishReason, ch.Message.ToolCalls)
	}
	tc := ch.Message.ToolCalls[0]
	var args map[string]any
	if tc.Function.Name != "get_weather" || tc.ID == "" || json.Unmarshal([]byte(tc.Function.Arguments), &args) != nil || args["city"] != "Paris" {
		t.Fatalf("tool call %+v", tc)
	}
	return ch.Message
}

func agentsHarness(t *testing.T, mutate ...func(*snapshot.Snapshot)) *harness {
	return newHarness(t, append([]func(*snapshot.Snapshot){func(s *snapshot.Snapshot) {
		// Prices, so that every record has a cost.
		for i := range s.Providers {
			p := &s.Providers[i]
			switch p.Name {
			case "alpha":
				p.Prices = []snapshot.Price{{Model: "alpha-large", InputPerMillion: "1", OutputPerMillion: "2"},
					{Model: "alpha-embed", InputPerMillion: "0.1", OutputPerMillion: "0"}}
			case "beta":
				p.Prices = []snapshot.Price{{Model: "beta-large", InputPerMillion: "3", OutputPerMillion: "4"}}
			}
		}
	}}, mutate...)...)
}

// TestToolConversation: call → tool result → answer, JSON and streamed, on
// an alias of each protocol; each request has one successful record with a
// cost, from the alias's primary.
func TestToolConversation(t *testing.T) {
	h := agentsHarness(t)
	c := sdk(h, h.keyA)
	ctx := context.Background()
	for _, tc := range []struct{ alias, provider string }{{"chat-alpha", "alpha"}, {"chat-beta", "beta"}} {
		t.Run(tc.alias+"/json", func(t *testing.T) {
			first := toolCallParams(tc.alias, "")
			var hdr *http.Response
			a1, err := c.Chat.Completions.New(ctx, first, option.WithResponseInto(&hdr))
			if err != nil {
				t.Fatal(err)
			}
			call := checkToolCall(t, tc.alias, a1)
			h.checkRecord(hdr.Header.Get("X-Request-Id"), tc.provider, "success")
			a2, err := c.Chat.Completions.New(ctx, secondTurn(first, call, `{"temp_c": 21, "sky": "clear"}`), option.WithResponseInto(&hdr))
			if err != nil {
				t.Fatal(err)
			}
			if got := a2.Choices[0].Message.Content; a2.Choices[0].FinishReason != "stop" || !strings.Contains(got, `tool result received: {"temp_c": 21, "sky": "clear"}`) {
				t.Fatalf("second turn: %q (%s)", got, a2.Choices[0].FinishReason)
			}
			h.checkRecord(hdr.Header.Get("X-Request-Id"), tc.provider, "success")
		})
		t.Run(tc.alias+"/stream", func(t *testing.T) {
			first := toolCallParams(tc.alias, "*:chunks=3")
			first.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			a1, id := streamAll(t, c, first)
			call := checkToolCall(t, tc.alias, a1)
			if a1.Usage.PromptTokens == 0 || a1.Usage.CompletionTokens == 0 {
				t.Fatalf("usage chunk %+v", a1.Usage)
			}
			rec := h.checkRecord(id, tc.provider, "success")
			if rec.InputTokens != int(a1.Usage.PromptTokens) || rec.OutputTokens != int(a1.Usage.CompletionTokens) {
				t.Fatalf("record %d/%d tokens, usage chunk %d/%d", rec.InputTokens, rec.OutputTokens, a1.Usage.PromptTokens, a1.Usage.CompletionTokens)
			}
			a2, id := streamAll(t, c, secondTurn(first, call, "sunny"))
			if got := a2.Choices[0].Message.Content; !strings.Contains(got, "tool result received: sunny") {
				t.Fatalf("second turn: %q", got)
			}
			h.checkRecord(id, tc.provider, "success")
		})
	}
}

// streamAll sends a streamed request and accumulates the answer; the
// request id comes from the response headers.
func streamAll(t *testing.T, c openai.Client, p openai.ChatCompletionNewParams) (*openai.ChatCompletion, string) {
	t.Helper()
	var hdr *http.Response
	s := c.Chat.Completions.NewStreaming(context.Background(), p, option.WithResponseInto(&hdr))
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return &acc.ChatCompletion, hdr.Header.Get("X-Request-Id")
}

// checkRecord asserts the request's one final record and returns it.
func (h *harness) checkRecord(id, provider, status string) (rec recordView) {
	h.t.Helper()
	r := h.record(id)
	if r.Status != status || r.Provider != provider || r.InputTokens == 0 || (status == "success" && r.Cost == 0) {
		h.t.Fatalf("record %s: status %s provider %s tokens %d/%d cost %d", id, r.Status, r.Provider, r.InputTokens, r.OutputTokens, r.Cost)
	}
	return recordView{r.InputTokens, r.OutputTokens, r.Fallbacks}
}

type recordView struct{ InputTokens, OutputTokens, Fallbacks int }

// TestToolConversationFallsBackAcrossProtocols: the second turn of a tool
// conversation started on one protocol fails over to a provider of the
// other, which gets the whole history (the call and its result)
// translated, and answers it.
func TestToolConversationFallsBackAcrossProtocols(t *testing.T) {
	h := agentsHarness(t)
	c := sdk(h, h.keyA)
	for _, tc := range []struct{ alias, primary, fallback string }{{"chat-alpha", "alpha", "beta"}, {"chat-beta", "beta", "alpha"}} {
		t.Run(tc.alias, func(t *testing.T) {
			first := toolCallParams(tc.alias, "")
			a1, err := c.Chat.Completions.New(context.Background(), first)
			if err != nil {
				t.Fatal(err)
			}
			call := checkToolCall(t, tc.alias, a1)
			// The directive rides in the tool result, the last turn.
			a2, id := streamAll(t, c, secondTurn(first, call, "rain\n@mock "+tc.primary+":status=503"))
			if got := a2.Choices[0].Message.Content; !strings.Contains(got, "tool result received: rain") {
				t.Fatalf("after the fallback: %q", got)
			}
			if rec := h.checkRecord(id, tc.fallback, "success"); rec.Fallbacks != 1 {
				t.Fatalf("fallbacks %d", rec.Fallbacks)
			}
		})
	}
}

// TestToolCallStreamCutAfterFirstDelta: the first tool-call delta is the
// commit point: a cut after it is not retried on the fallback, the stream
// ends with one error event and one [DONE], and the record is partial.
func TestToolCallStreamCutAfterFirstDelta(t *testing.T) {
	h := agentsHarness(t)
	for _, tc := range []struct{ alias, provider string }{{"chat-alpha", "alpha"}, {"chat-beta", "beta"}} {
		t.Run(tc.alias, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"model": tc.alias, "stream": true,
				"messages": []map[string]any{{"role": "user", "content": "weather?\n@mock *:tool=get_weather *:drop_after=1"}},
				"tools": []map[string]any{{"type": "function", "function": map[string]any{"name": "get_weather",
					"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}}})
			r := h.chat(h.keyA, string(body))
			if r.status != http.StatusOK {
				t.Fatalf("%d %s", r.status, r.body)
			}
			var toolDeltas, errorsSeen, done int
			sc := bufio.NewScanner(bytes.NewReader(r.body))
			for sc.Scan() {
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				switch {
				case !ok:
				case data == "[DONE]":
					done++
				case strings.Contains(data, `"error"`):
					errorsSeen++
				case strings.Contains(data, `"tool_calls"`):
					toolDeltas++
				}
			}
			if toolDeltas < 1 || errorsSeen != 1 || done != 1 {
				t.Fatalf("tool deltas %d, error events %d, [DONE] %d:\n%s", toolDeltas, errorsSeen, done, r.body)
			}
			if rec := h.checkRecord(r.header.Get("X-Request-Id"), tc.provider, "partial"); rec.Fallbacks != 0 {
				t.Fatal("fell back after the commit point")
			}
		})
	}
}

// TestImageAndStructuredOutput: an image part (a data URL) and a
// json_schema answer, on an alias of each protocol.
func TestImageAndStructuredOutput(t *testing.T) {
	h := agentsHarness(t)
	c := sdk(h, h.keyA)
	png := "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\nnot really an image"))
	for _, alias := range []string{"chat-alpha", "chat-beta"} {
		t.Run(alias+"/image", func(t *testing.T) {
			text := openai.UserMessage("What is in this picture?")
			with := openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart("What is in this picture?"),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: png}),
			})
			plain, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: alias, Messages: []openai.ChatCompletionMessageParamUnion{text}})
			if err != nil {
				t.Fatal(err)
			}
			img, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: alias, Messages: []openai.ChatCompletionMessageParamUnion{with}})
			if err != nil {
				t.Fatal(err)
			}
			// The mocks count an image as a fixed number of tokens
			// (mockproviders.ImageInputTokens): the provider saw it.
			if img.Usage.PromptTokens <= plain.Usage.PromptTokens {
				t.Fatalf("prompt tokens with the image %d, without %d", img.Usage.PromptTokens, plain.Usage.PromptTokens)
			}
		})
		t.Run(alias+"/json_schema", func(t *testing.T) {
			schema := map[string]any{"type": "object", "required": []string{"city", "temp_c"}, "additionalProperties": false,
				"properties": map[string]any{"city": map[string]any{"type": "string"}, "temp_c": map[string]any{"type": "number"}}}
			a, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model:    alias,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("The weather in Paris as JSON")},
				ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
					JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "weather", Schema: schema, Strict: openai.Bool(true)}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(a.Choices[0].Message.Content), &got); err != nil {
				t.Fatalf("not JSON: %q", a.Choices[0].Message.Content)
			}
			if _, ok := got["city"].(string); !ok {
				t.Fatalf("answer %v lacks the schema's city", got)
			}
			if _, ok := got["temp_c"].(float64); !ok {
				t.Fatalf("answer %v lacks the schema's temp_c", got)
			}
		})
	}
}

// TestJSONObjectNotCarriedByAnthropicRoutes: json_object has no equivalent
// in the Messages protocol: chat-beta's Anthropic route is passed over
// (its fallback answers); an alias with only such routes refuses it,
// naming the parameter and the alias, and records the refusal.
func TestJSONObjectNotCarriedByAnthropicRoutes(t *testing.T) {
	h := newHarness(t, func(s *snapshot.Snapshot) {
		for i := range s.Aliases {
			if s.Aliases[i].Name == "chat-restricted" {
				s.Aliases[i].Primary = snapshot.Route{Provider: "beta", Model: "beta-small"}
			}
		}
	})
	body := `{"model":"%s","messages":[{"role":"user","content":"weather as JSON"}],"response_format":{"type":"json_object"}}`
	r := h.chat(h.keyA, strings.Replace(body, "%s", "chat-beta", 1))
	if r.status != http.StatusOK || r.header.Get("X-Llmgw-Provider") != "alpha" {
		t.Fatalf("chat-beta: %d from %q: %s", r.status, r.header.Get("X-Llmgw-Provider"), r.body)
	}
	if rec := h.record(r.header.Get("X-Request-Id")); rec.Fallbacks != 0 || len(rec.Attempts) != 1 {
		t.Fatalf("the route that cannot carry it was attempted: %+v", rec.Attempts)
	}
	r = h.chat(h.keyA, strings.Replace(body, "%s", "chat-restricted", 1))
	e := r.errorBody(t)
	if r.status != http.StatusBadRequest || e.Error.Code != "unsupported_parameter" ||
		!strings.Contains(e.Error.Message, "response_format") || !strings.Contains(e.Error.Message, `"chat-restricted"`) {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if rec := h.record(r.header.Get("X-Request-Id")); rec.Status != "rejected" || rec.HTTPStatus != 400 || len(rec.Attempts) != 0 {
		t.Fatalf("record %+v", rec)
	}
	if got := mockCalls(t, h.beta); got.Total != 0 {
		t.Fatalf("beta was called %d times", got.Total)
	}
}

// TestEmbeddings: the SDK's embeddings through an alias, float and base64,
// with one record with input tokens and cost; an alias whose routes cannot
// serve embeddings is refused, saying so.
func TestEmbeddings(t *testing.T) {
	h := agentsHarness(t)
	c := sdk(h, h.keyB)
	var hdr *http.Response
	e, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model:      "embed-alpha",
		Input:      openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"the quick brown fox", "jumps"}},
		Dimensions: openai.Int(16),
	}, option.WithResponseInto(&hdr))
	if err != nil {
		t.Fatal(err)
	}
	if e.Model != "embed-alpha" || len(e.Data) != 2 || len(e.Data[0].Embedding) != 16 || e.Usage.PromptTokens == 0 {
		t.Fatalf("answer: model %q, %d vectors, usage %+v", e.Model, len(e.Data), e.Usage)
	}
	rec := h.record(hdr.Header.Get("X-Request-Id"))
	if rec.Status != "success" || rec.InputTokens != int(e.Usage.PromptTokens) || rec.OutputTokens != 0 || rec.Cost == 0 || rec.Stream {
		t.Fatalf("record %+v", rec)
	}

	// base64: little-endian float32s, the same vector.
	raw := h.do(http.MethodPost, "/v1/embeddings", h.keyB, `{"model":"embed-alpha","input":"jumps","dimensions":16,"encoding_format":"base64"}`)
	var b64 struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw.body, &b64); err != nil || len(b64.Data) != 1 {
		t.Fatalf("%d %s", raw.status, raw.body)
	}
	vec, err := base64.StdEncoding.DecodeString(b64.Data[0].Embedding)
	if err != nil || len(vec) != 16*4 {
		t.Fatalf("base64 vector of %d bytes: %v", len(vec), err)
	}
	for i, want := range e.Data[1].Embedding {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(vec[4*i:])); math.Abs(float64(got)-want) > 1e-6 {
			t.Fatalf("component %d: base64 %v, float %v", i, got, want)
		}
	}

	// chat-restricted has one route, to alpha: fine for embeddings. A key
	// without the alias gets 403 as for chat; an alias of Anthropic routes
	// only gets 400.
	h2 := newHarness(t, func(s *snapshot.Snapshot) {
		for i := range s.Aliases {
			if s.Aliases[i].Name == "chat-restricted" {
				s.Aliases[i].Primary = snapshot.Route{Provider: "beta", Model: "beta-small"}
			}
		}
	})
	r := h2.do(http.MethodPost, "/v1/embeddings", h2.keyA, `{"model":"chat-restricted","input":"x"}`)
	if er := r.errorBody(t); r.status != http.StatusBadRequest || er.Error.Code != "unsupported_for_model" || !strings.Contains(er.Error.Message, "embeddings") {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if r := h2.do(http.MethodPost, "/v1/embeddings", h2.keyB, `{"model":"chat-restricted","input":"x"}`); r.status != http.StatusForbidden {
		t.Fatalf("a key without the alias: %d %s", r.status, r.body)
	}
	for body, code := range map[string]string{
		`{"model":"embed-alpha"}`:            "missing_field",
		`{"model":"embed-alpha","input":{}}`: "invalid_type",
		`{"input":"x"}`:                      "missing_field",
	} {
		if r := h2.do(http.MethodPost, "/v1/embeddings", h2.keyA, body); r.status != http.StatusBadRequest || r.errorBody(t).Error.Code != code {
			t.Fatalf("%s: %d %s", body, r.status, r.body)
		}
	}
}
