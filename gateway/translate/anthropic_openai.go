package translate

// anthropicToOpenAI carries an Anthropic Messages request to a provider of
// the OpenAI chat-completions protocol, and its JSON answer and event
// stream back as a Messages answer and Messages events: the request in
// anthropic_openai_request.go (its messages in _messages.go), the answer
// in _answer.go, the stream in _stream.go. Every unexported name of the
// pair starts with "ao", as the package holds the other pairs too.
//
// Carried: system (a leading system message) and system messages inside
// messages (at their place); text and image blocks (base64 as a data URL);
// tool_use blocks as tool_calls; tool_result blocks as tool messages, before
// the rest of their user turn (consecutive user messages are one turn; an
// is_error result's text after "Error: "); client tools as functions
// (strict kept); tool_choice (auto, any → required, tool → a named
// function, none) and disable_parallel_tool_use (parallel_tool_calls
// false); max_tokens as max_completion_tokens; temperature; top_p;
// stop_sequences as stop; output_config.format json_schema as
// response_format json_schema (named "output"); stream, with
// stream_options.include_usage.
//
// Dropped: these are optional hints or provider-side conveniences in the
// Anthropic API, which an answer does not depend on; the request is carried
// without them.
//   - cache_control, anywhere (top level, system, blocks, tools): OpenAI
//     caches prompt prefixes without being asked
//   - thinking, of any type (enabled, adaptive, disabled)
//   - thinking and redacted_thinking blocks in the history
//   - context_management
//   - output_config.effort
//   - metadata
//   - service_tier
//   - citations on blocks
//   - a tool's defer_loading (tool search: the tool is declared up front)
//     and input_examples
//
// Not carried: a request with any of these is refused with *NotCarried
// naming the parameter, before anything is sent, so that the route is
// passed over.
//   - top_k
//   - mcp_servers (unless null or empty)
//   - container (unless null)
//   - server tools: a tool whose type is not "custom" (web_search_20250305,
//     bash_20250124, text_editor_..., code_execution_...)
//   - document blocks, search_result blocks and every other block type but
//     text, image, tool_use, tool_result, thinking and redacted_thinking
//   - images in a tool_result's content (OpenAI tool messages hold text)
//   - image sources of type file (an uploaded file OpenAI cannot read)
//   - output_config.format of another type than json_schema
//   - members the protocol's request has that this pair does not model
//     (inference_geo, speed, output_format...), and unknown ones
type anthropicToOpenAI struct{}

func (anthropicToOpenAI) Stream(m *Meta) ChatStream { return newAOStream(m) }

// aoNoEquivalent is the reason a parameter the protocol lacks is refused.
const aoNoEquivalent = "has no equivalent in the OpenAI chat-completions protocol"

// aoStopReason maps chat-completions' finish_reason to a stop_reason. A
// reason this gateway does not know, or none, is the end of the turn: the
// answer is whole as far as the caller can tell. chat-completions does not
// say which stop sequence ended an answer, so "stop" is end_turn.
func aoStopReason(finish string) string {
	switch finish {
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	case "content_filter":
		return "refusal"
	}
	return "end_turn"
}

// aoInput is a prompt's counts in the protocol's semantics: input_tokens
// excludes the tokens read from the cache, which chat-completions counts
// in prompt_tokens (a provider reporting more cached tokens than prompt
// tokens has input 0, not a negative count).
func aoInput(u *Usage) (input, cacheRead int) {
	// Cached tokens are part of the prompt's: a provider reporting more of
	// them than prompt tokens reports at most the prompt's as cached (the
	// gateway's record clamps them alike).
	cacheRead = min(max(u.CachedInputTokens, 0), max(u.InputTokens, 0))
	return max(u.InputTokens-cacheRead, 0), cacheRead
}
