package anthropic

import "github.com/go-json-experiment/json/jsontext"

// MessagesRequest is the body of POST /v1/messages. What the gateway or a
// mock reads is modelled; members it only forwards or ignores (thinking,
// context management, service tier...) are kept raw, so that a request a
// current client sends decodes whole.
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
	Tools         []Tool         `json:"tools,omitzero"`
	ToolChoice    *ToolChoice    `json:"tool_choice,omitzero"`
	OutputConfig  *OutputConfig  `json:"output_config,omitzero"`

	Thinking          jsontext.Value `json:"thinking,omitzero"`
	ContextManagement jsontext.Value `json:"context_management,omitzero"`
	ServiceTier       jsontext.Value `json:"service_tier,omitzero"`
	MCPServers        jsontext.Value `json:"mcp_servers,omitzero"`
	Container         jsontext.Value `json:"container,omitzero"`
	// CacheControl is the request-wide cache breakpoint (automatic prompt
	// caching: the provider places it on the last cacheable block).
	CacheControl jsontext.Value `json:"cache_control,omitzero"`
}

// Tool is one tool the model may use. A client tool has a Name, an
// InputSchema (JSON Schema, raw) and no Type (or "custom"); a server tool
// (web search, code execution...) has a versioned Type and its own members,
// which only a provider reads.
type Tool struct {
	Type         string         `json:"type,omitzero"`
	Name         string         `json:"name"`
	Description  string         `json:"description,omitzero"`
	InputSchema  jsontext.Value `json:"input_schema,omitzero"`
	CacheControl jsontext.Value `json:"cache_control,omitzero"`
	// Strict asks that the tool's name and input follow InputSchema
	// exactly (structured outputs for tools).
	Strict *bool `json:"strict,omitzero"`
	// DeferLoading keeps the tool's definition out of the model's context
	// until the tool search tool finds it (Claude Code sends it); a
	// provider without tool search gets the tool declared up front.
	DeferLoading *bool `json:"defer_loading,omitzero"`
	// InputExamples are example inputs for the model, raw.
	InputExamples jsontext.Value `json:"input_examples,omitzero"`
}

// ToolChoice says whether and which tool the model must use: Type auto,
// any, tool (with Name) or none.
type ToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitzero"`
	DisableParallelToolUse *bool  `json:"disable_parallel_tool_use,omitzero"`
}

// Tool choice types.
const (
	ToolChoiceAuto = "auto"
	ToolChoiceAny  = "any"
	ToolChoiceTool = "tool"
	ToolChoiceNone = "none"
)

// OutputConfig shapes the answer: Format asks for JSON that follows a
// schema (structured outputs). Other members (effort) are kept raw.
type OutputConfig struct {
	Format *OutputFormat  `json:"format,omitzero"`
	Effort jsontext.Value `json:"effort,omitzero"`
}

// OutputFormat is the answer's format: Type "json_schema" with Schema.
type OutputFormat struct {
	Type   string         `json:"type"`
	Schema jsontext.Value `json:"schema,omitzero"`
}

// Metadata describes the request; UserID is an opaque id of the end user.
type Metadata struct {
	UserID string `json:"user_id"`
}

// Message is one turn of the conversation (role user or assistant).
// Content is a JSON string or an array of content blocks (ContentBlock),
// kept raw; Text makes the string form.
type Message struct {
	Role    string         `json:"role"`
	Content jsontext.Value `json:"content"`
}

// Text is s as a JSON string, the plain form of System and Message.Content.
func Text(s string) jsontext.Value {
	b, _ := jsontext.AppendQuote(nil, s) // the error only reports invalid UTF-8, which it replaces
	return b
}

// Message types, roles and content block types.
const (
	TypeMessage   = "message"
	TypeError     = "error"
	RoleUser      = "user"
	RoleAssistant = "assistant"

	BlockText       = "text"
	BlockImage      = "image"
	BlockToolUse    = "tool_use"
	BlockToolResult = "tool_result"
	BlockThinking   = "thinking"
	BlockRedacted   = "redacted_thinking"
	BlockDocument   = "document"

	DeltaText      = "text_delta"
	DeltaInputJSON = "input_json_delta"
	DeltaThinking  = "thinking_delta"
	DeltaSignature = "signature_delta"
)

// Stop reasons.
const (
	StopEndTurn      = "end_turn"
	StopMaxTokens    = "max_tokens"
	StopSequence     = "stop_sequence"
	StopToolUse      = "tool_use"
	StopPauseTurn    = "pause_turn"
	StopRefusal      = "refusal"
	StopContextLimit = "model_context_window_exceeded"
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

// ContentBlock is one block of a message's content, in a request or an
// answer, as one struct for every type: text (Text), image (Source),
// tool_use (ID, Name, Input), tool_result (ToolUseID, Content, IsError),
// thinking (Thinking, Signature), redacted_thinking (Data). Members of other
// types, and cache_control, are kept raw or ignored.
type ContentBlock struct {
	Type      string         `json:"type"`
	Text      *string        `json:"text,omitzero"`
	Source    *ImageSource   `json:"source,omitzero"`
	ID        string         `json:"id,omitzero"`
	Name      string         `json:"name,omitzero"`
	Input     jsontext.Value `json:"input,omitzero"`
	ToolUseID string         `json:"tool_use_id,omitzero"`
	// Content is a tool result's: a string or an array of text and image
	// blocks, raw.
	Content      jsontext.Value `json:"content,omitzero"`
	IsError      *bool          `json:"is_error,omitzero"`
	Thinking     *string        `json:"thinking,omitzero"`
	Signature    string         `json:"signature,omitzero"`
	Data         string         `json:"data,omitzero"`
	CacheControl jsontext.Value `json:"cache_control,omitzero"`
	Citations    jsontext.Value `json:"citations,omitzero"`
}

// TextBlock is a text block holding s.
func TextBlock(s string) ContentBlock { return ContentBlock{Type: BlockText, Text: &s} }

// TextOf is a block's text, "" when it has none.
func (b *ContentBlock) TextOf() string {
	if b.Text == nil {
		return ""
	}
	return *b.Text
}

// ImageSource is an image block's image: Type "base64" with MediaType and
// Data, "url" with URL, or "file" with FileID (an uploaded file). A
// document block's source has the same shape, plus Type "text" (Data is
// plain text) and "content" (its blocks, not modelled).
type ImageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitzero"`
	Data      string `json:"data,omitzero"`
	URL       string `json:"url,omitzero"`
	FileID    string `json:"file_id,omitzero"`
}

// Image and document source types.
const (
	SourceBase64  = "base64"
	SourceURL     = "url"
	SourceFile    = "file"
	SourceText    = "text"
	SourceContent = "content"
)

// ThinkingConfig is the thinking member of a request, for a reader that
// needs it (MessagesRequest keeps it raw): Type "enabled" with
// BudgetTokens, "adaptive" (the model decides) or "disabled".
type ThinkingConfig struct {
	Type         string `json:"type"`
	BudgetTokens *int   `json:"budget_tokens,omitzero"`
}

// Thinking types.
const (
	ThinkingEnabled  = "enabled"
	ThinkingAdaptive = "adaptive"
	ThinkingDisabled = "disabled"
)

// Usage counts a request's tokens. InputTokens excludes the tokens written
// to and read from the prompt cache, which are counted apart. Every member
// is a pointer: a message_delta event may carry only some of them.
type Usage struct {
	InputTokens              *int `json:"input_tokens,omitzero"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens,omitzero"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens,omitzero"`
	OutputTokens             *int `json:"output_tokens,omitzero"`
}

// CountTokensResponse is the answer of POST /v1/messages/count_tokens,
// whose request is a MessagesRequest without max_tokens (stream and
// sampling members have no meaning there): the input tokens the request
// would be billed.
type CountTokensResponse struct {
	InputTokens int `json:"input_tokens"`
}
