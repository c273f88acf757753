package server

import (
	"encoding/json"
	"strconv"
)

const doneEvent = "data: [DONE]\n\n"

// chunkEncoder writes OpenAI chat.completion.chunk events. The constant part
// of every chunk is built once per stream, so relaying a delta is an append of
// the prefix, the escaped text and a suffix — no reflection per chunk.
type chunkEncoder struct {
	prefix   []byte // `data: {"id":...,"choices":[`
	usageTag string // `,"usage":null` when the caller asked for usage
}

func newChunkEncoder(requestID string, created int64, alias string, includeUsage bool) *chunkEncoder {
	p := make([]byte, 0, 160)
	p = append(p, `data: {"id":`...)
	p = appendJSONString(p, "chatcmpl-"+requestID)
	p = append(p, `,"object":"chat.completion.chunk","created":`...)
	p = strconv.AppendInt(p, created, 10)
	p = append(p, `,"model":`...)
	p = appendJSONString(p, alias)
	p = append(p, `,"choices":[`...)
	e := &chunkEncoder{prefix: p}
	if includeUsage {
		e.usageTag = `,"usage":null`
	}
	return e
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
	b = appendJSONString(b, text)
	b = append(b, `},"finish_reason":null}]`...)
	b = append(b, e.usageTag...)
	return append(b, "}\n\n"...)
}

func (e *chunkEncoder) finish(b []byte, reason string) []byte {
	b = append(b, e.prefix...)
	b = append(b, `{"index":0,"delta":{},"finish_reason":`...)
	b = appendJSONString(b, reason)
	b = append(b, "}]"...)
	b = append(b, e.usageTag...)
	return append(b, "}\n\n"...)
}

func (e *chunkEncoder) usage(b []byte, in, out int) []byte {
	b = append(b, e.prefix...)
	b = append(b, `],"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(in), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(out), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(in+out), 10)
	return append(b, "}}\n\n"...)
}

// appendErrorEvent is the one structured error event of an interrupted stream.
func appendErrorEvent(b []byte, e *apiError, requestID string) []byte {
	b = append(b, "data: "...)
	b = appendErrorJSON(b, e, requestID)
	return append(b, "\n\n"...)
}

type completionJSON struct {
	ID      string           `json:"id"`
	Object  string           `json:"object"`
	Created int64            `json:"created"`
	Model   string           `json:"model"`
	Choices []completionItem `json:"choices"`
	Usage   usageJSON        `json:"usage"`
}

type completionItem struct {
	Index        int         `json:"index"`
	Message      messageJSON `json:"message"`
	FinishReason string      `json:"finish_reason"`
}

type messageJSON struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type usageJSON struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func encodeCompletion(requestID string, created int64, alias, text, finish string, in, out int) []byte {
	b, _ := json.Marshal(completionJSON{
		ID: "chatcmpl-" + requestID, Object: "chat.completion", Created: created, Model: alias,
		Choices: []completionItem{{Message: messageJSON{Role: "assistant", Content: text}, FinishReason: finish}},
		Usage:   usageJSON{PromptTokens: in, CompletionTokens: out, TotalTokens: in + out},
	})
	return append(b, '\n')
}

// finishReason fills in "stop" for a provider that ended without naming why.
func finishReason(r string) string {
	if r == "" {
		return "stop"
	}
	return r
}
