package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/tokens"
	"github.com/llmgw/llmgw/gateway/server"
)

// POST /v1/messages through the real server and both mocks, with the
// official Anthropic Go SDK as the client: chat-beta passes the request
// through to the Anthropic-protocol mock, chat-alpha translates it to the
// OpenAI-protocol mock and back.

// antSDK is an Anthropic client of the gateway, authenticated with key in
// x-api-key, as Claude Code's ANTHROPIC_API_KEY sends it (this SDK's own
// WithAPIKey sends a Bearer token; "bearer token" below covers that).
func antSDK(h *harness, key string, opts ...option.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]option.RequestOption{option.WithBaseURL(h.gw.URL),
		option.WithHeader("X-Api-Key", key), option.WithMaxRetries(0)}, opts...)...)
}

// weatherToolParam is the tool the Messages conversations offer.
var weatherToolParam = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
	Name:        "get_weather",
	Description: anthropic.String("The weather in a city"),
	InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}},
		Required: []string{"city"}},
}}

func messagesParams(alias, prompt string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     anthropic.Model(alias),
		MaxTokens: 256,
		System:    []anthropic.TextBlockParam{{Text: "Be terse"}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
	}
}

// TestMessagesText: a text answer, JSON and streamed, on an alias of each
// protocol; the answer's model is the alias, its usage the record's, and
// the record says endpoint messages.
func TestMessagesText(t *testing.T) {
	h := agentsHarness(t)
	c := antSDK(h, h.keyA)
	ctx := context.Background()
	for _, tc := range []struct{ alias, provider string }{{"chat-beta", "beta"}, {"chat-alpha", "alpha"}} {
		t.Run(tc.alias+"/json", func(t *testing.T) {
			var hdr *http.Response
			m, err := c.Messages.New(ctx, messagesParams(tc.alias, "Hello there"), option.WithResponseInto(&hdr))
			if err != nil {
				t.Fatal(err)
			}
			if string(m.Model) != tc.alias || m.StopReason != anthropic.StopReasonEndTurn || len(m.Content) != 1 || m.Content[0].Text == "" {
				t.Fatalf("message %+v", m)
			}
			id := hdr.Header.Get("Request-Id")
			if id == "" || id != hdr.Header.Get("X-Request-Id") {
				t.Fatalf("request id %q / %q", id, hdr.Header.Get("X-Request-Id"))
			}
			rec := h.checkRecord(id, tc.provider, "success")
			if int64(rec.OutputTokens) != m.Usage.OutputTokens || int64(rec.InputTokens) != m.Usage.InputTokens+m.Usage.CacheReadInputTokens+m.Usage.CacheCreationInputTokens {
				t.Fatalf("record %+v, usage %+v", rec, m.Usage)
			}
			if r := h.record(id); r.Endpoint != "messages" || r.Stream {
				t.Fatalf("record endpoint %q stream %v", r.Endpoint, r.Stream)
			}
		})
		t.Run(tc.alias+"/stream", func(t *testing.T) {
			m, id := antStreamAll(t, c, messagesParams(tc.alias, "Hello there\n@mock *:chunks=4"))
			if string(m.Model) != tc.alias || m.StopReason != anthropic.StopReasonEndTurn || len(m.Content) != 1 || m.Content[0].Text == "" {
				t.Fatalf("message %+v", m)
			}
			rec := h.checkRecord(id, tc.provider, "success")
			if int64(rec.OutputTokens) != m.Usage.OutputTokens || m.Usage.OutputTokens != int64(tokens.Count(m.Content[0].Text)) {
				t.Fatalf("record %+v, usage %+v, text %q", rec, m.Usage, m.Content[0].Text)
			}
		})
	}
}

// antStreamAll streams a request and accumulates the message; the request
// id comes from the response headers.
func antStreamAll(t *testing.T, c anthropic.Client, p anthropic.MessageNewParams) (*anthropic.Message, string) {
	t.Helper()
	var hdr *http.Response
	s := c.Messages.NewStreaming(context.Background(), p, option.WithResponseInto(&hdr))
	var m anthropic.Message
	for s.Next() {
		if err := m.Accumulate(s.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return &m, hdr.Header.Get("Request-Id")
}

// TestMessagesToolConversation: tool_use → tool_result → answer, JSON and
// streamed, on an alias of each protocol.
func TestMessagesToolConversation(t *testing.T) {
	h := agentsHarness(t)
	c := antSDK(h, h.keyA)
	ctx := context.Background()
	for _, tc := range []struct{ alias, provider string }{{"chat-beta", "beta"}, {"chat-alpha", "alpha"}} {
		for _, stream := range []bool{false, true} {
			name := tc.alias + "/json"
			if stream {
				name = tc.alias + "/stream"
			}
			t.Run(name, func(t *testing.T) {
				first := messagesParams(tc.alias, "What is the weather in Paris?\n@mock *:tool=get_weather *:args={\"city\":\"Paris\"} *:chunks=3")
				first.Tools = []anthropic.ToolUnionParam{weatherToolParam}
				ask := func(p anthropic.MessageNewParams) (*anthropic.Message, string) {
					if stream {
						return antStreamAll(t, c, p)
					}
					var hdr *http.Response
					m, err := c.Messages.New(ctx, p, option.WithResponseInto(&hdr))
					if err != nil {
						t.Fatal(err)
					}
					return m, hdr.Header.Get("Request-Id")
				}
				m1, id := ask(first)
				if m1.StopReason != anthropic.StopReasonToolUse {
					t.Fatalf("stop reason %q, content %+v", m1.StopReason, m1.Content)
				}
				var use anthropic.ContentBlockUnion
				for _, b := range m1.Content {
					if b.Type == "tool_use" {
						use = b
					}
				}
				var args map[string]any
				if use.Name != "get_weather" || use.ID == "" || json.Unmarshal(use.Input, &args) != nil || args["city"] != "Paris" {
					t.Fatalf("tool use %+v", use)
				}
				h.checkRecord(id, tc.provider, "success")
				second := first
				second.Messages = append(append([]anthropic.MessageParam(nil), first.Messages...), m1.ToParam(),
					anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, `{"temp_c": 21}`, false)))
				m2, id := ask(second)
				if m2.StopReason != anthropic.StopReasonEndTurn || len(m2.Content) == 0 ||
					!strings.Contains(m2.Content[0].Text, `tool result received: {"temp_c": 21}`) {
					t.Fatalf("second turn %+v", m2)
				}
				h.checkRecord(id, tc.provider, "success")
			})
		}
	}
}

// TestMessagesImage: an image block reaches either protocol's mock, which
// bills it.
func TestMessagesImage(t *testing.T) {
	h := agentsHarness(t)
	c := antSDK(h, h.keyA)
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\nnot really an image"))
	for _, tc := range []struct{ alias, provider string }{{"chat-beta", "beta"}, {"chat-alpha", "alpha"}} {
		t.Run(tc.alias, func(t *testing.T) {
			p := messagesParams(tc.alias, "")
			p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is this?"),
				anthropic.NewImageBlockBase64("image/png", png))}
			var hdr *http.Response
			m, err := c.Messages.New(context.Background(), p, option.WithResponseInto(&hdr))
			if err != nil {
				t.Fatal(err)
			}
			text := messagesParams(tc.alias, "What is this?")
			m0, err := c.Messages.New(context.Background(), text)
			if err != nil {
				t.Fatal(err)
			}
			in := m.Usage.InputTokens + m.Usage.CacheReadInputTokens
			if in <= m0.Usage.InputTokens+m0.Usage.CacheReadInputTokens {
				t.Fatalf("with the image %d input tokens, without %d", in, m0.Usage.InputTokens)
			}
			h.checkRecord(hdr.Header.Get("Request-Id"), tc.provider, "success")
		})
	}
}

// TestMessagesErrorsInAnthropicShape: the gateway's own refusals (a key's
// budget, a model the key may not use, a bad key, a missing max_tokens)
// are Anthropic errors the SDK reads, with the status and retry-after
// Anthropic's API would send, and the request id in request-id.
func TestMessagesErrorsInAnthropicShape(t *testing.T) {
	h := agentsHarness(t, func(s *snapshot.Snapshot) {
		for i := range s.Keys {
			if s.Keys[i].ID == "key-b" {
				s.Keys[i].Budget = &snapshot.Budget{Amount: "0.000001", Currency: "USD", Period: snapshot.PeriodMonth}
			}
		}
	})
	ctx := context.Background()
	check := func(t *testing.T, err error, status int, typ string) {
		t.Helper()
		var ae *anthropic.Error
		if !errors.As(err, &ae) || ae.StatusCode != status {
			t.Fatalf("error %v, want status %d", err, status)
		}
		var body struct {
			Type  string `json:"type"`
			Error struct {
				Type, Message string
			} `json:"error"`
			RequestID string `json:"request_id"`
		}
		if json.Unmarshal([]byte(ae.RawJSON()), &body) != nil || body.Type != "error" || body.Error.Type != typ ||
			body.Error.Message == "" || body.RequestID == "" || ae.Response.Header.Get("Request-Id") != body.RequestID {
			t.Fatalf("body %s, headers %v", ae.RawJSON(), ae.Response.Header)
		}
	}
	t.Run("budget", func(t *testing.T) {
		// The budget has no room for what the request may cost.
		c := antSDK(h, h.keyB)
		_, err := c.Messages.New(ctx, messagesParams("chat-beta", "Hello"))
		check(t, err, http.StatusTooManyRequests, "rate_limit_error")
	})
	t.Run("model not allowed", func(t *testing.T) {
		c := antSDK(h, h.keyB)
		_, err := c.Messages.New(ctx, messagesParams("chat-restricted", "Hello"))
		check(t, err, http.StatusForbidden, "permission_error")
	})
	t.Run("bad key", func(t *testing.T) {
		c := antSDK(h, "llmgw-not-a-key")
		_, err := c.Messages.New(ctx, messagesParams("chat-beta", "Hello"))
		check(t, err, http.StatusUnauthorized, "authentication_error")
	})
	t.Run("bearer token", func(t *testing.T) {
		// ANTHROPIC_AUTH_TOKEN: the key as a Bearer token instead.
		c := anthropic.NewClient(option.WithBaseURL(h.gw.URL), option.WithAuthToken(h.keyA), option.WithMaxRetries(0))
		if _, err := c.Messages.New(ctx, messagesParams("chat-beta", "Hello")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("max_tokens missing", func(t *testing.T) {
		r := h.postMessages(h.keyA, `{"model":"chat-beta","messages":[{"role":"user","content":"Hi"}]}`, nil)
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), `"type":"invalid_request_error"`) ||
			r.header.Get("X-Llmgw-Error-Code") != "missing_field" {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
}

// TestMessagesProviderErrorsUnmodified: an Anthropic provider's refusal
// reaches an Anthropic caller as the provider wrote it; the same refusal
// from an OpenAI provider is the gateway's, in Anthropic's shape.
func TestMessagesProviderErrorsUnmodified(t *testing.T) {
	h := agentsHarness(t)
	// The mock's 400 is not a fallback case: the primary's answer is final.
	const ask = `{"model":%q,"max_tokens":50,"messages":[{"role":"user","content":"Hi\n@mock *:status=400"}]}`
	got := h.postMessages(h.keyA, fmt.Sprintf(ask, "chat-beta"), nil)
	want := postTo(t, h.beta.URL+"/v1/messages", http.Header{"X-Api-Key": {betaSecret}}, fmt.Sprintf(ask, "beta-large"))
	if got.status != want.status || strings.TrimSpace(string(got.body)) != strings.TrimSpace(string(want.body)) {
		t.Fatalf("gateway %d %s\nprovider %d %s", got.status, got.body, want.status, want.body)
	}
	// A provider's 401 is about the gateway's credential: the gateway's
	// own error, not the provider's, which would send the caller after its
	// key.
	const denied = `{"model":"chat-beta","max_tokens":50,"messages":[{"role":"user","content":"Hi\n@mock beta:status=401"}]}`
	if r := h.postMessages(h.keyA, denied, nil); r.status != http.StatusBadGateway || r.header.Get("X-Llmgw-Provider") != "beta" ||
		r.header.Get("X-Llmgw-Error-Code") != "upstream_auth_failed" || !strings.Contains(string(r.body), `"type":"api_error"`) {
		t.Fatalf("provider 401: %d %s", r.status, r.body)
	}
	alpha := h.postMessages(h.keyA, fmt.Sprintf(ask, "chat-alpha"), nil)
	if alpha.status != http.StatusBadRequest || !strings.Contains(string(alpha.body), `"type":"error"`) ||
		!strings.Contains(string(alpha.body), "alpha") {
		t.Fatalf("%d %s", alpha.status, alpha.body)
	}
}

// TestMessagesHeadersForwarded: anthropic-version and anthropic-beta reach
// an Anthropic provider, and no other header of the caller's (its gateway
// key least of all); Claude Code's session id lands on the record.
func TestMessagesHeadersForwarded(t *testing.T) {
	got := make(chan http.Header, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"}],`+
			`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}`)
	}))
	defer up.Close()
	d := startDirect(t, up.URL, server.Options{}, func(s *snapshot.Snapshot) {
		s.Providers[0].Protocol = snapshot.ProtocolAnthropic
	})
	r := postTo(t, d.url+"/v1/messages", http.Header{
		"X-Api-Key":                {d.key},
		"Anthropic-Version":        {"2023-06-01"},
		"Anthropic-Beta":           {"context-management-2025-06-27,interleaved-thinking-2025-05-14"},
		"X-Claude-Code-Session-Id": {"3f1c2a9e-session"},
		"X-Secret-Of-The-Caller":   {"do-not-forward"},
	}, `{"model":"chat","max_tokens":50,"messages":[{"role":"user","content":"Hi"}]}`)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"model":"chat"`) {
		t.Fatalf("%d %s", r.status, r.body)
	}
	h := <-got
	if h.Get("Anthropic-Beta") != "context-management-2025-06-27,interleaved-thinking-2025-05-14" ||
		h.Get("Anthropic-Version") != "2023-06-01" || h.Get("X-Secret-Of-The-Caller") != "" ||
		strings.Contains(fmt.Sprint(h), d.key) {
		t.Fatalf("the provider got headers %v", h)
	}
	rec, err := d.ledger.Get(t.Context(), r.header.Get("Request-Id"))
	if err != nil || rec.Session != "3f1c2a9e-session" || rec.Endpoint != "messages" {
		t.Fatalf("record %+v: %v", rec, err)
	}
}

// TestCountTokens: an Anthropic provider counts; an OpenAI one cannot, and
// the gateway counts. Neither is recorded.
func TestCountTokens(t *testing.T) {
	h := agentsHarness(t)
	c := antSDK(h, h.keyA)
	before := h.usageCount(h.keyA)
	for _, alias := range []string{"chat-beta", "chat-alpha"} {
		n, err := c.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{
			Model:    anthropic.Model(alias),
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("How many tokens is this?"))},
		})
		if err != nil {
			t.Fatal(err)
		}
		if n.InputTokens < int64(tokens.Count("How many tokens is this?")) {
			t.Fatalf("%s: %d input tokens", alias, n.InputTokens)
		}
	}
	if after := h.usageCount(h.keyA); after != before {
		t.Fatalf("count_tokens left %d records", after-before)
	}
	// The beta mock counted chat-beta's; chat-alpha's was the gateway's.
	if n := mockCalls(t, h.beta).ByPath["/v1/messages/count_tokens"]; n != 1 {
		t.Fatalf("beta counted %d times", n)
	}
	if n := mockCalls(t, h.alpha).Total; n != 0 {
		t.Fatalf("alpha was called %d times", n)
	}
}

// TestMessagesFallbackAcrossProtocols: a primary that fails before its
// first content hands the request to the fallback of the other protocol,
// translated there, streamed and not.
func TestMessagesFallbackAcrossProtocols(t *testing.T) {
	h := agentsHarness(t)
	c := antSDK(h, h.keyA)
	for _, tc := range []struct{ alias, primary, fallback string }{{"chat-beta", "beta", "alpha"}, {"chat-alpha", "alpha", "beta"}} {
		t.Run(tc.alias, func(t *testing.T) {
			p := messagesParams(tc.alias, "Hello\n@mock "+tc.primary+":status=503")
			var hdr *http.Response
			m, err := c.Messages.New(context.Background(), p, option.WithResponseInto(&hdr))
			if err != nil {
				t.Fatal(err)
			}
			if string(m.Model) != tc.alias || m.Content[0].Text == "" {
				t.Fatalf("message %+v", m)
			}
			if rec := h.checkRecord(hdr.Header.Get("Request-Id"), tc.fallback, "success"); rec.Fallbacks != 1 {
				t.Fatalf("fallbacks %d", rec.Fallbacks)
			}
			m, id := antStreamAll(t, c, p)
			if m.Content[0].Text == "" || m.StopReason != anthropic.StopReasonEndTurn {
				t.Fatalf("streamed message %+v", m)
			}
			if rec := h.checkRecord(id, tc.fallback, "success"); rec.Fallbacks != 1 {
				t.Fatalf("fallbacks %d", rec.Fallbacks)
			}
		})
	}
}

// TestMessagesStreamErrorAfterCommit: a stream that fails after its first
// content ends with one Anthropic error event (no message_stop, no
// [DONE]); an Anthropic provider's own error event reaches the caller as
// the provider typed it. The record is partial.
func TestMessagesStreamErrorAfterCommit(t *testing.T) {
	h := agentsHarness(t)
	for _, tc := range []struct{ alias, provider, errType string }{
		{"chat-beta", "beta", "overloaded_error"}, // the mock's own error event, passed through
		{"chat-alpha", "alpha", "api_error"},      // the gateway's, for an OpenAI provider's
	} {
		t.Run(tc.alias, func(t *testing.T) {
			r := h.postMessages(h.keyA, `{"model":"`+tc.alias+`","max_tokens":50,"stream":true,`+
				`"messages":[{"role":"user","content":"Hello\n@mock *:chunks=4 *:error_after=2"}]}`, nil)
			events := string(r.body)
			if r.status != http.StatusOK || strings.Count(events, "event: error\n") != 1 ||
				!strings.Contains(events, `"type":"`+tc.errType+`"`) || strings.Contains(events, "message_stop") ||
				strings.Contains(events, "[DONE]") || !strings.HasSuffix(events, "\n\n") {
				t.Fatalf("%d %s", r.status, events)
			}
			if rec := h.record(r.header.Get("Request-Id")); rec.Status != "partial" || rec.Provider != tc.provider {
				t.Fatalf("record %s from %s", rec.Status, rec.Provider)
			}
		})
	}
}

// TestModelsForAnthropicClients: an Anthropic client (anthropic-version)
// lists the key's aliases in Anthropic's format, and reads one.
func TestModelsForAnthropicClients(t *testing.T) {
	h := agentsHarness(t)
	c := antSDK(h, h.keyB)
	page, err := c.Models.List(context.Background(), anthropic.ModelListParams{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		if m.Type != "model" || m.DisplayName != m.ID || m.CreatedAt.IsZero() {
			t.Fatalf("model %+v", m)
		}
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "chat-alpha,chat-beta,embed-alpha" || page.HasMore || page.FirstID != "chat-alpha" || page.LastID != "embed-alpha" {
		t.Fatalf("models %v, first %q last %q", ids, page.FirstID, page.LastID)
	}
	m, err := c.Models.Get(context.Background(), "chat-beta", anthropic.ModelGetParams{})
	if err != nil || m.ID != "chat-beta" || m.Type != "model" {
		t.Fatalf("model %+v: %v", m, err)
	}
	// chat-restricted exists but key-b may not use it: 404, like a name
	// that does not exist.
	_, err = c.Models.Get(context.Background(), "chat-restricted", anthropic.ModelGetParams{})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusNotFound {
		t.Fatalf("restricted model: %v", err)
	}
}

// postMessages posts body to the gateway's /v1/messages with key in
// x-api-key and hdr's headers.
func (h *harness) postMessages(key, body string, hdr http.Header) response {
	h.t.Helper()
	all := http.Header{"X-Api-Key": {key}, "Anthropic-Version": {"2023-06-01"}}
	for k, v := range hdr {
		all[k] = v
	}
	r := postTo(h.t, h.gw.URL+"/v1/messages", all, body)
	h.assertNoSecrets(string(r.body))
	return r
}

// postTo posts a JSON body to url with hdr's headers.
func postTo(t *testing.T, url string, hdr http.Header, body string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = hdr.Clone()
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// usageCount is how many records GET /v1/usage lists for key (up to 500).
func (h *harness) usageCount(key string) int {
	h.t.Helper()
	r := h.do(http.MethodGet, "/v1/usage?limit=500", key, "")
	var list struct {
		Data []json.RawMessage `json:"data"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &list) != nil {
		h.t.Fatalf("GET /v1/usage: %d %s", r.status, r.body)
	}
	return len(list.Data)
}
