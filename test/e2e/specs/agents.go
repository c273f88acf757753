package specs

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo DSL
	. "github.com/onsi/gomega"    //nolint:revive // gomega DSL
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	wire "github.com/llmgw/llmgw/api/wire/openai"
	"github.com/llmgw/llmgw/mockproviders"
)

// AgentsTarget is one deployed system as the agents' specs see it: what
// agents send besides plain text (tools and their results, images,
// structured output, embeddings), through an alias of each provider
// protocol, so that one protocol is passed through and the other
// translated both ways.
type AgentsTarget struct {
	Gateway             string // base URL clients use
	MockAlpha, MockBeta string // base URLs of the mocks, for GET /mock/calls

	// Key may use the three aliases below, with a rate limit the specs never
	// reach. The specs find their requests' records by request id, so the
	// key may have records of other specs.
	Key string
	// AlphaAlias has primary alpha/alpha-large (OpenAI protocol: passed
	// through) and a fallback on beta; BetaAlias primary beta/beta-large
	// (Anthropic protocol: translated) and a fallback on alpha. Each may fall
	// back once, so a fallback that must not happen would be seen.
	AlphaAlias, BetaAlias string
	// EmbedAlias has primary alpha/alpha-embed and no fallback.
	EmbedAlias string
	// Marker is a word put in every prompt: it must never be stored or logged.
	Marker string
}

// agentRoute is an alias of one protocol: its primary, the other mock (its
// fallback), and how the primary's answers begin.
type agentRoute struct{ alias, provider, other, says string }

func (t *AgentsTarget) routes() []agentRoute {
	return []agentRoute{{t.AlphaAlias, "alpha", "beta", alphaText}, {t.BetaAlias, "beta", "alpha", betaText}}
}

// mockCalls reads both mocks' counters, by provider name.
func (t *AgentsTarget) mockCalls(ctx context.Context) map[string]mockproviders.Calls {
	GinkgoHelper()
	alpha, beta := callsOf(ctx, &Target{MockAlpha: t.MockAlpha, MockBeta: t.MockBeta})
	return map[string]mockproviders.Calls{"alpha": alpha, "beta": beta}
}

// expectCalls asserts what the mocks counted since before: n calls of
// provider and none of the other mock.
func (t *AgentsTarget) expectCalls(ctx context.Context, before map[string]mockproviders.Calls, provider, other string, n int64, what string) {
	GinkgoHelper()
	after := t.mockCalls(ctx)
	d, o := Diff(before[provider], after[provider]), Diff(before[other], after[other])
	Expect(d.Total).To(Equal(n), "%s: %s calls %s", what, provider, d)
	Expect(o.Total).To(BeZero(), "%s: %s was called: %s", what, other, o)
}

// checkRecords waits until GET /v1/usage with the key lists every request
// of sent exactly once, saying what it must (the key's other records are
// left out), and returns those records by request id.
func (t *AgentsTarget) checkRecords(ctx context.Context, sent *Sent) map[string]Record {
	GinkgoHelper()
	ours := map[string]bool{}
	for _, w := range sent.Wants {
		ours[w.RequestID] = true
	}
	var byID map[string]Record
	Eventually(func(g Gomega) {
		all, err := ListUsage(ctx, t.Gateway, t.Key)
		g.Expect(err).NotTo(HaveOccurred())
		mine := UsageList{Partial: all.Partial, Missing: all.Missing}
		for _, r := range all.Records {
			if ours[r.RequestID] {
				mine.Records = append(mine.Records, r)
			}
		}
		g.Expect(sent.CheckExactlyOne(mine)).To(BeEmpty())
		byID = mine.ByID()
	}).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	return byID
}

// weatherSchema is get_weather's parameters.
var weatherSchema = map[string]any{"type": "object", "required": []string{"city"},
	"properties": map[string]any{"city": map[string]any{"type": "string"}}}

// weatherArgs are the arguments the directive makes the mocks call it with.
const weatherArgs = `{"city":"Paris"}`

// toolDirective asks the mocks to call get_weather with weatherArgs.
const toolDirective = `*:tool=get_weather *:args=` + weatherArgs

// toolCallParams is a first turn that offers get_weather and whose user
// message makes the mocks call it; a stream sends its arguments in three
// pieces and ends with a usage chunk.
func (t *AgentsTarget) toolCallParams(alias string, stream bool) openai.ChatCompletionNewParams {
	directive := toolDirective
	if stream {
		directive += " *:chunks=3"
	}
	p := openai.ChatCompletionNewParams{
		Model: alias,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("You answer with tools"),
			openai.UserMessage(Prompt(t.Marker+" What is the weather in Paris?", directive)),
		},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_weather", Description: openai.String("The weather in a city"), Parameters: weatherSchema})},
	}
	if stream {
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	}
	return p
}

// secondTurn is the conversation after the assistant's call: the call in
// the history, then the tool's result.
func secondTurn(first openai.ChatCompletionNewParams, call openai.ChatCompletionMessage, result string) openai.ChatCompletionNewParams {
	p := first
	p.Messages = append(append([]openai.ChatCompletionMessageParamUnion(nil), first.Messages...),
		call.ToParam(), openai.ToolMessage(result, call.ToolCalls[0].ID))
	return p
}

// agentReply is one chat answer through the SDK, a stream accumulated.
type agentReply struct {
	RequestID, Provider string
	openai.ChatCompletion
}

// chatTurn sends p through the SDK, as JSON or streamed (the chunks
// accumulated into one completion, as an agent's loop does). An HTTP error
// is an error.
func chatTurn(ctx context.Context, c openai.Client, p openai.ChatCompletionNewParams, stream bool) (agentReply, error) {
	var resp *http.Response
	var r agentReply
	header := func() {
		if resp != nil {
			r.RequestID, r.Provider = resp.Header.Get("X-Request-Id"), resp.Header.Get("X-Llmgw-Provider")
		}
	}
	if !stream {
		comp, err := c.Chat.Completions.New(ctx, p, option.WithResponseInto(&resp))
		header()
		if err != nil {
			return r, err
		}
		r.ChatCompletion = *comp
		return r, nil
	}
	s := c.Chat.Completions.NewStreaming(ctx, p, option.WithResponseInto(&resp))
	defer s.Close()
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		ch := s.Current()
		if ch.Model != p.Model {
			return r, fmt.Errorf("a chunk names model %q, not the alias %q", ch.Model, p.Model)
		}
		acc.AddChunk(ch)
	}
	header()
	if err := s.Err(); err != nil {
		return r, fmt.Errorf("stream: %w", err)
	}
	r.ChatCompletion = acc.ChatCompletion
	return r, nil
}

// oneChoice is the answer's only choice.
func oneChoice(r agentReply, what string) openai.ChatCompletionChoice {
	GinkgoHelper()
	Expect(r.Choices).To(HaveLen(1), "%s: request %s", what, r.RequestID)
	return r.Choices[0]
}

// postJSON sends body to path with net/http and reads the whole answer.
func postJSON(ctx context.Context, base, path, key string, body any) (*http.Response, []byte, error) {
	b, err := jsonv2.Marshal(body)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(b))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := HTTP.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp, out, err
}

// float32s decodes a base64 embedding: little-endian float32s.
func float32s(b64 string) ([]float64, error) {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, err
	}
	if len(raw)%4 != 0 {
		return nil, fmt.Errorf("%d bytes is not a whole number of float32s", len(raw))
	}
	v := make([]float64, len(raw)/4)
	for i := range v {
		v[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
	}
	return v, nil
}

// Agents registers the specs of agents' traffic: a tool conversation, an
// image part, a json_schema answer and embeddings through the OpenAI SDK,
// each request's record, and a tool-call stream cut after its first delta.
// Call it inside an Ordered container; target is called when the specs run.
func Agents(target func() *AgentsTarget) {
	var t *AgentsTarget
	BeforeAll(func(ctx SpecContext) {
		t = target()
		for _, alias := range []string{t.AlphaAlias, t.BetaAlias, t.EmbedAlias} {
			Eventually(func() bool { return ServesModel(ctx, t.Gateway, t.Key, alias) }).WithContext(ctx).
				WithTimeout(time.Minute).WithPolling(250*time.Millisecond).Should(BeTrue(), "GET /v1/models lists %s", alias)
		}
	})

	It("carries a two-turn tool conversation (a call of get_weather, then its result), JSON and streamed, on an alias of each protocol", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		c := Client(t.Gateway, t.Key)
		const result = `{"temp_c": 21, "sky": "clear"}`
		var sent Sent
		usage := map[string]openai.CompletionUsage{}
		for _, r := range t.routes() {
			before := t.mockCalls(ctx)
			for _, stream := range []bool{false, true} {
				what := fmt.Sprintf("%s, stream %v", r.alias, stream)
				By(what + ": the first turn calls get_weather")
				first := t.toolCallParams(r.alias, stream)
				a1, err := chatTurn(ctx, c, first, stream)
				Expect(err).NotTo(HaveOccurred(), what)
				sent.Add(Want{RequestID: a1.RequestID, What: what + ", the call", Model: r.alias, Status: "success",
					HTTPStatus: 200, Provider: r.provider, Fallbacks: 0, Stream: stream})
				usage[a1.RequestID] = a1.Usage
				Expect(a1.Provider).To(Equal(r.provider), what)
				Expect(a1.Model).To(Equal(r.alias), "%s: the answer names the alias", what)
				ch := oneChoice(a1, what)
				Expect(ch.FinishReason).To(Equal("tool_calls"), what)
				Expect(ch.Message.Content).To(BeEmpty(), "%s: text beside the call", what)
				Expect(ch.Message.ToolCalls).To(HaveLen(1), what)
				tc := ch.Message.ToolCalls[0]
				Expect(tc.ID).NotTo(BeEmpty(), "%s: the call's id", what)
				Expect(tc.Function.Name).To(Equal("get_weather"), what)
				// The arguments of a stream arrive in pieces: together they
				// are the directive's JSON, compacted by the mock.
				Expect(tc.Function.Arguments).To(MatchJSON(weatherArgs), what)
				Expect(a1.Usage.PromptTokens).To(BeNumerically(">", 0), "%s: usage %+v", what, a1.Usage)
				Expect(a1.Usage.CompletionTokens).To(BeNumerically(">", 0), "%s: usage %+v", what, a1.Usage)

				By(what + ": the second turn sends the call and its result, and gets text")
				a2, err := chatTurn(ctx, c, secondTurn(first, ch.Message, result), stream)
				Expect(err).NotTo(HaveOccurred(), what)
				sent.Add(Want{RequestID: a2.RequestID, What: what + ", the result", Model: r.alias, Status: "success",
					HTTPStatus: 200, Provider: r.provider, Fallbacks: 0, Stream: stream})
				usage[a2.RequestID] = a2.Usage
				Expect(a2.Provider).To(Equal(r.provider), what)
				ch2 := oneChoice(a2, what)
				Expect(ch2.FinishReason).To(Equal("stop"), what)
				Expect(ch2.Message.ToolCalls).To(BeEmpty(), "%s: another call after the result", what)
				// The mock quotes the result it received: the provider got
				// the call and its result, translated or not.
				Expect(ch2.Message.Content).To(HavePrefix(r.says+" tool result received: "+result), what)
				Expect(a2.Usage.PromptTokens).To(BeNumerically(">", a1.Usage.PromptTokens),
					"%s: the second turn's input (with the call and its result) is not larger than the first's", what)
			}
			t.expectCalls(ctx, before, r.provider, r.other, 4, r.alias+" tool conversations")
		}

		By("one record per request, from the alias's primary, with the tokens the answer reported")
		recs := t.checkRecords(ctx, &sent)
		for _, w := range sent.Wants {
			rec, u := recs[w.RequestID], usage[w.RequestID]
			Expect([]int{rec.InputTokens, rec.OutputTokens}).To(Equal([]int{int(u.PromptTokens), int(u.CompletionTokens)}),
				"record of %s (%s): %s; the answer's usage %d/%d", w.RequestID, w.What, rec, u.PromptTokens, u.CompletionTokens)
		}
	})

	It("passes an image part (a data: URL) to the provider of each protocol: the prompt counts the image's tokens", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		c := Client(t.Gateway, t.Key)
		png := "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\nnot really an image"))
		text := t.Marker + " What is in this picture?"
		var sent Sent
		for _, r := range t.routes() {
			before := t.mockCalls(ctx)
			plain, err := chatTurn(ctx, c, openai.ChatCompletionNewParams{Model: r.alias,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}}, false)
			Expect(err).NotTo(HaveOccurred(), r.alias)
			sent.Add(Want{RequestID: plain.RequestID, What: r.alias + " text only", Model: r.alias, Status: "success",
				HTTPStatus: 200, Provider: r.provider, Fallbacks: 0})
			img, err := chatTurn(ctx, c, openai.ChatCompletionNewParams{Model: r.alias,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
					openai.TextContentPart(text),
					openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: png}),
				})}}, false)
			Expect(err).NotTo(HaveOccurred(), r.alias)
			sent.Add(Want{RequestID: img.RequestID, What: r.alias + " text and image", Model: r.alias, Status: "success",
				HTTPStatus: 200, Provider: r.provider, Fallbacks: 0})
			Expect([]string{plain.Provider, img.Provider}).To(Equal([]string{r.provider, r.provider}), r.alias)
			// The mocks count each image as ImageInputTokens and the text
			// part as the same text sent as a string: the provider got the
			// image, and the text once.
			Expect(img.Usage.PromptTokens-plain.Usage.PromptTokens).To(Equal(int64(mockproviders.ImageInputTokens)),
				"%s: prompt tokens with the image %d, without %d", r.alias, img.Usage.PromptTokens, plain.Usage.PromptTokens)
			t.expectCalls(ctx, before, r.provider, r.other, 2, r.alias+" image")
		}
		t.checkRecords(ctx, &sent)
	})

	It("answers response_format json_schema with JSON that has the schema's required properties, on an alias of each protocol", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		c := Client(t.Gateway, t.Key)
		schema := map[string]any{"type": "object", "required": []string{"city", "temp_c"}, "additionalProperties": false,
			"properties": map[string]any{"city": map[string]any{"type": "string"}, "temp_c": map[string]any{"type": "number"},
				"note": map[string]any{"type": "string"}}}
		var sent Sent
		for _, r := range t.routes() {
			a, err := chatTurn(ctx, c, openai.ChatCompletionNewParams{
				Model:    r.alias,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(t.Marker + " The weather in Paris as JSON")},
				ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
					JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "weather", Schema: schema, Strict: openai.Bool(true)}}},
			}, false)
			Expect(err).NotTo(HaveOccurred(), r.alias)
			sent.Add(Want{RequestID: a.RequestID, What: r.alias + " json_schema", Model: r.alias, Status: "success",
				HTTPStatus: 200, Provider: r.provider, Fallbacks: 0})
			Expect(a.Provider).To(Equal(r.provider), r.alias)
			ch := oneChoice(a, r.alias)
			Expect(ch.FinishReason).To(Equal("stop"), r.alias)
			var got map[string]any
			Expect(jsonv2.Unmarshal([]byte(ch.Message.Content), &got)).To(Succeed(), "%s: the answer is not a JSON object: %q", r.alias, ch.Message.Content)
			Expect(got).To(HaveKeyWithValue("city", BeAssignableToTypeOf("")), "%s: %v", r.alias, got)
			Expect(got).To(HaveKeyWithValue("temp_c", BeAssignableToTypeOf(float64(0))), "%s: %v", r.alias, got)
			// Only required properties are filled: the schema reached the
			// mock, which did not merely answer some JSON.
			Expect(got).NotTo(HaveKey("note"), "%s: %v", r.alias, got)
		}
		t.checkRecords(ctx, &sent)
	})

	It("serves embeddings through an alias: vectors of the asked dimensions in order, base64 the same vector, usage and one record", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		c := Client(t.Gateway, t.Key)
		before := t.mockCalls(ctx)
		inputs := []string{t.Marker + " the quick brown fox", "jumps"}
		const dims = 16
		var resp *http.Response
		e, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{
			Model:      openai.EmbeddingModel(t.EmbedAlias),
			Input:      openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: inputs},
			Dimensions: openai.Int(dims),
		}, option.WithResponseInto(&resp))
		Expect(err).NotTo(HaveOccurred())
		var sent Sent
		sent.Add(Want{RequestID: resp.Header.Get("X-Request-Id"), What: "embeddings, float", Model: t.EmbedAlias, Status: "success",
			HTTPStatus: 200, Provider: "alpha", Fallbacks: 0})
		Expect(resp.Header.Get("X-Llmgw-Provider")).To(Equal("alpha"))
		Expect(e.Model).To(Equal(t.EmbedAlias), "the answer names the alias")
		Expect(e.Data).To(HaveLen(len(inputs)))
		for i, d := range e.Data {
			Expect(d.Index).To(Equal(int64(i)), "vectors out of order")
			Expect(d.Embedding).To(HaveLen(dims), "vector %d", i)
		}
		Expect(e.Data[0].Embedding).NotTo(Equal(e.Data[1].Embedding), "two inputs, one vector")
		words := 0
		for _, in := range inputs {
			words += len(strings.Fields(in))
		}
		Expect(e.Usage.PromptTokens).To(Equal(int64(words)), "usage %+v", e.Usage)

		By("encoding_format base64 (net/http): the little-endian float32s of the same vector")
		dimsPtr := dims
		hr, body, err := postJSON(ctx, t.Gateway, "/v1/embeddings", t.Key, wire.EmbeddingRequest{Model: t.EmbedAlias,
			Input: jsontext.Value(`"jumps"`), Dimensions: &dimsPtr, EncodingFormat: wire.EncodingBase64})
		Expect(err).NotTo(HaveOccurred())
		sent.Add(Want{RequestID: hr.Header.Get("X-Request-Id"), What: "embeddings, base64", Model: t.EmbedAlias, Status: "success",
			HTTPStatus: 200, Provider: "alpha", Fallbacks: 0})
		Expect(hr.StatusCode).To(Equal(http.StatusOK), "%.600s", body)
		var b64 wire.EmbeddingResponse
		Expect(jsonv2.Unmarshal(body, &b64)).To(Succeed(), "%.600s", body)
		Expect(b64.Model).To(Equal(t.EmbedAlias))
		Expect(b64.Data).To(HaveLen(1), "%.600s", body)
		var s string
		Expect(jsonv2.Unmarshal(b64.Data[0].Embedding, &s)).To(Succeed(), "the base64 embedding is not a string: %s", b64.Data[0].Embedding)
		vec, err := float32s(s)
		Expect(err).NotTo(HaveOccurred())
		Expect(vec).To(HaveLen(dims))
		for i, want := range e.Data[1].Embedding {
			Expect(vec[i]).To(BeNumerically("~", want, 1e-6), "component %d: base64 and float differ", i)
		}
		t.expectCalls(ctx, before, "alpha", "beta", 2, "embeddings")

		By("one record per request: success through alpha, the input tokens the answer reported, no output")
		recs := t.checkRecords(ctx, &sent)
		rec := recs[sent.Wants[0].RequestID]
		Expect([]int{rec.InputTokens, rec.OutputTokens}).To(Equal([]int{int(e.Usage.PromptTokens), 0}), "%s", rec)
	})

	It("never falls back once a tool call's first delta was sent: one error event, one [DONE], a partial record", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		var sent Sent
		for _, r := range t.routes() {
			what := r.alias + ": tool-call stream cut after its first delta"
			By(what)
			before := t.mockCalls(ctx)
			stream, usage := true, true
			req := wire.ChatCompletionRequest{Model: r.alias, Stream: &stream, StreamOptions: &wire.StreamOptions{IncludeUsage: &usage},
				Messages: []wire.Message{{Role: wire.RoleUser,
					Content: wire.Text(Prompt(t.Marker+" What is the weather in Paris?", toolDirective+" *:chunks=3 *:drop_after=1"))}},
				Tools: []wire.Tool{{Type: "function", Function: &wire.FunctionDef{Name: "get_weather", Parameters: mustJSON(weatherSchema)}}}}
			resp, body, err := postJSON(ctx, t.Gateway, "/v1/chat/completions", t.Key, req)
			Expect(err).NotTo(HaveOccurred(), what)
			raw := Raw{Status: resp.StatusCode, Header: resp.Header, Body: body, SSE: ParseSSE(body)}
			sent.Add(Want{RequestID: raw.RequestID(), What: what, Model: r.alias, Status: "partial",
				HTTPStatus: 200, Provider: r.provider, Fallbacks: 0, Stream: true})
			Expect(raw.Status).To(Equal(http.StatusOK), "%s: %s", what, raw)
			Expect(raw.Provider()).To(Equal(r.provider), what)
			Expect(raw.Header.Get("Content-Type")).To(HavePrefix("text/event-stream"), what)
			Expect(raw.SSE.CheckTerminated()).To(Succeed(), "%s: %s", what, raw)
			Expect(strings.Count(string(body), "data: [DONE]")).To(Equal(1), "%s: %s", what, raw)
			Expect(raw.SSE.Errors).To(HaveLen(1), "%s: %s", what, raw)
			Expect(raw.SSE.Errors[0].Type).To(Equal("stream_error"), what)
			Expect(raw.SSE.Errors[0].Code).To(Equal("upstream_interrupted"), what)
			Expect(raw.SSE.Errors[0].RequestID).To(Equal(raw.RequestID()), what)
			Expect(raw.SSE.Models).To(Equal([]string{r.alias}), what)
			Expect(raw.SSE.Content).To(BeEmpty(), "%s: text in a stream that only calls a tool (a fallback's?)", what)

			By(what + ": the call's first delta reached the client, its arguments did not all")
			var deltas []wire.ToolCallDelta
			for _, d := range raw.SSE.Data {
				var ev wire.ChatCompletionChunk
				if d == "[DONE]" || jsonv2.Unmarshal([]byte(d), &ev) != nil {
					continue
				}
				for _, c := range ev.Choices {
					deltas = append(deltas, c.Delta.ToolCalls...)
				}
			}
			Expect(deltas).NotTo(BeEmpty(), "%s: no tool-call delta before the cut: %s", what, raw)
			Expect(deltas[0].ID).NotTo(BeEmpty(), what)
			Expect(deltas[0].Function.Name).To(Equal("get_weather"), what)
			var args strings.Builder
			for _, d := range deltas {
				args.WriteString(d.Function.Arguments)
			}
			Expect(args.String()).NotTo(Equal(weatherArgs), "%s: the whole call arrived, nothing was cut", what)
			t.expectCalls(ctx, before, r.provider, r.other, 1, what)
		}
		t.checkRecords(ctx, &sent)
	})
}

// mustJSON is v as raw JSON (v is a literal of this file).
func mustJSON(v any) jsontext.Value {
	b, err := jsonv2.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
