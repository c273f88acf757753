package openai

import "github.com/go-json-experiment/json/jsontext"

// Chat completion object types, the value of the "object" member.
const (
	ObjectCompletion = "chat.completion"
	ObjectChunk      = "chat.completion.chunk"
)

// ChatCompletionRequest is the body of POST /v1/chat/completions. Pointers
// tell a member the caller left out from one set to its zero value.
type ChatCompletionRequest struct {
	Model               string         `json:"model"`
	Messages            []Message      `json:"messages"`
	MaxTokens           *int           `json:"max_tokens,omitzero"`
	MaxCompletionTokens *int           `json:"max_completion_tokens,omitzero"`
	Temperature         *float64       `json:"temperature,omitzero"`
	TopP                *float64       `json:"top_p,omitzero"`
	N                   *int           `json:"n,omitzero"`
	Stop                jsontext.Value `json:"stop,omitzero"` // a string or an array of strings; see StopOf
	User                *string        `json:"user,omitzero"`
	Stream              *bool          `json:"stream,omitzero"`
	StreamOptions       *StreamOptions `json:"stream_options,omitzero"`

	// Parameters of the protocol the gateway does not model, kept raw.
	Tools             jsontext.Value `json:"tools,omitzero"`
	ToolChoice        jsontext.Value `json:"tool_choice,omitzero"`
	Functions         jsontext.Value `json:"functions,omitzero"`
	FunctionCall      jsontext.Value `json:"function_call,omitzero"`
	ParallelToolCalls jsontext.Value `json:"parallel_tool_calls,omitzero"`
	Logprobs          jsontext.Value `json:"logprobs,omitzero"`
	TopLogprobs       jsontext.Value `json:"top_logprobs,omitzero"`
	ResponseFormat    jsontext.Value `json:"response_format,omitzero"`
	LogitBias         jsontext.Value `json:"logit_bias,omitzero"`
	Seed              jsontext.Value `json:"seed,omitzero"`
	PresencePenalty   jsontext.Value `json:"presence_penalty,omitzero"`
	FrequencyPenalty  jsontext.Value `json:"frequency_penalty,omitzero"`
	Modalities        jsontext.Value `json:"modalities,omitzero"`
	Audio             jsontext.Value `json:"audio,omitzero"`
	Prediction        jsontext.Value `json:"prediction,omitzero"`
	ServiceTier       jsontext.Value `json:"service_tier,omitzero"`
	Store             jsontext.Value `json:"store,omitzero"`
	Metadata          jsontext.Value `json:"metadata,omitzero"`
	ReasoningEffort   jsontext.Value `json:"reasoning_effort,omitzero"`
}

// StreamOptions asks for extras in a stream; IncludeUsage adds a last chunk
// with the usage (see ChatCompletionChunk.Usage).
type StreamOptions struct {
	IncludeUsage *bool `json:"include_usage,omitzero"`
}

// Message is one message of a request. Content is a JSON string or an array
// of content parts (ContentPart), kept raw; Text makes the string form.
type Message struct {
	Role    string         `json:"role"`
	Content jsontext.Value `json:"content"`
}

// ContentPart is one element of an array content. Text is set for Type
// "text".
type ContentPart struct {
	Type string  `json:"type"`
	Text *string `json:"text,omitzero"`
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
	FinishReason string          `json:"finish_reason"` // stop, length, content_filter...
}

// ResponseMessage is the message of a Choice.
type ResponseMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"` // null reads as ""
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
// chunk, then pieces of the content.
type Delta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitzero"`
}
