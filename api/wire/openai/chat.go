package openai

import "github.com/go-json-experiment/json/jsontext"

// Chat completion object types, the value of the "object" member.
const (
	ObjectCompletion = "chat.completion"
	ObjectChunk      = "chat.completion.chunk"
)

// ChatCompletionRequest is the body of POST /v1/chat/completions. Pointers
// tell a member the caller left out from one set to its zero value.
//
// A gateway route to a provider of the same protocol forwards the body as
// the caller sent it (only model and stream_options change), so this type
// is what the gateway reads to translate a request to another protocol, and
// what the mocks read: every member a translation can carry is modelled,
// the others are kept raw so that they can be named when refused.
type ChatCompletionRequest struct {
	Model               string         `json:"model"`
	Messages            []Message      `json:"messages"`
	MaxTokens           *int           `json:"max_tokens,omitzero"`
	MaxCompletionTokens *int           `json:"max_completion_tokens,omitzero"`
	Temperature         *float64       `json:"temperature,omitzero"`
	TopP                *float64       `json:"top_p,omitzero"`
	N                   *int           `json:"n,omitzero"`
	Stop                jsontext.Value `json:"stop,omitzero"` // a string or an array of strings
	User                *string        `json:"user,omitzero"`
	Stream              *bool          `json:"stream,omitzero"`
	StreamOptions       *StreamOptions `json:"stream_options,omitzero"`
	Tools               []Tool         `json:"tools,omitzero"`
	// ToolChoice is "none", "auto", "required" or a NamedToolChoice, kept raw.
	ToolChoice        jsontext.Value  `json:"tool_choice,omitzero"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitzero"`
	ResponseFormat    *ResponseFormat `json:"response_format,omitzero"`

	// Parameters of the protocol no translation models, kept raw.
	Functions        jsontext.Value `json:"functions,omitzero"`
	FunctionCall     jsontext.Value `json:"function_call,omitzero"`
	Logprobs         jsontext.Value `json:"logprobs,omitzero"`
	TopLogprobs      jsontext.Value `json:"top_logprobs,omitzero"`
	LogitBias        jsontext.Value `json:"logit_bias,omitzero"`
	Seed             jsontext.Value `json:"seed,omitzero"`
	PresencePenalty  jsontext.Value `json:"presence_penalty,omitzero"`
	FrequencyPenalty jsontext.Value `json:"frequency_penalty,omitzero"`
	Modalities       jsontext.Value `json:"modalities,omitzero"`
	Audio            jsontext.Value `json:"audio,omitzero"`
	Prediction       jsontext.Value `json:"prediction,omitzero"`
	ServiceTier      jsontext.Value `json:"service_tier,omitzero"`
	Store            jsontext.Value `json:"store,omitzero"`
	Metadata         jsontext.Value `json:"metadata,omitzero"`
	ReasoningEffort  jsontext.Value `json:"reasoning_effort,omitzero"`
}

// Tool is one tool the model may call; Type is "function".
type Tool struct {
	Type     string       `json:"type"`
	Function *FunctionDef `json:"function,omitzero"`
}

// FunctionDef declares a function tool; Parameters is a JSON Schema, raw.
type FunctionDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitzero"`
	Parameters  jsontext.Value `json:"parameters,omitzero"`
	Strict      *bool          `json:"strict,omitzero"`
}

// NamedToolChoice is the object form of tool_choice: call this function.
type NamedToolChoice struct {
	Type     string       `json:"type"` // "function"
	Function FunctionName `json:"function"`
}

// FunctionName names a function.
type FunctionName struct {
	Name string `json:"name"`
}

// Tool choice strings.
const (
	ToolChoiceNone     = "none"
	ToolChoiceAuto     = "auto"
	ToolChoiceRequired = "required"
)

// ResponseFormat asks for the answer's format: Type is "text",
// "json_object" or "json_schema" (with JSONSchema).
type ResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema,omitzero"`
}

// JSONSchema is the schema a json_schema answer follows; Schema is raw.
type JSONSchema struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitzero"`
	Schema      jsontext.Value `json:"schema,omitzero"`
	Strict      *bool          `json:"strict,omitzero"`
}

// StreamOptions asks for extras in a stream; IncludeUsage adds a last chunk
// with the usage (see ChatCompletionChunk.Usage).
type StreamOptions struct {
	IncludeUsage *bool `json:"include_usage,omitzero"`
}

// Message is one message of a request. Content is a JSON string, an array
// of content parts (ContentPart) or null (an assistant message that only
// calls tools), kept raw; Text makes the string form. An assistant message
// may carry ToolCalls; a "tool" message answers the call ToolCallID.
type Message struct {
	Role       string         `json:"role"`
	Content    jsontext.Value `json:"content,omitzero"`
	Name       *string        `json:"name,omitzero"`
	Refusal    *string        `json:"refusal,omitzero"`
	ToolCalls  []ToolCall     `json:"tool_calls,omitzero"`
	ToolCallID string         `json:"tool_call_id,omitzero"`
}

// Message roles.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// ContentPart is one element of an array content: Type "text" with Text,
// "image_url" with ImageURL, or (in an assistant message of the history)
// "refusal" with Refusal. Other types (input_audio, file) are kept raw in a
// request a route forwards unchanged.
type ContentPart struct {
	Type     string    `json:"type"`
	Text     *string   `json:"text,omitzero"`
	ImageURL *ImageURL `json:"image_url,omitzero"`
	Refusal  *string   `json:"refusal,omitzero"`
}

// Content part types.
const (
	PartText    = "text"
	PartImage   = "image_url"
	PartRefusal = "refusal"
)

// ImageURL is an image part's image: an https URL or a data: URL
// (data:image/png;base64,...). Detail is auto, low or high.
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitzero"`
}

// ToolCall is a call the assistant made: Type "function", Arguments the
// function's arguments as a JSON text (a string holding JSON).
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function a ToolCall calls.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Text is s as a JSON string, the plain form of a message's Content.
func Text(s string) jsontext.Value {
	b, _ := jsontext.AppendQuote(nil, s) // the error only reports invalid UTF-8, which it replaces
	return b
}

// ChatCompletion is the answer to a request without stream.
type ChatCompletion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"` // ObjectCompletion
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []Choice `json:"choices"`
	Usage   *Usage   `json:"usage,omitzero"`
}

// Choice is one answer of a ChatCompletion.
type Choice struct {
	Index        int             `json:"index"`
	Message      ResponseMessage `json:"message"`
	FinishReason string          `json:"finish_reason"` // stop, length, tool_calls, content_filter
}

// ResponseMessage is the message of a Choice: Content is null when the
// assistant only calls tools (ToolCalls) or refuses (Refusal).
type ResponseMessage struct {
	Role      string     `json:"role"`
	Content   *string    `json:"content"`
	Refusal   *string    `json:"refusal,omitzero"`
	ToolCalls []ToolCall `json:"tool_calls,omitzero"`
}

// ChatCompletionChunk is one event of a stream (data: <chunk>), until the
// data: [DONE] that ends it.
type ChatCompletionChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"` // ObjectChunk
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []ChunkChoice `json:"choices"`
	Usage   ChunkUsage    `json:"usage,omitzero"`
}

// ChunkChoice is the part of a choice one chunk carries.
type ChunkChoice struct {
	Index        int     `json:"index"`
	Delta        Delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"` // null until the choice's last chunk
}

// Delta is what a chunk adds to a choice's message: the role in the first
// chunk, then pieces of the content, of a refusal or of tool calls.
type Delta struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitzero"`
	Refusal   *string         `json:"refusal,omitzero"`
	ToolCalls []ToolCallDelta `json:"tool_calls,omitzero"`
}

// ToolCallDelta is a piece of the tool call at Index: the first piece has
// the ID, Type and the function's Name, the next ones pieces of Arguments.
type ToolCallDelta struct {
	Index    int               `json:"index"`
	ID       string            `json:"id,omitzero"`
	Type     string            `json:"type,omitzero"`
	Function FunctionCallDelta `json:"function,omitzero"`
}

// FunctionCallDelta is a piece of a FunctionCall.
type FunctionCallDelta struct {
	Name      string `json:"name,omitzero"`
	Arguments string `json:"arguments"`
}
