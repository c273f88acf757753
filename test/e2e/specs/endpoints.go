package specs

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	jsonv2 "github.com/go-json-experiment/json"
	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo DSL
	. "github.com/onsi/gomega"    //nolint:revive // gomega DSL
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/llmgw/llmgw/api/tokens"
	antwire "github.com/llmgw/llmgw/api/wire/anthropic"
	wire "github.com/llmgw/llmgw/api/wire/openai"
	"github.com/llmgw/llmgw/mockproviders"
)

// EndpointsTarget is what the specs of /v1/messages and /v1/responses
// drive: the agents' target (its key, its alias of each protocol, the
// mocks, the marker) and a key whose budget no request fits in.
type EndpointsTarget struct {
	AgentsTarget
	// BudgetKey may use AlphaAlias and BetaAlias, whose routes are priced,
	// and has a budget smaller than what any request on them may cost: the
	// gateway refuses each of its requests with 429 before a provider is
	// called. The specs find its records by request id.
	BudgetKey string
}

// says is how each mock's answers on the aliases' models begin.
var says = map[string]string{"alpha": alphaText, "beta": betaText}

// providerPaths are the mock paths a request on endpoint may reach at
// provider: beta speaks Anthropic Messages, so it gets /v1/messages passed
// through and /v1/responses translated; alpha gets /v1/messages translated
// to chat completions, and /v1/responses passed through when its
// ProviderEndpoint says responsesAPI (config/samples', on kind) or
// translated to chat completions when it does not (the envtest suite's).
func providerPaths(endpoint, provider string) []string {
	switch {
	case provider == "beta":
		return []string{"/v1/messages"}
	case endpoint == endpointResponses:
		return []string{"/v1/responses", "/v1/chat/completions"}
	default:
		return []string{"/v1/chat/completions"}
	}
}

// pathCalls is how many calls a mock counted on paths between two readings.
func pathCalls(before, after mockproviders.Calls, paths []string) int64 {
	var n int64
	for _, p := range paths {
		n += after.ByPath[p] - before.ByPath[p]
	}
	return n
}

// expectRouteCalls asserts what the mocks counted since before: n calls of
// r's primary, on the paths a request on endpoint reaches there, and none
// of the other mock.
func (t *EndpointsTarget) expectRouteCalls(ctx context.Context, before map[string]mockproviders.Calls, r agentRoute, endpoint string, n int64, what string) {
	GinkgoHelper()
	t.expectCalls(ctx, before, r.provider, r.other, n, what)
	after := t.mockCalls(ctx)
	paths := providerPaths(endpoint, r.provider)
	Expect(pathCalls(before[r.provider], after[r.provider], paths)).To(Equal(n),
		"%s: %s calls on %v; by path before %v, after %v", what, r.provider, paths, before[r.provider].ByPath, after[r.provider].ByPath)
}

// messageParams is a Messages request on alias: a system text and one user
// message (the marker, text, and the directive line if any).
func (t *EndpointsTarget) messageParams(alias, text, directive string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     anthropic.Model(alias),
		MaxTokens: 256,
		System:    []anthropic.TextBlockParam{{Text: "Be terse"}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(Prompt(t.Marker+" "+text, directive)))},
	}
}

// responseParams is a Responses request on alias: instructions and one
// user input (the marker, text, and the directive line if any), stored
// nowhere (the gateway keeps no responses).
func (t *EndpointsTarget) responseParams(alias, text, directive string) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model:           alias,
		Instructions:    openai.String("Be terse"),
		Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String(Prompt(t.Marker+" "+text, directive))},
		Store:           openai.Bool(false),
		MaxOutputTokens: openai.Int(256),
	}
}

// weatherTool is get_weather as a Messages tool.
var weatherTool = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
	Name:        "get_weather",
	Description: anthropic.String("The weather in a city"),
	InputSchema: anthropic.ToolInputSchemaParam{Properties: weatherSchema["properties"], Required: []string{"city"}},
}}

// weatherFunction is get_weather as a Responses function tool.
var weatherFunction = responses.ToolParamOfFunction("get_weather", weatherSchema, false)

// billed is the input and output tokens an answer reported.
type billed struct{ in, out int64 }

// expectBilled asserts that each record counts the tokens its answer reported.
func expectBilled(recs map[string]Record, usage map[string]billed) {
	GinkgoHelper()
	for id, u := range usage {
		rec := recs[id]
		Expect([]int{rec.InputTokens, rec.OutputTokens}).To(Equal([]int{int(u.in), int(u.out)}),
			"record %s: the answer reported %d/%d tokens", rec, u.in, u.out)
	}
}

// Endpoints registers the specs of POST /v1/messages through the official
// Anthropic Go SDK and POST /v1/responses through openai-go's Responses
// client, on an alias of each protocol (passed through on one, translated
// on the other): text, streams, a two-turn tool conversation, an image, a
// budget refusal in each endpoint's own error shape, fallback across
// protocols, a stream that fails after its first content, and exactly one
// record per request with its endpoint and session. Call it inside an
// Ordered container; target is called when the specs run.
func Endpoints(target func() *EndpointsTarget) {
	var (
		t                       *EndpointsTarget
		msgSession, respSession string
		ant, antBudget          anthropic.Client
		oai, oaiBudget          openai.Client
		// all is every request the specs sent with t.Key, for the
		// session listing at the end.
		all Sent
	)
	// add notes a request of t.Key in its spec's list and in all.
	add := func(s *Sent, w Want) {
		s.Add(w)
		all.Add(w)
	}
	BeforeAll(func(ctx SpecContext) {
		t = target()
		for _, key := range []string{t.Key, t.BudgetKey} {
			for _, alias := range []string{t.AlphaAlias, t.BetaAlias} {
				Eventually(func() bool { return ServesModel(ctx, t.Gateway, key, alias) }).WithContext(ctx).
					WithTimeout(time.Minute).WithPolling(250*time.Millisecond).Should(BeTrue(), "GET /v1/models lists %s", alias)
			}
		}
		// Sessions of this run only: the listing by session must find
		// exactly this run's requests.
		run := fmt.Sprintf("%x", time.Now().UnixNano())
		msgSession, respSession = "e2e-claude-"+run, "e2e-codex-"+run
		ant = anthropicClient(t.Gateway, xAPIKey(t.Key), msgSession)
		// The budget key as a Bearer token: the other way Claude Code
		// authenticates (ANTHROPIC_AUTH_TOKEN).
		antBudget = anthropicClient(t.Gateway, bearer(t.BudgetKey), msgSession)
		oai = responsesClient(t.Gateway, t.Key, respSession)
		oaiBudget = responsesClient(t.Gateway, t.BudgetKey, respSession)
	})

	It("answers text on /v1/messages (Anthropic SDK) and /v1/responses (openai-go), JSON and streamed, on an alias of each protocol: the alias as model, the tokens billed, one record with its endpoint and session", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		var sent Sent
		usage := map[string]billed{}
		for _, r := range t.routes() {
			before := t.mockCalls(ctx)
			for _, stream := range []bool{false, true} {
				what := fmt.Sprintf("/v1/messages %s, stream %v", r.alias, stream)
				By(what)
				m, err := messagesTurn(ctx, ant, t.messageParams(r.alias, "Hello there", ""), stream)
				add(&sent, Want{RequestID: m.RequestID, What: what, Model: r.alias, Status: "success", HTTPStatus: 200,
					Provider: r.provider, Fallbacks: 0, Stream: stream, Endpoint: endpointMessages, Session: msgSession})
				Expect(err).NotTo(HaveOccurred(), what)
				Expect(m.RequestID).To(Equal(m.XRequestID), "%s: Request-Id and X-Request-Id", what)
				Expect(m.Provider).To(Equal(r.provider), what)
				Expect(string(m.Model)).To(Equal(r.alias), "%s: the answer names the alias", what)
				Expect(m.StopReason).To(Equal(anthropic.StopReasonEndTurn), what)
				text, blocks := textOf(m.Message)
				Expect(blocks).To(Equal(1), "%s: content %+v", what, m.Content)
				Expect(text).To(HavePrefix(r.says), what)
				Expect(m.Usage.OutputTokens).To(Equal(int64(tokens.Count(text))), "%s: the output tokens are not the text's", what)
				in := m.Usage.InputTokens + m.Usage.CacheReadInputTokens + m.Usage.CacheCreationInputTokens
				Expect(in).To(BeNumerically(">", 0), "%s: usage %+v", what, m.Usage)
				usage[m.RequestID] = billed{in, m.Usage.OutputTokens}
			}
			t.expectRouteCalls(ctx, before, r, endpointMessages, 2, r.alias+" on /v1/messages")

			before = t.mockCalls(ctx)
			for _, stream := range []bool{false, true} {
				what := fmt.Sprintf("/v1/responses %s, stream %v", r.alias, stream)
				By(what)
				a, err := responsesTurn(ctx, oai, t.responseParams(r.alias, "Hello there", ""), stream)
				add(&sent, Want{RequestID: a.RequestID, What: what, Model: r.alias, Status: "success", HTTPStatus: 200,
					Provider: r.provider, Fallbacks: 0, Stream: stream, Endpoint: endpointResponses, Session: respSession})
				Expect(err).NotTo(HaveOccurred(), what)
				Expect(a.Provider).To(Equal(r.provider), what)
				Expect(a.Model).To(Equal(r.alias), "%s: the answer names the alias", what)
				Expect(string(a.Status)).To(Equal("completed"), what)
				text := a.OutputText()
				Expect(text).To(HavePrefix(r.says), what)
				if stream {
					Expect(a.Deltas).To(Equal(text), "%s: the deltas are not the completed response's text", what)
				}
				Expect(a.Usage.OutputTokens).To(Equal(int64(tokens.Count(text))), "%s: the output tokens are not the text's", what)
				Expect(a.Usage.InputTokens).To(BeNumerically(">", 0), "%s: usage %+v", what, a.Usage)
				usage[a.RequestID] = billed{a.Usage.InputTokens, a.Usage.OutputTokens}
			}
			t.expectRouteCalls(ctx, before, r, endpointResponses, 2, r.alias+" on /v1/responses")
		}
		By("one record per request, from the alias's primary, with the tokens the answer reported")
		expectBilled(t.checkRecords(ctx, &sent), usage)
	})

	It("carries a two-turn tool conversation (tool_use then tool_result; function_call then function_call_output), JSON and streamed, on both endpoints and an alias of each protocol", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 3*time.Minute)
		defer cancel()
		const result = `{"temp_c": 21, "sky": "clear"}`
		const ask = "What is the weather in Paris?"
		directive := toolDirective + " *:chunks=3"
		var sent Sent
		usage := map[string]billed{}
		for _, r := range t.routes() {
			before := t.mockCalls(ctx)
			for _, stream := range []bool{false, true} {
				what := fmt.Sprintf("/v1/messages %s, stream %v", r.alias, stream)
				By(what + ": the first turn calls get_weather")
				first := t.messageParams(r.alias, ask, directive)
				first.Tools = []anthropic.ToolUnionParam{weatherTool}
				m1, err := messagesTurn(ctx, ant, first, stream)
				add(&sent, Want{RequestID: m1.RequestID, What: what + ", the call", Model: r.alias, Status: "success", HTTPStatus: 200,
					Provider: r.provider, Fallbacks: 0, Stream: stream, Endpoint: endpointMessages, Session: msgSession})
				Expect(err).NotTo(HaveOccurred(), what)
				Expect(m1.Provider).To(Equal(r.provider), what)
				Expect(string(m1.Model)).To(Equal(r.alias), what)
				Expect(m1.StopReason).To(Equal(anthropic.StopReasonToolUse), "%s: content %+v", what, m1.Content)
				text, _ := textOf(m1.Message)
				Expect(text).To(BeEmpty(), "%s: text beside the call", what)
				uses := toolUses(m1.Message)
				Expect(uses).To(HaveLen(1), "%s: content %+v", what, m1.Content)
				Expect(uses[0].ID).NotTo(BeEmpty(), "%s: the call's id", what)
				Expect(uses[0].Name).To(Equal("get_weather"), what)
				Expect(string(uses[0].Input)).To(MatchJSON(weatherArgs), what)
				in1 := m1.Usage.InputTokens + m1.Usage.CacheReadInputTokens + m1.Usage.CacheCreationInputTokens
				Expect(m1.Usage.OutputTokens).To(BeNumerically(">", 0), "%s: usage %+v", what, m1.Usage)
				usage[m1.RequestID] = billed{in1, m1.Usage.OutputTokens}

				By(what + ": the second turn sends the call and its result, and gets text")
				second := first
				second.Messages = append(append([]anthropic.MessageParam(nil), first.Messages...), m1.ToParam(),
					anthropic.NewUserMessage(anthropic.NewToolResultBlock(uses[0].ID, result, false)))
				m2, err := messagesTurn(ctx, ant, second, stream)
				add(&sent, Want{RequestID: m2.RequestID, What: what + ", the result", Model: r.alias, Status: "success", HTTPStatus: 200,
					Provider: r.provider, Fallbacks: 0, Stream: stream, Endpoint: endpointMessages, Session: msgSession})
				Expect(err).NotTo(HaveOccurred(), what)
				Expect(m2.Provider).To(Equal(r.provider), what)
				Expect(m2.StopReason).To(Equal(anthropic.StopReasonEndTurn), "%s: content %+v", what, m2.Content)
				Expect(toolUses(m2.Message)).To(BeEmpty(), "%s: another call after the result", what)
				text2, _ := textOf(m2.Message)
				// The mock quotes the result it received: the provider got
				// the call and its result, translated or not.
				Expect(text2).To(HavePrefix(r.says+" tool result received: "+result), what)
				in2 := m2.Usage.InputTokens + m2.Usage.CacheReadInputTokens + m2.Usage.CacheCreationInputTokens
				Expect(in2).To(BeNumerically(">", in1), "%s: the second turn's input is not larger than the first's", what)
				usage[m2.RequestID] = billed{in2, m2.Usage.OutputTokens}
			}
			t.expectRouteCalls(ctx, before, r, endpointMessages, 4, r.alias+" tool conversations on /v1/messages")

			before = t.mockCalls(ctx)
			for _, stream := range []bool{false, true} {
				what := fmt.Sprintf("/v1/responses %s, stream %v", r.alias, stream)
				By(what + ": the first turn calls get_weather")
				first := t.responseParams(r.alias, ask, directive)
				first.Tools = []responses.ToolUnionParam{weatherFunction}
				a1, err := responsesTurn(ctx, oai, first, stream)
				add(&sent, Want{RequestID: a1.RequestID, What: what + ", the call", Model: r.alias, Status: "success", HTTPStatus: 200,
					Provider: r.provider, Fallbacks: 0, Stream: stream, Endpoint: endpointResponses, Session: respSession})
				Expect(err).NotTo(HaveOccurred(), what)
				Expect(a1.Provider).To(Equal(r.provider), what)
				Expect(a1.Model).To(Equal(r.alias), what)
				Expect(string(a1.Status)).To(Equal("completed"), what)
				Expect(a1.OutputText()).To(BeEmpty(), "%s: text beside the call", what)
				calls := functionCalls(a1.Response)
				Expect(calls).To(HaveLen(1), "%s: output %s", what, a1.RawJSON())
				call := calls[0]
				Expect(call.CallID).NotTo(BeEmpty(), "%s: the call's id", what)
				Expect(call.Name).To(Equal("get_weather"), what)
				Expect(call.Arguments).To(MatchJSON(weatherArgs), what)
				Expect(a1.Usage.OutputTokens).To(BeNumerically(">", 0), "%s: usage %+v", what, a1.Usage)
				usage[a1.RequestID] = billed{a1.Usage.InputTokens, a1.Usage.OutputTokens}

				By(what + ": the second turn sends the call and its output, and gets text")
				out := responses.ResponseInputItemParamOfFunctionCallOutput(result)
				out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
				second := first
				second.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
					responses.ResponseInputItemParamOfMessage(Prompt(t.Marker+" "+ask, directive), responses.EasyInputMessageRoleUser),
					responses.ResponseInputItemParamOfFunctionCall(call.Arguments, call.CallID, call.Name),
					out,
				}}
				a2, err := responsesTurn(ctx, oai, second, stream)
				add(&sent, Want{RequestID: a2.RequestID, What: what + ", the output", Model: r.alias, Status: "success", HTTPStatus: 200,
					Provider: r.provider, Fallbacks: 0, Stream: stream, Endpoint: endpointResponses, Session: respSession})
				Expect(err).NotTo(HaveOccurred(), what)
				Expect(a2.Provider).To(Equal(r.provider), what)
				Expect(functionCalls(a2.Response)).To(BeEmpty(), "%s: another call after the output", what)
				Expect(a2.OutputText()).To(HavePrefix(r.says+" tool result received: "+result), what)
				Expect(a2.Usage.InputTokens).To(BeNumerically(">", a1.Usage.InputTokens),
					"%s: the second turn's input is not larger than the first's", what)
				usage[a2.RequestID] = billed{a2.Usage.InputTokens, a2.Usage.OutputTokens}
			}
			t.expectRouteCalls(ctx, before, r, endpointResponses, 4, r.alias+" tool conversations on /v1/responses")
		}
		By("one record per request, from the alias's primary, with the tokens the answer reported")
		expectBilled(t.checkRecords(ctx, &sent), usage)
	})

	It("passes an image (a base64 image block; an input_image data URL) to the provider of each protocol: the prompt counts the image's tokens", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		raw := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\nnot really an image"))
		text := t.Marker + " What is in this picture?"
		var sent Sent
		for _, r := range t.routes() {
			before := t.mockCalls(ctx)
			what := "/v1/messages " + r.alias
			By(what)
			var in [2]int64
			for i, blocks := range [][]anthropic.ContentBlockParamUnion{
				{anthropic.NewTextBlock(text)},
				{anthropic.NewTextBlock(text), anthropic.NewImageBlockBase64("image/png", raw)},
			} {
				p := t.messageParams(r.alias, "", "")
				p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(blocks...)}
				m, err := messagesTurn(ctx, ant, p, false)
				add(&sent, Want{RequestID: m.RequestID, What: fmt.Sprintf("%s, %d blocks", what, len(blocks)), Model: r.alias, Status: "success",
					HTTPStatus: 200, Provider: r.provider, Fallbacks: 0, Endpoint: endpointMessages, Session: msgSession})
				Expect(err).NotTo(HaveOccurred(), what)
				Expect(m.Provider).To(Equal(r.provider), what)
				in[i] = m.Usage.InputTokens + m.Usage.CacheReadInputTokens + m.Usage.CacheCreationInputTokens
			}
			// The mocks count each image as ImageInputTokens: the provider
			// got the image, and the text once.
			Expect(in[1]-in[0]).To(Equal(int64(mockproviders.ImageInputTokens)),
				"%s: input tokens with the image %d, without %d", what, in[1], in[0])
			t.expectRouteCalls(ctx, before, r, endpointMessages, 2, what)

			before = t.mockCalls(ctx)
			what = "/v1/responses " + r.alias
			By(what)
			for i, withImage := range []bool{false, true} {
				parts := responses.ResponseInputMessageContentListParam{responses.ResponseInputContentParamOfInputText(text)}
				if withImage {
					parts = append(parts, responses.ResponseInputContentUnionParam{OfInputImage: &responses.ResponseInputImageParam{
						Detail: responses.ResponseInputImageDetailAuto, ImageURL: openai.String("data:image/png;base64," + raw)}})
				}
				p := t.responseParams(r.alias, "", "")
				p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
					responses.ResponseInputItemParamOfMessage(parts, responses.EasyInputMessageRoleUser)}}
				a, err := responsesTurn(ctx, oai, p, false)
				add(&sent, Want{RequestID: a.RequestID, What: fmt.Sprintf("%s, image %v", what, withImage), Model: r.alias, Status: "success",
					HTTPStatus: 200, Provider: r.provider, Fallbacks: 0, Endpoint: endpointResponses, Session: respSession})
				Expect(err).NotTo(HaveOccurred(), what)
				Expect(a.Provider).To(Equal(r.provider), what)
				in[i] = a.Usage.InputTokens
			}
			Expect(in[1]-in[0]).To(Equal(int64(mockproviders.ImageInputTokens)),
				"%s: input tokens with the image %d, without %d", what, in[1], in[0])
			t.expectRouteCalls(ctx, before, r, endpointResponses, 2, what)
		}
		t.checkRecords(ctx, &sent)
	})

	It("refuses a key whose budget has no room with 429 before any provider is called: rate_limit_error in Anthropic's shape, budget_exceeded in OpenAI's, a rejected record each", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		var sent Sent
		before := t.mockCalls(ctx)
		for _, r := range t.routes() {
			for _, stream := range []bool{false, true} {
				what := fmt.Sprintf("/v1/messages %s, stream %v", r.alias, stream)
				By(what)
				_, err := messagesTurn(ctx, antBudget, t.messageParams(r.alias, "Hello", ""), stream)
				var ae *anthropic.Error
				Expect(errors.As(err, &ae)).To(BeTrue(), "%s: not an Anthropic API error: %v", what, err)
				sent.Add(Want{RequestID: ae.RequestID, What: what, Model: r.alias, Status: "rejected", HTTPStatus: http.StatusTooManyRequests,
					Fallbacks: 0, Stream: stream, Endpoint: endpointMessages, Session: msgSession})
				Expect(ae.StatusCode).To(Equal(http.StatusTooManyRequests), "%s: %v", what, err)
				Expect(string(ae.Type())).To(Equal("rate_limit_error"), "%s: %s", what, ae.RawJSON())
				var body antwire.ErrorResponse
				Expect(jsonv2.Unmarshal([]byte(ae.RawJSON()), &body)).To(Succeed(), "%s: %s", what, ae.RawJSON())
				Expect([]string{body.Type, body.Error.Type}).To(Equal([]string{"error", "rate_limit_error"}), "%s: %s", what, ae.RawJSON())
				Expect(body.Error.Message).NotTo(BeEmpty(), "%s: %s", what, ae.RawJSON())
				Expect(ae.RequestID).NotTo(BeEmpty(), "%s: no Request-Id", what)
				Expect(body.RequestID).To(Equal(ae.RequestID), "%s: the body's request_id is not Request-Id", what)
				Expect(ae.Response.Header.Get("X-Request-Id")).To(Equal(ae.RequestID), what)
				Expect(ae.Response.Header.Get("Retry-After")).To(MatchRegexp(`^[1-9][0-9]*$`), "%s: Retry-After", what)

				what = fmt.Sprintf("/v1/responses %s, stream %v", r.alias, stream)
				By(what)
				_, err = responsesTurn(ctx, oaiBudget, t.responseParams(r.alias, "Hello", ""), stream)
				var oe *openai.Error
				Expect(errors.As(err, &oe)).To(BeTrue(), "%s: not an OpenAI API error: %v", what, err)
				id := oe.Response.Header.Get("X-Request-Id")
				sent.Add(Want{RequestID: id, What: what, Model: r.alias, Status: "rejected", HTTPStatus: http.StatusTooManyRequests,
					Fallbacks: 0, Stream: stream, Endpoint: endpointResponses, Session: respSession})
				Expect(oe.StatusCode).To(Equal(http.StatusTooManyRequests), "%s: %v", what, err)
				Expect([]string{oe.Type, oe.Code}).To(Equal([]string{"insufficient_quota", "budget_exceeded"}), "%s: %s", what, oe.RawJSON())
				Expect(oe.Message).NotTo(BeEmpty(), what)
				Expect(oe.Response.Header.Get("Retry-After")).To(MatchRegexp(`^[1-9][0-9]*$`), "%s: Retry-After", what)
			}
		}
		t.expectCalls(ctx, before, "alpha", "beta", 0, "refused requests")

		By("one rejected record per request, under the budget key, with no attempt")
		budget := t.AgentsTarget
		budget.Key = t.BudgetKey
		recs := budget.checkRecords(ctx, &sent)
		for _, w := range sent.Wants {
			rec := recs[w.RequestID]
			Expect(rec.Provider).To(BeEmpty(), "%s (%s): %s", w.What, w.RequestID, rec)
			Expect(rec.Attempts).To(BeEmpty(), "%s (%s): %s", w.What, w.RequestID, rec)
			Expect(rec.ErrorType).To(Equal("insufficient_quota"), "%s (%s): %s", w.What, w.RequestID, rec)
		}
	})

	It("falls back across protocols before the first content: alpha's 503 is answered by beta on the alpha alias and beta's by alpha on the beta alias, on both endpoints, JSON and streamed", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 3*time.Minute)
		defer cancel()
		var sent Sent
		fellBack := map[string]agentRoute{}
		for _, r := range t.routes() {
			for _, endpoint := range []string{endpointMessages, endpointResponses} {
				before := t.mockCalls(ctx)
				for _, stream := range []bool{false, true} {
					what := fmt.Sprintf("/v1/%s %s, stream %v: %s answers 503", endpoint, r.alias, stream, r.provider)
					By(what)
					directive := r.provider + ":status=503"
					var id, provider, model, text string
					if endpoint == endpointMessages {
						m, err := messagesTurn(ctx, ant, t.messageParams(r.alias, "Hello", directive), stream)
						add(&sent, Want{RequestID: m.RequestID, What: what, Model: r.alias, Status: "success", HTTPStatus: 200,
							Provider: r.other, Fallbacks: 1, Stream: stream, Endpoint: endpoint, Session: msgSession})
						Expect(err).NotTo(HaveOccurred(), what)
						Expect(m.StopReason).To(Equal(anthropic.StopReasonEndTurn), what)
						id, provider, model = m.RequestID, m.Provider, string(m.Model)
						text, _ = textOf(m.Message)
					} else {
						a, err := responsesTurn(ctx, oai, t.responseParams(r.alias, "Hello", directive), stream)
						add(&sent, Want{RequestID: a.RequestID, What: what, Model: r.alias, Status: "success", HTTPStatus: 200,
							Provider: r.other, Fallbacks: 1, Stream: stream, Endpoint: endpoint, Session: respSession})
						Expect(err).NotTo(HaveOccurred(), what)
						Expect(string(a.Status)).To(Equal("completed"), what)
						id, provider, model, text = a.RequestID, a.Provider, a.Model, a.OutputText()
					}
					fellBack[id] = r
					Expect(provider).To(Equal(r.other), what)
					Expect(model).To(Equal(r.alias), "%s: the answer names the alias", what)
					// Only the fallback's text: the primary sent none.
					Expect(text).To(HavePrefix(says[r.other]), what)
					Expect(text).NotTo(ContainSubstring(r.says), what)
				}
				after := t.mockCalls(ctx)
				dp, do := Diff(before[r.provider], after[r.provider]), Diff(before[r.other], after[r.other])
				what := fmt.Sprintf("/v1/%s %s", endpoint, r.alias)
				Expect([]any{dp.Total, dp.ByStatus}).To(Equal([]any{int64(2), map[string]int64{"503": 2}}), "%s: %s calls %s", what, r.provider, dp)
				Expect([]any{do.Total, do.ByStatus}).To(Equal([]any{int64(2), map[string]int64{"200": 2}}), "%s: %s calls %s", what, r.other, do)
				Expect(pathCalls(before[r.provider], after[r.provider], providerPaths(endpoint, r.provider))).To(Equal(int64(2)),
					"%s: %s calls by path %v → %v", what, r.provider, before[r.provider].ByPath, after[r.provider].ByPath)
				Expect(pathCalls(before[r.other], after[r.other], providerPaths(endpoint, r.other))).To(Equal(int64(2)),
					"%s: %s calls by path %v → %v", what, r.other, before[r.other].ByPath, after[r.other].ByPath)

				// One success through the primary ends its run of failures:
				// five in a row would open its circuit breaker, and later
				// requests would find it passed over.
				what += ": the primary again"
				var id, provider, session string
				var err error
				if endpoint == endpointMessages {
					var m messagesReply
					m, err = messagesTurn(ctx, ant, t.messageParams(r.alias, "Hello again", ""), false)
					id, provider, session = m.RequestID, m.Provider, msgSession
				} else {
					var a responsesReply
					a, err = responsesTurn(ctx, oai, t.responseParams(r.alias, "Hello again", ""), false)
					id, provider, session = a.RequestID, a.Provider, respSession
				}
				add(&sent, Want{RequestID: id, What: what, Model: r.alias, Status: "success", HTTPStatus: 200,
					Provider: r.provider, Fallbacks: 0, Endpoint: endpoint, Session: session})
				Expect(err).NotTo(HaveOccurred(), what)
				Expect(provider).To(Equal(r.provider), what)
			}
		}

		By("one record per request: success from the fallback, fallbacks 1, the primary's 503 its first attempt")
		recs := t.checkRecords(ctx, &sent)
		for id, r := range fellBack {
			rec := recs[id]
			Expect(rec.Attempts).To(HaveLen(2), "record %s", rec)
			Expect([]any{rec.Attempts[0].Provider, rec.Attempts[0].StatusCode}).To(Equal([]any{r.provider, http.StatusServiceUnavailable}), "record %s", rec)
			Expect(rec.Attempts[1].Provider).To(Equal(r.other), "record %s", rec)
		}
	})

	It("never falls back once a stream's first content was sent: one Anthropic error event or one response.failed ends it, and its record is partial", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		var sent Sent
		relayed := map[string]string{} // request id → the text the client got
		// The gateway's error event for an OpenAI provider's failure; an
		// Anthropic provider's own event (the mock's) passes through.
		errType := map[string]string{"alpha": "api_error", "beta": "overloaded_error"}
		const directive = "*:chunks=4 *:error_after=2"
		stream, store, maxTokens := true, false, 256
		for _, r := range t.routes() {
			what := "/v1/messages " + r.alias + ": an error after 2 of 4 pieces"
			By(what)
			before := t.mockCalls(ctx)
			resp, body, err := postRaw(ctx, t.Gateway, "/v1/messages",
				http.Header{"X-Api-Key": {t.Key}, "Anthropic-Version": {"2023-06-01"}, claudeSessionHeader: {msgSession}},
				antwire.MessagesRequest{Model: r.alias, MaxTokens: &maxTokens, Stream: true, Messages: []antwire.Message{
					{Role: antwire.RoleUser, Content: antwire.Text(Prompt(t.Marker+" Tell me about rivers.", directive))}}})
			Expect(err).NotTo(HaveOccurred(), what)
			id := resp.Header.Get("Request-Id")
			add(&sent, Want{RequestID: id, What: what, Model: r.alias, Status: "partial", HTTPStatus: 200,
				Provider: r.provider, Fallbacks: 0, Stream: true, Endpoint: endpointMessages, Session: msgSession})
			Expect(resp.StatusCode).To(Equal(http.StatusOK), "%s: %.600s", what, body)
			Expect(resp.Header.Get("Content-Type")).To(HavePrefix("text/event-stream"), what)
			Expect(resp.Header.Get("X-Llmgw-Provider")).To(Equal(r.provider), what)
			evs := parseEvents(body)
			names := eventNames(evs)
			Expect(names[antwire.EventError]).To(Equal(1), "%s: %s", what, body)
			Expect(names[antwire.EventMessageStop]).To(BeZero(), "%s: %s", what, body)
			Expect(evs[len(evs)-1].Name).To(Equal(antwire.EventError), "%s: the error event is not the last: %s", what, body)
			Expect(string(body)).NotTo(ContainSubstring("[DONE]"), what)
			var e antwire.ErrorResponse
			Expect(jsonv2.Unmarshal([]byte(evs[len(evs)-1].Data), &e)).To(Succeed(), what)
			Expect([]string{e.Type, e.Error.Type}).To(Equal([]string{"error", errType[r.provider]}), "%s: %s", what, evs[len(evs)-1].Data)
			var text strings.Builder
			for _, ev := range evs {
				switch ev.Name {
				case antwire.EventMessageStart:
					var s antwire.MessageStart
					Expect(jsonv2.Unmarshal([]byte(ev.Data), &s)).To(Succeed(), what)
					Expect(s.Message.Model).To(Equal(r.alias), what)
				case antwire.EventContentBlockDelta:
					var d antwire.ContentBlockDelta
					Expect(jsonv2.Unmarshal([]byte(ev.Data), &d)).To(Succeed(), what)
					text.WriteString(d.Delta.Text)
				}
			}
			Expect(text.String()).To(HavePrefix(r.says), "%s: the content before the error", what)
			relayed[id] = text.String()
			t.expectRouteCalls(ctx, before, r, endpointMessages, 1, what)

			what = "/v1/responses " + r.alias + ": an error after 2 of 4 pieces"
			By(what)
			before = t.mockCalls(ctx)
			resp, body, err = postRaw(ctx, t.Gateway, "/v1/responses",
				http.Header{"Authorization": {"Bearer " + t.Key}, codexSessionHeader: {respSession}},
				wire.ResponsesRequest{Model: r.alias, Input: wire.Text(Prompt(t.Marker+" Tell me about rivers.", directive)),
					MaxOutputTokens: &maxTokens, Stream: &stream, Store: &store})
			Expect(err).NotTo(HaveOccurred(), what)
			id = resp.Header.Get("X-Request-Id")
			add(&sent, Want{RequestID: id, What: what, Model: r.alias, Status: "partial", HTTPStatus: 200,
				Provider: r.provider, Fallbacks: 0, Stream: true, Endpoint: endpointResponses, Session: respSession})
			Expect(resp.StatusCode).To(Equal(http.StatusOK), "%s: %.600s", what, body)
			Expect(resp.Header.Get("Content-Type")).To(HavePrefix("text/event-stream"), what)
			Expect(resp.Header.Get("X-Llmgw-Provider")).To(Equal(r.provider), what)
			evs = parseEvents(body)
			names = eventNames(evs)
			Expect(names[wire.EventResponseFailed]).To(Equal(1), "%s: %s", what, body)
			Expect(names[wire.EventResponseCompleted]).To(BeZero(), "%s: %s", what, body)
			Expect(evs[len(evs)-1].Name).To(Equal(wire.EventResponseFailed), "%s: response.failed is not the last event: %s", what, body)
			Expect(string(body)).NotTo(ContainSubstring("[DONE]"), what)
			var failed wire.ResponseEvent
			Expect(jsonv2.Unmarshal([]byte(evs[len(evs)-1].Data), &failed)).To(Succeed(), what)
			Expect([]string{failed.Response.Status, failed.Response.Model}).To(Equal([]string{wire.ResponseStatusFailed, r.alias}), what)
			Expect(failed.Response.Error).NotTo(BeNil(), "%s: response.failed without an error: %s", what, evs[len(evs)-1].Data)
			text.Reset()
			for _, ev := range evs {
				if ev.Name == wire.EventOutputTextDelta {
					var d wire.OutputTextEvent
					Expect(jsonv2.Unmarshal([]byte(ev.Data), &d)).To(Succeed(), what)
					if d.Delta != nil {
						text.WriteString(*d.Delta)
					}
				}
			}
			Expect(text.String()).To(HavePrefix(r.says), "%s: the content before the failure", what)
			relayed[id] = text.String()
			t.expectRouteCalls(ctx, before, r, endpointResponses, 1, what)

			// One success through the primary ends its run of failures
			// (the circuit breaker's count).
			what = "/v1/messages " + r.alias + ": the primary again"
			m, err := messagesTurn(ctx, ant, t.messageParams(r.alias, "Hello again", ""), false)
			add(&sent, Want{RequestID: m.RequestID, What: what, Model: r.alias, Status: "success", HTTPStatus: 200,
				Provider: r.provider, Fallbacks: 0, Endpoint: endpointMessages, Session: msgSession})
			Expect(err).NotTo(HaveOccurred(), what)
		}

		By("one partial record per cut stream, counting only the output the client got")
		recs := t.checkRecords(ctx, &sent)
		for id, text := range relayed {
			Expect(recs[id].OutputTokens).To(Equal(tokens.Count(text)), "record %s: the client got %q", recs[id], text)
		}
	})

	It("lists an agent session's records by endpoint: GET /v1/usage?session= and &endpoint=", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, time.Minute)
		defer cancel()
		idsOf := func(endpoint string) []string {
			var ids []string
			for _, w := range all.Wants {
				if w.Endpoint == endpoint {
					ids = append(ids, w.RequestID)
				}
			}
			return ids
		}
		for _, c := range []struct{ session, endpoint, other string }{
			{msgSession, endpointMessages, endpointResponses},
			{respSession, endpointResponses, endpointMessages},
		} {
			want := idsOf(c.endpoint)
			Expect(want).NotTo(BeEmpty(), "the specs sent no request on %s", c.endpoint)
			for _, q := range []url.Values{
				{"session": {c.session}},
				{"session": {c.session}, "endpoint": {c.endpoint}},
			} {
				Eventually(func(g Gomega) {
					p, err := filteredUsage(ctx, t.Gateway, t.Key, q)
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect([]bool{p.Partial, p.HasMore}).To(Equal([]bool{false, false}), "partial, has_more of ?%s", q.Encode())
					var got []string
					for _, rec := range p.Data {
						got = append(got, rec.RequestID)
						g.Expect([]string{rec.Endpoint, rec.Session}).To(Equal([]string{c.endpoint, c.session}), "?%s: %s", q.Encode(), rec)
					}
					g.Expect(got).To(ConsistOf(want), "?%s", q.Encode())
				}).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
			}
			q := url.Values{"session": {c.session}, "endpoint": {c.other}}
			p, err := filteredUsage(ctx, t.Gateway, t.Key, q)
			Expect(err).NotTo(HaveOccurred())
			Expect(p.Data).To(BeEmpty(), "?%s lists records of another endpoint", q.Encode())
		}
	})
}
