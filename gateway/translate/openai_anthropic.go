package translate

import (
	"github.com/go-json-experiment/json"

	"github.com/llmgw/llmgw/api/wire/anthropic"
	"github.com/llmgw/llmgw/api/wire/openai"
)

// antPair carries a chat-completions request to the Anthropic Messages
// protocol, and its JSON answer and event stream back: the request in
// openai_anthropic_request.go (its messages in _messages.go), the answer
// in _answer.go, the stream in _stream.go. Every unexported name of the
// pair starts with "ant", as the package holds the other pairs too.
type antPair struct{}

// openAIToAnthropic is the (chat-completions → Anthropic Messages) pair.
func openAIToAnthropic() ChatPair { return antPair{} }

func (antPair) Stream(m *Meta) ChatStream { return newAntStream(m) }

// antFinishReason maps a stop_reason to chat-completions' finish_reason. A
// reason this gateway does not know, or none, is a normal stop: the answer
// is whole as far as the caller can tell.
func antFinishReason(stop string) string {
	switch stop {
	case anthropic.StopMaxTokens, anthropic.StopContextLimit:
		return "length"
	case anthropic.StopToolUse:
		return "tool_calls"
	case anthropic.StopRefusal:
		return "content_filter"
	}
	return "stop" // end_turn, stop_sequence, pause_turn, unknown
}

// antInput is the prompt's tokens in u, cache writes and reads included
// (the protocol counts them apart from input_tokens); cached is the reads
// only, which is what OpenAI's cached_tokens means. ok is false when u
// has no input_tokens.
func antInput(u *anthropic.Usage) (in, cached int, ok bool) {
	if u == nil || u.InputTokens == nil {
		return 0, 0, false
	}
	in = *u.InputTokens
	if n := u.CacheCreationInputTokens; n != nil {
		in += *n
	}
	if n := u.CacheReadInputTokens; n != nil {
		in += *n
		cached = *n
	}
	return in, cached, true
}

// antCounts are the prompt's counts an Anthropic stream reports in
// message_start (and may repeat in message_delta), kept until its final
// output count arrives.
type antCounts struct {
	input, cached int
	known         bool
}

// note keeps u's prompt counts, when it has them.
func (c *antCounts) note(u *anthropic.Usage) {
	if in, cached, ok := antInput(u); ok {
		c.input, c.cached, c.known = in, cached, true
	}
}

// final is the usage for the gateway when u carries the final output count
// and the prompt's counts are known; nil otherwise.
func (c *antCounts) final(u *anthropic.Usage) *Usage {
	if u == nil || u.OutputTokens == nil || !c.known {
		return nil
	}
	return &Usage{InputTokens: c.input, CachedInputTokens: c.cached, OutputTokens: *u.OutputTokens}
}

// antChatUsage is u in the chat-completions shape, with both details
// objects as OpenAI writes them.
func antChatUsage(u *Usage) *openai.Usage {
	return &openai.Usage{
		PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens,
		PromptTokensDetails:     &openai.PromptTokensDetails{CachedTokens: u.CachedInputTokens},
		CompletionTokensDetails: &openai.CompletionTokensDetails{ReasoningTokens: u.ReasoningTokens},
	}
}

// antAppender is an io.Writer that appends to b, so that MarshalWrite
// can write into a buffer the caller reuses.
type antAppender struct{ b []byte }

func (w *antAppender) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// antAppendAnswer appends v, an api/wire/openai answer type, to b, as
// appendJSON does but writing into b (a stream reuses its buffer). Those
// types hold strings, integers, pointers to them and JSON the decoder
// validated, which answerJSON writes whatever their values: an error is a
// defect of this file, not of an answer.
func antAppendAnswer(b []byte, v any) []byte {
	w := antAppender{b}
	if err := json.MarshalWrite(&w, v, answerJSON); err != nil {
		panic("translate: cannot encode a chat answer: " + err.Error())
	}
	return w.b
}
