package anthropic

// Stream event types: the SSE event name, repeated as the data's "type".
const (
	EventMessageStart      = "message_start"
	EventContentBlockStart = "content_block_start"
	EventContentBlockDelta = "content_block_delta"
	EventContentBlockStop  = "content_block_stop"
	EventMessageDelta      = "message_delta"
	EventMessageStop       = "message_stop"
	EventPing              = "ping"
	EventError             = "error" // its data is an ErrorResponse
)

// MessageStart opens a stream with the message so far (no content yet; the
// usage has the input counts).
type MessageStart struct {
	Type    string          `json:"type"`
	Message MessageResponse `json:"message"`
}

// ContentBlockStart opens the content block at Index.
type ContentBlockStart struct {
	Type         string       `json:"type"`
	Index        int          `json:"index"`
	ContentBlock ContentBlock `json:"content_block"`
}

// ContentBlockDelta adds to the content block at Index.
type ContentBlockDelta struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Delta Delta  `json:"delta"`
}

// Delta is a piece of a content block: Text for text_delta, PartialJSON
// (a piece of a tool_use block's input, as JSON text) for input_json_delta,
// Thinking for thinking_delta, Signature for signature_delta.
type Delta struct {
	Type        string `json:"type"`
	Text        string `json:"text,omitzero"`
	PartialJSON string `json:"partial_json,omitzero"`
	Thinking    string `json:"thinking,omitzero"`
	Signature   string `json:"signature,omitzero"`
}

// ContentBlockStop closes the content block at Index.
type ContentBlockStop struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

// MessageDelta ends the message: why it stopped and the final counts
// (output_tokens, and with some servers the input counts again).
type MessageDelta struct {
	Type  string           `json:"type"`
	Delta MessageDeltaBody `json:"delta"`
	Usage *Usage           `json:"usage,omitzero"`
}

// MessageDeltaBody is the delta of a MessageDelta.
type MessageDeltaBody struct {
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

// TypeOnly is an event whose data is only its type: message_stop and ping.
type TypeOnly struct {
	Type string `json:"type"`
}
