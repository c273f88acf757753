package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/llmgw/llmgw/api/snapshot"
)

// POST /v1/responses through the real server and both mocks, with
// openai-go's Responses client: chat-alpha passes the request through to
// the alpha mock, which serves the Responses API itself; chat-beta
// translates it to the Anthropic-protocol mock and back.

func responsesParams(alias, prompt string) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model:           alias,
		Instructions:    openai.String("Be terse"),
		Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)},
		Store:           openai.Bool(false),
		MaxOutputTokens: openai.Int(256),
	}
}

// weatherFunction is the tool the Responses conversations offer.
var weatherFunction = responses.ToolParamOfFunction("get_weather", map[string]any{"type": "object",
	"properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}, false)

// respStreamAll streams a request and returns its response.completed's
// response and the request id.
func respStreamAll(t *testing.T, c openai.Client, p responses.ResponseNewParams) (*responses.Response, string) {
	t.Helper()
	var hdr *http.Response
	s := c.Responses.NewStreaming(context.Background(), p, option.WithResponseInto(&hdr))
	var done *responses.Response
	var deltas strings.Builder
	for s.Next() {
		ev := s.Current()
		switch ev.Type {
		case "response.output_text.delta":
			deltas.WriteString(ev.Delta)
		case "response.completed":
			r := ev.Response
			done = &r
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if done == nil {
		t.Fatal("the stream ended without response.completed")
	}
	if done.OutputText() != deltas.String() {
		t.Fatalf("completed text %q, deltas %q", done.OutputText(), deltas.String())
	}
	return done, hdr.Header.Get("X-Request-Id")
}

// TestResponsesText: a text answer, JSON and streamed, passed through and
// translated; the record says endpoint responses and bills the usage the
// answer reports.
func TestResponsesText(t *testing.T) {
	h := agentsHarness(t)
	c := sdk(h, h.keyA)
	for _, tc := range []struct{ alias, provider, path string }{
		{"chat-alpha", "alpha", "/v1/responses"}, {"chat-beta", "beta", "/v1/messages"},
	} {
		t.Run(tc.alias+"/json", func(t *testing.T) {
			var hdr *http.Response
			r, err := c.Responses.New(context.Background(), responsesParams(tc.alias, "Hello there"), option.WithResponseInto(&hdr))
			if err != nil {
				t.Fatal(err)
			}
			if r.Model != tc.alias || r.Status != "completed" || r.OutputText() == "" {
				t.Fatalf("response %+v", r)
			}
			id := hdr.Header.Get("X-Request-Id")
			rec := h.checkRecord(id, tc.provider, "success")
			if int64(rec.InputTokens) != r.Usage.InputTokens || int64(rec.OutputTokens) != r.Usage.OutputTokens {
				t.Fatalf("record %+v, usage %+v", rec, r.Usage)
			}
			if got := h.record(id).Endpoint; got != "responses" {
				t.Fatalf("record endpoint %q", got)
			}
		})
		t.Run(tc.alias+"/stream", func(t *testing.T) {
			before := mockCalls(t, h.endpointOf(tc.provider)).ByPath[tc.path]
			r, id := respStreamAll(t, c, responsesParams(tc.alias, "Hello there\n@mock *:chunks=4"))
			if r.Model != tc.alias || r.OutputText() == "" {
				t.Fatalf("response %+v", r)
			}
			rec := h.checkRecord(id, tc.provider, "success")
			if int64(rec.OutputTokens) != r.Usage.OutputTokens {
				t.Fatalf("record %+v, usage %+v", rec, r.Usage)
			}
			if after := mockCalls(t, h.endpointOf(tc.provider)).ByPath[tc.path]; after != before+1 {
				t.Fatalf("%s was called %d times at %s", tc.provider, after-before, tc.path)
			}
		})
	}
}

// endpointOf is the mock of a provider name.
func (h *harness) endpointOf(provider string) *endpoint {
	if provider == "beta" {
		return h.beta
	}
	return h.alpha
}

// TestResponsesToolConversation: function_call → function_call_output →
// answer, JSON and streamed, passed through and translated.
func TestResponsesToolConversation(t *testing.T) {
	h := agentsHarness(t)
	c := sdk(h, h.keyA)
	for _, tc := range []struct{ alias, provider string }{{"chat-alpha", "alpha"}, {"chat-beta", "beta"}} {
		for _, stream := range []bool{false, true} {
			name := tc.alias + "/json"
			if stream {
				name = tc.alias + "/stream"
			}
			t.Run(name, func(t *testing.T) {
				first := responsesParams(tc.alias, "What is the weather in Paris?\n@mock *:tool=get_weather *:args={\"city\":\"Paris\"} *:chunks=3")
				first.Tools = []responses.ToolUnionParam{weatherFunction}
				ask := func(p responses.ResponseNewParams) (*responses.Response, string) {
					if stream {
						return respStreamAll(t, c, p)
					}
					var hdr *http.Response
					r, err := c.Responses.New(context.Background(), p, option.WithResponseInto(&hdr))
					if err != nil {
						t.Fatal(err)
					}
					return r, hdr.Header.Get("X-Request-Id")
				}
				r1, id := ask(first)
				var call responses.ResponseFunctionToolCall
				for _, item := range r1.Output {
					if item.Type == "function_call" {
						call = item.AsFunctionCall()
					}
				}
				if call.Name != "get_weather" || call.CallID == "" || !strings.Contains(call.Arguments, "Paris") {
					t.Fatalf("output %+v", r1.Output)
				}
				h.checkRecord(id, tc.provider, "success")
				out := responses.ResponseInputItemParamOfFunctionCallOutput(`{"temp_c": 21}`)
				out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
				second := first
				second.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
					responses.ResponseInputItemParamOfMessage("What is the weather in Paris?", responses.EasyInputMessageRoleUser),
					responses.ResponseInputItemParamOfFunctionCall(call.Arguments, call.CallID, call.Name),
					out,
				}}
				r2, id := ask(second)
				if !strings.Contains(r2.OutputText(), `tool result received: {"temp_c": 21}`) {
					t.Fatalf("second turn %q", r2.OutputText())
				}
				h.checkRecord(id, tc.provider, "success")
			})
		}
	}
}

// TestResponsesKeepsNothing: the gateway stores no responses: a request
// that builds on one is refused, naming the field, before any provider is
// called; a stored response cannot be read.
func TestResponsesKeepsNothing(t *testing.T) {
	h := agentsHarness(t)
	for _, field := range []string{`"previous_response_id":"resp_123"`, `"conversation":"conv_123"`} {
		r := h.do(http.MethodPost, "/v1/responses", h.keyA, `{"model":"chat-alpha","input":"Hi",`+field+`}`)
		e := r.errorBody(t)
		if r.status != http.StatusBadRequest || e.Error.Code != "unsupported_parameter" || !strings.Contains(e.Error.Message, "keeps no responses") {
			t.Fatalf("%d %s", r.status, r.body)
		}
	}
	if n := mockCalls(t, h.alpha).Total + mockCalls(t, h.beta).Total; n != 0 {
		t.Fatalf("providers were called %d times", n)
	}
	r := h.do(http.MethodGet, "/v1/responses/resp_123", h.keyA, "")
	if e := r.errorBody(t); r.status != http.StatusNotFound || e.Error.Code != "response_not_stored" {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

// TestResponsesErrors: the gateway's refusals in OpenAI's shape the SDK
// reads (a budget 429); fallback before the first content across
// protocols; a stream that fails after its first content ends with
// response.failed and a partial record.
func TestResponsesErrors(t *testing.T) {
	h := agentsHarness(t, func(s *snapshot.Snapshot) {
		for i := range s.Keys {
			if s.Keys[i].ID == "key-b" {
				s.Keys[i].Budget = &snapshot.Budget{Amount: "0.000001", Currency: "USD", Period: snapshot.PeriodMonth}
			}
		}
	})
	t.Run("budget", func(t *testing.T) {
		c := sdk(h, h.keyB)
		_, err := c.Responses.New(context.Background(), responsesParams("chat-alpha", "Hello"))
		var ae *openai.Error
		if !errors.As(err, &ae) || ae.StatusCode != http.StatusTooManyRequests || ae.Code != "budget_exceeded" {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("fallback", func(t *testing.T) {
		c := sdk(h, h.keyA)
		r, id := respStreamAll(t, c, responsesParams("chat-alpha", "Hello\n@mock alpha:status=503"))
		if r.OutputText() == "" {
			t.Fatalf("response %+v", r)
		}
		if rec := h.checkRecord(id, "beta", "success"); rec.Fallbacks != 1 {
			t.Fatalf("fallbacks %d", rec.Fallbacks)
		}
	})
	for _, alias := range []string{"chat-alpha", "chat-beta"} {
		t.Run("failed after commit/"+alias, func(t *testing.T) {
			r := h.do(http.MethodPost, "/v1/responses", h.keyA, `{"model":"`+alias+`","stream":true,`+
				`"input":"Hello\n@mock *:chunks=4 *:error_after=2"}`)
			events := string(r.body)
			if r.status != http.StatusOK || strings.Count(events, "event: response.failed\n") != 1 ||
				strings.Contains(events, "response.completed") || strings.Contains(events, "[DONE]") {
				t.Fatalf("%d %s", r.status, events)
			}
			if rec := h.record(r.header.Get("X-Request-Id")); rec.Status != "partial" {
				t.Fatalf("record %s", rec.Status)
			}
		})
	}
}
