package openai

import "github.com/go-json-experiment/json/jsontext"

// This file holds the shapes of OpenAI's Responses protocol
// (POST /v1/responses), which Codex speaks: the request, the response
// object, its items and content parts, and the stream events.
//
// As for chat completions, what a translation or a mock reads is declared
// and the members a route only forwards are kept raw, so that a request a
// current client sends decodes whole.

// ObjectResponse is the "object" member of a Response.
const ObjectResponse = "response"

// ResponsesRequest is the body of POST /v1/responses.
type ResponsesRequest struct {
	Model string `json:"model"`
	// Input is a JSON string (one user message) or an array of items
	// (InputItem), kept raw; Text makes the string form.
	Input jsontext.Value `json:"input,omitzero"`
	// Instructions is the system (developer) text: a JSON string, kept raw
	// because the protocol also allows an array of items there.
	Instructions      jsontext.Value      `json:"instructions,omitzero"`
	Tools             []ResponsesTool     `json:"tools,omitzero"`
	ToolChoice        jsontext.Value      `json:"tool_choice,omitzero"` // "none", "auto", "required" or a ResponsesToolChoice
	ParallelToolCalls *bool               `json:"parallel_tool_calls,omitzero"`
	Text              *ResponsesText      `json:"text,omitzero"`
	Reasoning         *ResponsesReasoning `json:"reasoning,omitzero"`
	MaxOutputTokens   *int                `json:"max_output_tokens,omitzero"`
	Temperature       *float64            `json:"temperature,omitzero"`
	TopP              *float64            `json:"top_p,omitzero"`
	Stream            *bool               `json:"stream,omitzero"`
	Store             *bool               `json:"store,omitzero"`
	Include           []string            `json:"include,omitzero"` // e.g. "reasoning.encrypted_content"
	PromptCacheKey    *string             `json:"prompt_cache_key,omitzero"`
	User              *string             `json:"user,omitzero"` // deprecated by the protocol for safety_identifier and prompt_cache_key, still sent
	// PreviousResponseID and Conversation continue a conversation the
	// server stored; a stateless server cannot serve them.
	PreviousResponseID *string        `json:"previous_response_id,omitzero"`
	Conversation       jsontext.Value `json:"conversation,omitzero"`

	// Members no translation models, kept raw.
	Metadata             jsontext.Value `json:"metadata,omitzero"`
	ClientMetadata       jsontext.Value `json:"client_metadata,omitzero"` // Codex's thread and turn ids
	SafetyIdentifier     jsontext.Value `json:"safety_identifier,omitzero"`
	ServiceTier          jsontext.Value `json:"service_tier,omitzero"`
	Truncation           jsontext.Value `json:"truncation,omitzero"`
	Background           jsontext.Value `json:"background,omitzero"`
	MaxToolCalls         jsontext.Value `json:"max_tool_calls,omitzero"`
	TopLogprobs          jsontext.Value `json:"top_logprobs,omitzero"`
	Prompt               jsontext.Value `json:"prompt,omitzero"`
	PromptCacheRetention jsontext.Value `json:"prompt_cache_retention,omitzero"`
	StreamOptions        jsontext.Value `json:"stream_options,omitzero"`
}

// ResponsesTool is one tool of a request. A function tool has Type
// "function", a Name, Parameters (JSON Schema, raw) and Strict; custom
// tools (Type "custom", free-form input), hosted tools (web_search,
// file_search, mcp, ...) and Codex's "namespace" groups carry other
// members, which only a provider reads.
type ResponsesTool struct {
	Type        string         `json:"type"`
	Name        string         `json:"name,omitzero"`
	Description string         `json:"description,omitzero"`
	Parameters  jsontext.Value `json:"parameters,omitzero"`
	Strict      *bool          `json:"strict,omitzero"`
	// Format is a custom tool's input format (a ResponsesCustomFormat),
	// raw: free text when absent.
	Format jsontext.Value `json:"format,omitzero"`
}

// ResponsesCustomFormat is a custom tool's format: Type "text" (free
// text) or "grammar", whose input follows Definition, a grammar in Syntax
// ("lark" or "regex"). Codex's apply_patch is a lark grammar.
type ResponsesCustomFormat struct {
	Type       string `json:"type"`
	Syntax     string `json:"syntax,omitzero"`
	Definition string `json:"definition,omitzero"`
}

// Responses tool types a translation or a mock handles by name.
const (
	ResponsesToolFunction = "function"
	ResponsesToolCustom   = "custom"
)

// ResponsesToolChoice is the object form of tool_choice: Type "function"
// or "custom" with Name (call that tool), "allowed_tools" (Mode and Tools,
// raw), or a hosted tool's type (use that tool).
type ResponsesToolChoice struct {
	Type  string         `json:"type"`
	Name  string         `json:"name,omitzero"`
	Mode  string         `json:"mode,omitzero"`
	Tools jsontext.Value `json:"tools,omitzero"`
}

// ResponsesText configures the text output: Format (plain text, a JSON
// object or JSON following a schema) and Verbosity (raw).
type ResponsesText struct {
	Format    *ResponsesTextFormat `json:"format,omitzero"`
	Verbosity jsontext.Value       `json:"verbosity,omitzero"`
}

// ResponsesTextFormat is text.format: Type "text", "json_object" or
// "json_schema" with Name, Schema (raw) and Strict — flat, unlike chat's
// response_format.json_schema.
type ResponsesTextFormat struct {
	Type        string         `json:"type"`
	Name        string         `json:"name,omitzero"`
	Description string         `json:"description,omitzero"`
	Schema      jsontext.Value `json:"schema,omitzero"`
	Strict      *bool          `json:"strict,omitzero"`
}

// ResponsesReasoning configures reasoning models: Effort (none, minimal,
// low, medium, high, xhigh) and Summary (auto, concise, detailed), both
// kept raw as servers add values.
type ResponsesReasoning struct {
	Effort          jsontext.Value `json:"effort,omitzero"`
	Summary         jsontext.Value `json:"summary,omitzero"`
	GenerateSummary jsontext.Value `json:"generate_summary,omitzero"`
}

// InputItem is one item of a request's input, as one struct for every
// type: a message (Type "message", or no Type with a Role — the protocol's
// short form) with Role and Content; a function_call the assistant made
// (CallID, Name, Arguments); its function_call_output (CallID, Output); a
// custom_tool_call (CallID, Name, Input) and its custom_tool_call_output;
// a reasoning item passed back (Summary and EncryptedContent, raw). Other
// types (item_reference, web_search_call, ...) keep only Type and ID here.
type InputItem struct {
	Type   string `json:"type,omitzero"`
	ID     string `json:"id,omitzero"`
	Status string `json:"status,omitzero"`
	Role   string `json:"role,omitzero"`
	// Content is a message's: a JSON string or an array of content parts
	// (ContentItem), kept raw.
	Content   jsontext.Value `json:"content,omitzero"`
	CallID    string         `json:"call_id,omitzero"`
	Name      string         `json:"name,omitzero"`
	Arguments *string        `json:"arguments,omitzero"` // function_call: the arguments as JSON text
	Input     *string        `json:"input,omitzero"`     // custom_tool_call: the free-form input
	// Output is a tool call output's: a JSON string or an array of
	// input_text, input_image and input_file parts, kept raw.
	Output           jsontext.Value `json:"output,omitzero"`
	Summary          jsontext.Value `json:"summary,omitzero"`
	EncryptedContent jsontext.Value `json:"encrypted_content,omitzero"`
}

// Responses item types.
const (
	ItemMessage              = "message"
	ItemFunctionCall         = "function_call"
	ItemFunctionCallOutput   = "function_call_output"
	ItemCustomToolCall       = "custom_tool_call"
	ItemCustomToolCallOutput = "custom_tool_call_output"
	ItemReasoning            = "reasoning"
	ItemReference            = "item_reference" // an item the server stored, by id
)

// ContentItem is one content part of a Responses message or tool output:
// input_text and output_text (Text; an output_text has Annotations and
// Logprobs, raw), input_image (ImageURL — an http(s) or data: URL — or
// FileID, with Detail), input_file (FileID, FileData, FileURL, Filename)
// and refusal (Refusal, type PartRefusal).
type ContentItem struct {
	Type        string         `json:"type"`
	Text        *string        `json:"text,omitzero"`
	Annotations jsontext.Value `json:"annotations,omitzero"`
	Logprobs    jsontext.Value `json:"logprobs,omitzero"`
	ImageURL    string         `json:"image_url,omitzero"`
	FileID      string         `json:"file_id,omitzero"`
	Detail      string         `json:"detail,omitzero"`
	FileData    string         `json:"file_data,omitzero"`
	FileURL     string         `json:"file_url,omitzero"`
	Filename    string         `json:"filename,omitzero"`
	Refusal     *string        `json:"refusal,omitzero"`
}

// Content part types of the Responses protocol.
const (
	PartInputText  = "input_text"
	PartInputImage = "input_image"
	PartInputFile  = "input_file"
	PartOutputText = "output_text"
)

// OutputText is an output_text part holding s, with the empty annotations
// and logprobs the protocol writes.
func OutputText(s string) ContentItem {
	return ContentItem{Type: PartOutputText, Text: &s, Annotations: jsontext.Value("[]"), Logprobs: jsontext.Value("[]")}
}

// Response is the answer to a request without stream, and the response
// the lifecycle events of a stream carry (response.created ... with Status
// in_progress and no Output yet; response.completed, response.incomplete
// and response.failed with the final state).
type Response struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"` // ObjectResponse
	CreatedAt         int64              `json:"created_at"`
	Status            string             `json:"status"` // ResponseStatus*
	Error             *ResponseError     `json:"error"`
	IncompleteDetails *IncompleteDetails `json:"incomplete_details"`
	// Instructions and MaxOutputTokens echo the request, as the members
	// below Output do: a server repeats what the response was asked with.
	// A server that does not (the mocks) leaves them out.
	Instructions    jsontext.Value `json:"instructions,omitzero"`
	MaxOutputTokens *int           `json:"max_output_tokens,omitzero"`
	Model           string         `json:"model"`
	Output          []OutputItem   `json:"output"`
	// The request's members the response echoes; tool_choice, tools and
	// text raw, as the caller sent them.
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitzero"`
	Store             *bool           `json:"store,omitzero"`
	Temperature       *float64        `json:"temperature,omitzero"`
	Text              jsontext.Value  `json:"text,omitzero"`
	ToolChoice        jsontext.Value  `json:"tool_choice,omitzero"`
	Tools             jsontext.Value  `json:"tools,omitzero"`
	TopP              *float64        `json:"top_p,omitzero"`
	Usage             *ResponsesUsage `json:"usage"` // null until the response ends (and when a server does not count)
	Metadata          jsontext.Value  `json:"metadata,omitzero"`
}

// Response statuses.
const (
	ResponseStatusInProgress = "in_progress"
	ResponseStatusCompleted  = "completed"
	ResponseStatusIncomplete = "incomplete"
	ResponseStatusFailed     = "failed"
)

// ResponseError is why a response failed: Code (server_error,
// rate_limit_exceeded, ...) and Message.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetails says why a response is incomplete: Reason
// "max_output_tokens" or "content_filter".
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// OutputItem is one item of a response's output: a message (Role
// "assistant", Content of output_text or refusal parts), a function_call
// (CallID, Name, Arguments) or a custom_tool_call (CallID, Name, Input).
// Status is in_progress while a stream builds the item, then completed
// (or incomplete).
type OutputItem struct {
	ID        string        `json:"id"`
	Type      string        `json:"type"`
	Status    string        `json:"status,omitzero"`
	Role      string        `json:"role,omitzero"`
	Content   []ContentItem `json:"content,omitzero"` // message only; a message item always has it, possibly empty
	CallID    string        `json:"call_id,omitzero"`
	Name      string        `json:"name,omitzero"`
	Arguments *string       `json:"arguments,omitzero"` // function_call only: "" while a stream opens it
	Input     *string       `json:"input,omitzero"`     // custom_tool_call only: "" while a stream opens it
}

// ResponsesUsage counts a response's tokens. Cached tokens are part of
// InputTokens and reasoning tokens part of OutputTokens, as in chat
// completions; the protocol always sends both details objects.
type ResponsesUsage struct {
	InputTokens         int                  `json:"input_tokens"`
	InputTokensDetails  *InputTokensDetails  `json:"input_tokens_details,omitzero"`
	OutputTokens        int                  `json:"output_tokens"`
	OutputTokensDetails *OutputTokensDetails `json:"output_tokens_details,omitzero"`
	TotalTokens         int                  `json:"total_tokens"`
}

// InputTokensDetails breaks InputTokens down.
type InputTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// OutputTokensDetails breaks OutputTokens down.
type OutputTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// Stream event types: the SSE event name, repeated as the data's "type".
// Every event has a sequence_number, counting from 0 within the stream.
const (
	EventResponseCreated            = "response.created"
	EventResponseInProgress         = "response.in_progress"
	EventResponseCompleted          = "response.completed"
	EventResponseIncomplete         = "response.incomplete"
	EventResponseFailed             = "response.failed"
	EventOutputItemAdded            = "response.output_item.added"
	EventOutputItemDone             = "response.output_item.done"
	EventContentPartAdded           = "response.content_part.added"
	EventContentPartDone            = "response.content_part.done"
	EventOutputTextDelta            = "response.output_text.delta"
	EventOutputTextDone             = "response.output_text.done"
	EventFunctionCallArgumentsDelta = "response.function_call_arguments.delta"
	EventFunctionCallArgumentsDone  = "response.function_call_arguments.done"
	EventRefusalDelta               = "response.refusal.delta"                // RefusalEvent
	EventRefusalDone                = "response.refusal.done"                 // RefusalEvent
	EventCustomToolCallInputDelta   = "response.custom_tool_call_input.delta" // CustomToolCallInputEvent
	EventCustomToolCallInputDone    = "response.custom_tool_call_input.done"  // CustomToolCallInputEvent
	EventResponsesError             = "error"                                 // ResponsesErrorEvent
)

// ResponsesEventHead is the part every stream event shares, for a reader
// that peeks at the type before decoding the whole event.
type ResponsesEventHead struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
}

// ResponseEvent is a lifecycle event: response.created, .in_progress,
// .completed, .incomplete and .failed, each with the response so far.
type ResponseEvent struct {
	Type           string   `json:"type"`
	SequenceNumber int      `json:"sequence_number"`
	Response       Response `json:"response"`
}

// OutputItemEvent opens (response.output_item.added) or closes
// (response.output_item.done) the output item at OutputIndex.
type OutputItemEvent struct {
	Type           string     `json:"type"`
	SequenceNumber int        `json:"sequence_number"`
	OutputIndex    int        `json:"output_index"`
	Item           OutputItem `json:"item"`
}

// ContentPartEvent opens (response.content_part.added) or closes
// (response.content_part.done) part ContentIndex of message ItemID.
type ContentPartEvent struct {
	Type           string      `json:"type"`
	SequenceNumber int         `json:"sequence_number"`
	ItemID         string      `json:"item_id"`
	OutputIndex    int         `json:"output_index"`
	ContentIndex   int         `json:"content_index"`
	Part           ContentItem `json:"part"`
}

// OutputTextEvent adds Delta to an output_text part
// (response.output_text.delta), or gives its whole Text
// (response.output_text.done). Logprobs is raw (the protocol writes []).
type OutputTextEvent struct {
	Type           string         `json:"type"`
	SequenceNumber int            `json:"sequence_number"`
	ItemID         string         `json:"item_id"`
	OutputIndex    int            `json:"output_index"`
	ContentIndex   int            `json:"content_index"`
	Delta          *string        `json:"delta,omitzero"`
	Text           *string        `json:"text,omitzero"`
	Logprobs       jsontext.Value `json:"logprobs,omitzero"`
}

// FunctionCallArgumentsEvent adds Delta to a function call's arguments
// (response.function_call_arguments.delta), or gives them whole with the
// function's Name (response.function_call_arguments.done).
type FunctionCallArgumentsEvent struct {
	Type           string  `json:"type"`
	SequenceNumber int     `json:"sequence_number"`
	ItemID         string  `json:"item_id"`
	OutputIndex    int     `json:"output_index"`
	Delta          *string `json:"delta,omitzero"`
	Name           string  `json:"name,omitzero"`
	Arguments      *string `json:"arguments,omitzero"`
}

// RefusalEvent adds Delta to a refusal part (response.refusal.delta), or
// gives the whole Refusal (response.refusal.done).
type RefusalEvent struct {
	Type           string  `json:"type"`
	SequenceNumber int     `json:"sequence_number"`
	ItemID         string  `json:"item_id"`
	OutputIndex    int     `json:"output_index"`
	ContentIndex   int     `json:"content_index"`
	Delta          *string `json:"delta,omitzero"`
	Refusal        *string `json:"refusal,omitzero"`
}

// CustomToolCallInputEvent adds Delta to a custom tool call's input
// (response.custom_tool_call_input.delta), or gives it whole
// (response.custom_tool_call_input.done).
type CustomToolCallInputEvent struct {
	Type           string  `json:"type"`
	SequenceNumber int     `json:"sequence_number"`
	ItemID         string  `json:"item_id"`
	OutputIndex    int     `json:"output_index"`
	Delta          *string `json:"delta,omitzero"`
	Input          *string `json:"input,omitzero"`
}

// ResponsesErrorEvent is the "error" event: a failure outside a response
// (the request could not start, a stream-level limit). Code and Param may
// be null.
type ResponsesErrorEvent struct {
	Type           string  `json:"type"` // EventResponsesError
	SequenceNumber int     `json:"sequence_number"`
	Code           *string `json:"code"`
	Message        string  `json:"message"`
	Param          *string `json:"param"`
}
