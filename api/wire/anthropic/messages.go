package anthropic

import "github.com/go-json-experiment/json/jsontext"

// MessagesRequest is the body of POST /v1/messages.
type MessagesRequest struct {
	Model string `json:"model"`
	// System is a JSON string or an array of text blocks, kept raw; Text
	// makes the string form.
	System        jsontext.Value `json:"system,omitzero"`
	Messages      []Message      `json:"messages"`
	MaxTokens     *int           `json:"max_tokens,omitzero"` // required by the protocol
	Temperature   *float64       `json:"temperature,omitzero"`
	TopP          *float64       `json:"top_p,omitzero"`
	TopK          *int           `json:"top_k,omitzero"`
	StopSequences []string       `json:"stop_sequences,omitempty"`
	Metadata      *Metadata      `json:"metadata,omitzero"`
	Stream        bool           `json:"stream,omitzero"`
}

// Metadata describes the request; UserID is an opaque id of the end user.
type Metadata struct {
	UserID string `json:"user_id"`
}

// Message is one turn of the conversation (role user or assistant).
// Content is a JSON string or an array of content blocks, kept raw; Text
// makes the string form.
type Message struct {
	Role    string         `json:"role"`
	Content jsontext.Value `json:"content"`
}

// Text is s as a JSON string, the plain form of System and Message.Content.
func Text(s string) jsontext.Value {
	b, _ := jsontext.AppendQuote(nil, s) // the error only reports invalid UTF-8, which it replaces
	return b
}

// Message types and content block types.
const (
	TypeMessage   = "message"
	TypeError     = "error"
	BlockText     = "text"
	DeltaText     = "text_delta"
	RoleAssistant = "assistant"
)

// MessageResponse is the answer to a request without stream (type
// "message"), and the message that message_start opens a stream with.
type MessageResponse struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"` // TypeMessage
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []ContentBlock `json:"content"`
	StopReason   *string        `json:"stop_reason"` // end_turn, max_tokens, stop_sequence...; null in message_start
	StopSequence *string        `json:"stop_sequence"`
	Usage        *Usage         `json:"usage,omitzero"`
}

// ContentBlock is one block of a message's content; Text is set for type
// "text".
type ContentBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Usage counts a request's tokens. InputTokens excludes the tokens written
// to and read from the prompt cache, which are counted apart. Every member
// is a pointer: a message_delta event may carry only some of them.
type Usage struct {
	InputTokens              *int `json:"input_tokens,omitzero"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens,omitzero"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens,omitzero"`
	OutputTokens             *int `json:"output_tokens,omitzero"`
}
