package server

import (
	"strconv"

	"github.com/llmgw/llmgw/gateway/jsonenc"
	"github.com/llmgw/llmgw/gateway/usage"
)

const doneEvent = "data: [DONE]\n\n"

// chunkEncoder writes OpenAI chat.completion.chunk events. The constant part
// of every chunk is built once per stream, so relaying a delta is an append of
// the prefix, the escaped text and a suffix — no reflection per chunk. It
// lives inside its relay, the prefix in store unless the alias is long: no
// allocation of its own.
type chunkEncoder struct {
	prefix   []byte // `data: {"id":...,"choices":[`
	usageTag string // `,"usage":null` when the caller asked for usage
	store    [160]byte
}

func (e *chunkEncoder) init(requestID string, created int64, alias string, includeUsage bool) {
	p := append(e.store[:0], `data: {"id":"chatcmpl-`...)
	p = append(p, requestID...) // gateway-generated: [A-Za-z0-9_] only
	p = append(p, `","object":"chat.completion.chunk","created":`...)
	p = strconv.AppendInt(p, created, 10)
	p = append(p, `,"model":`...)
	p = jsonenc.AppendString(p, alias)
	e.prefix = append(p, `,"choices":[`...)
	if includeUsage {
		e.usageTag = `,"usage":null`
	}
}

func (e *chunkEncoder) role(b []byte) []byte {
	b = append(b, e.prefix...)
	b = append(b, `{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]`...)
	b = append(b, e.usageTag...)
	return append(b, "}\n\n"...)
}

func (e *chunkEncoder) content(b []byte, text string) []byte {
	b = append(b, e.prefix...)
	b = append(b, `{"index":0,"delta":{"content":`...)
	b = jsonenc.AppendString(b, text)
	b = append(b, `},"finish_reason":null}]`...)
	b = append(b, e.usageTag...)
	return append(b, "}\n\n"...)
}

func (e *chunkEncoder) finish(b []byte, reason string) []byte {
	b = append(b, e.prefix...)
	b = append(b, `{"index":0,"delta":{},"finish_reason":`...)
	b = jsonenc.AppendString(b, reason)
	b = append(b, "}]"...)
	b = append(b, e.usageTag...)
	return append(b, "}\n\n"...)
}

func (e *chunkEncoder) usage(b []byte, u usageJSON) []byte {
	b = append(b, e.prefix...)
	b = append(b, `],"usage":`...)
	b = appendUsageJSON(b, u)
	return append(b, "}\n\n"...)
}

// appendErrorEvent is the one structured error event of an interrupted stream.
func appendErrorEvent(b []byte, e *apiError, requestID string) []byte {
	b = append(b, "data: "...)
	b = appendErrorJSON(b, e, requestID)
	return append(b, "\n\n"...)
}

// usageJSON is OpenAI's usage object, details included: cached tokens are
// part of prompt_tokens and reasoning tokens part of completion_tokens.
type usageJSON struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// usageOf is the usage a client is told: exactly what its record says.
func usageOf(r *usage.Record) usageJSON {
	u := usageJSON{PromptTokens: r.InputTokens, CompletionTokens: r.OutputTokens, TotalTokens: r.InputTokens + r.OutputTokens}
	u.PromptTokensDetails.CachedTokens = r.CachedInputTokens
	u.CompletionTokensDetails.ReasoningTokens = r.ReasoningTokens
	return u
}

// encodeCompletion writes the bytes json.Marshal would write for the
// OpenAI chat.completion object (TestEncodeCompletionMatchesMarshal), by appends: the
// reflection walk cost more than the rest of the answer's encoding.
func encodeCompletion(requestID string, created int64, alias, text, finish string, u usageJSON) []byte {
	b := make([]byte, 0, 512+len(text)+len(alias))
	b = append(b, `{"id":"chatcmpl-`...)
	b = append(b, requestID...) // gateway-generated: [A-Za-z0-9_] only
	b = append(b, `","object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, created, 10)
	b = append(b, `,"model":`...)
	b = jsonenc.AppendString(b, alias)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	b = jsonenc.AppendString(b, text)
	b = append(b, `},"finish_reason":`...)
	b = jsonenc.AppendString(b, finish)
	b = append(b, `}],"usage":`...)
	b = appendUsageJSON(b, u)
	return append(b, "}\n"...)
}

func appendUsageJSON(b []byte, u usageJSON) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(u.PromptTokens), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(u.CompletionTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(u.TotalTokens), 10)
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(u.PromptTokensDetails.CachedTokens), 10)
	b = append(b, `},"completion_tokens_details":{"reasoning_tokens":`...)
	b = strconv.AppendInt(b, int64(u.CompletionTokensDetails.ReasoningTokens), 10)
	return append(b, "}}"...)
}

// finishReason fills in "stop" for a provider that ended without naming why.
func finishReason(r string) string {
	if r == "" {
		return "stop"
	}
	return r
}
