package server

import (
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/openai"
	"github.com/llmgw/llmgw/gateway/usage"
)

const doneEvent = "data: [DONE]\n\n"

// answerJSON is how the gateway writes its answers, the api/wire/openai
// types: escaping as encoding/json does (<, >, & and U+2028/U+2029 as \u
// escapes), so that clients get the bytes they always got, and replacing
// invalid UTF-8 rather than failing (a provider's text is already valid:
// its decoder replaced what was not).
var answerJSON = jsonv2.JoinOptions(jsontext.EscapeForHTML(true), jsontext.EscapeForJS(true), jsontext.AllowInvalidUTF8(true))

// appendWriter is an io.Writer that appends to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// appendJSON appends v, one of the answer types of api/wire/openai, to w.b.
// Their members are strings, integers and pointers to them, which
// answerJSON writes whatever their values: an error is a defect of the
// types (the encode tests would fail), not of a request.
func appendJSON(w *appendWriter, v any) {
	if err := jsonv2.MarshalWrite(w, v, answerJSON); err != nil {
		panic("server: cannot encode an answer: " + err.Error())
	}
}

// chunkEncoder writes the chat.completion.chunk events of one stream. It
// lives inside its relay and holds one chunk, whose id, created, model and
// usage null-ness are set once per stream; each event sets its choice and
// appends the chunk to the relay's buffer.
type chunkEncoder struct {
	chunk  openai.ChatCompletionChunk
	choice [1]openai.ChunkChoice
	text   string // the delta content choice points to
	reason string // the finish reason choice points to
	w      appendWriter
}

// init prepares the stream's chunks; with includeUsage every chunk but the
// usage one carries "usage":null, as OpenAI's do.
func (e *chunkEncoder) init(requestID string, created int64, alias string, includeUsage bool) {
	e.chunk = openai.ChatCompletionChunk{
		ID: "chatcmpl-" + requestID, Object: openai.ObjectChunk, Created: created, Model: alias,
		Usage: openai.ChunkUsage{Null: includeUsage},
	}
}

// event appends one chunk with choices and, if u is set, the usage.
func (e *chunkEncoder) event(b []byte, choices []openai.ChunkChoice, u *openai.Usage) []byte {
	e.chunk.Choices, e.chunk.Usage.Usage = choices, u
	e.w.b = append(b, "data: "...)
	appendJSON(&e.w, &e.chunk)
	b = append(e.w.b, "\n\n"...)
	e.w.b = nil // the buffer is the relay's
	return b
}

// role is the first chunk: the assistant role and empty content.
func (e *chunkEncoder) role(b []byte) []byte {
	e.text = ""
	e.choice[0] = openai.ChunkChoice{Delta: openai.Delta{Role: "assistant", Content: &e.text}}
	return e.event(b, e.choice[:], nil)
}

func (e *chunkEncoder) content(b []byte, text string) []byte {
	e.text = text
	e.choice[0] = openai.ChunkChoice{Delta: openai.Delta{Content: &e.text}}
	return e.event(b, e.choice[:], nil)
}

func (e *chunkEncoder) finish(b []byte, reason string) []byte {
	e.reason = reason
	e.choice[0] = openai.ChunkChoice{FinishReason: &e.reason}
	return e.event(b, e.choice[:], nil)
}

// usage is the last chunk of a stream whose caller asked for usage: no
// choices, the counts.
func (e *chunkEncoder) usage(b []byte, u *openai.Usage) []byte {
	return e.event(b, e.choice[:0], u)
}

// appendErrorEvent is the one structured error event of an interrupted stream.
func appendErrorEvent(b []byte, e *apiError, requestID string) []byte {
	b = append(b, "data: "...)
	b = appendErrorJSON(b, e, requestID)
	return append(b, "\n\n"...)
}

// usageOf is the usage a client is told: exactly what its record says,
// details included (cached tokens are part of prompt_tokens and reasoning
// tokens part of completion_tokens).
func usageOf(r *usage.Record) *openai.Usage {
	return &openai.Usage{
		PromptTokens: r.InputTokens, CompletionTokens: r.OutputTokens, TotalTokens: r.InputTokens + r.OutputTokens,
		PromptTokensDetails:     &openai.PromptTokensDetails{CachedTokens: r.CachedInputTokens},
		CompletionTokensDetails: &openai.CompletionTokensDetails{ReasoningTokens: r.ReasoningTokens},
	}
}

// encodeCompletion writes the chat.completion answer, with a newline.
func encodeCompletion(requestID string, created int64, alias, text, finish string, u *openai.Usage) []byte {
	c := &openai.ChatCompletion{
		ID: "chatcmpl-" + requestID, Object: openai.ObjectCompletion, Created: created, Model: alias,
		Choices: []openai.Choice{{Message: openai.ResponseMessage{Role: "assistant", Content: text}, FinishReason: finish}},
		Usage:   u,
	}
	w := appendWriter{make([]byte, 0, 512+len(text)+len(alias))}
	appendJSON(&w, c)
	return append(w.b, '\n')
}

// finishReason fills in "stop" for a provider that ended without naming why.
func finishReason(r string) string {
	if r == "" {
		return "stop"
	}
	return r
}
