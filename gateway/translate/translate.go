// Package translate carries a caller's request to a route's provider and
// the provider's answer back: one translator per pair (the caller's
// protocol → the provider's protocol), pure functions over wire bytes,
// named <ingress>_<provider>.go. A pair of the same protocol passes the
// body through, changing only what the gateway must (the model, and in a
// stream the request for usage); a pair of two protocols translates
// request, JSON answer and event stream both ways.
//
// A request a pair cannot carry (a parameter its provider protocol has no
// equivalent for) is refused with *NotCarried before anything is sent: the
// router passes over that route. A provider's answer that is malformed, or
// that reports an error inside a 2xx answer or stream, is a *Failure.
//
// Nothing here does I/O, keeps state beyond one stream, or logs: prompts
// and completions pass through these functions and go nowhere else.
package translate

import "strings"

// Usage counts tokens as the provider reported them, in OpenAI's
// semantics: CachedInputTokens are part of InputTokens (served from the
// provider's prompt cache), ReasoningTokens part of OutputTokens (spent on
// reasoning the caller does not see).
type Usage struct {
	InputTokens, OutputTokens          int
	CachedInputTokens, ReasoningTokens int
}

// Meta is what a translator writes into the answers it builds: the alias
// the caller asked for (every answer's model), and for answers the gateway
// writes itself (a translated answer, a usage chunk it adds) their id and
// creation time.
type Meta struct {
	Alias   string
	ID      string // "chatcmpl-<request id>"
	Created int64  // Unix seconds
	// IncludeUsage: the caller asked for the usage chunk at the end of a
	// stream (stream_options.include_usage).
	IncludeUsage bool
}

// ChatRequest is a caller's generation request (POST /v1/chat/completions,
// /v1/messages, /v1/responses) as the gateway read it: the body exactly as sent (a JSON
// object the server has validated strictly for the members it reads) and
// those members.
type ChatRequest struct {
	Body         []byte
	Stream       bool
	IncludeUsage bool
}

// EmbeddingRequest is a caller's POST /v1/embeddings: the body as sent.
type EmbeddingRequest struct {
	Body []byte
}

// Answer is a provider's JSON answer in the caller's protocol.
type Answer struct {
	Body  []byte // the answer to write, its model the alias
	Usage *Usage // nil when the provider reported none
	// Text is what the answer says (content, refusal, tool call arguments),
	// for the gateway's own count when Usage is nil; empty otherwise.
	Text string
	// FinishReason is why the model stopped, as the provider said it in its
	// own protocol, whatever protocol Body is written in: chat-completions'
	// finish_reason ("stop", "length", "tool_calls", "content_filter"),
	// Messages' stop_reason ("end_turn", "max_tokens", "tool_use"...), the
	// Responses API's incomplete_details.reason or else its status
	// (rrReason). Of an answer with several choices, the first one's. ""
	// when the provider gave none. It is for the gateway's telemetry: Body
	// says it already, in the caller's terms.
	FinishReason string
}

// Chunk is one event of a stream in the caller's protocol, ready to write.
type Chunk struct {
	// Event is the SSE event name the caller's protocol gives this event
	// (Anthropic Messages: message_start, content_block_delta...); "" for a
	// protocol whose events have none (chat-completions).
	Event string
	// Data is the event's data (for chat-completions a chat.completion.chunk
	// JSON object, model the alias), without the "data: " and blank line;
	// nil when the event carried only what the caller did not ask for (the
	// usage of a stream without include_usage).
	Data []byte
	// Commit: the chunk carries content, a refusal, a tool call or
	// reasoning, so it is the commit point if none came before: from it on
	// the stream belongs to this route, and no fallback can follow.
	Commit bool
	// Text is what the chunk says (content, refusal, tool call arguments),
	// counted by the gateway once the chunk reached the caller.
	Text string
	// Usage is set on the chunk that reports the provider's counts, whether
	// Data relays them or not.
	Usage *Usage
	// FinishReason is the provider's reason, as Answer's (of choice 0 in a
	// chat-completions stream), set on the one chunk that tells the caller
	// why the answer ended: chat-completions' chunk with finish_reason,
	// Messages' message_delta, the Responses API's response.completed or
	// .incomplete. A translated stream whose protocol says it last writes
	// that chunk in End (Messages and Responses from a chat provider,
	// Responses from a Messages one), so read End's chunks too. "" on every
	// other chunk, and on that one when the provider gave no reason.
	FinishReason string
}

// ChatPair is one (caller's generation protocol → provider protocol)
// translator: chat-completions (Chat) or Anthropic Messages (Messages)
// requests to a provider's chat endpoint, and its answers back.
type ChatPair interface {
	// Request is the body to send for req, with model the provider's model
	// name, as segments to send one after the other (a pass-through body is
	// the caller's, with a few members changed: its segments share the
	// caller's bytes, so that a request holds one copy of a large body);
	// a *NotCarried when the provider protocol cannot carry req.
	Request(req *ChatRequest, model string) ([][]byte, error)
	// Answer reads a 2xx JSON answer; a *Failure when it is malformed or an
	// error.
	Answer(raw []byte, m *Meta) (*Answer, error)
	// Stream returns the reader of one stream's events.
	Stream(m *Meta) ChatStream
}

// ChatStream turns the events of one provider stream into the caller's
// protocol's events.
type ChatStream interface {
	// Event reads one SSE event (its name, "" when it has none, and its
	// data) and appends the chunks it yields to out. done reports the
	// protocol's end of stream; a *Failure an error event or malformed
	// data. Chunk data may share memory with the translator: each Event
	// call invalidates the chunks the previous one appended.
	Event(typ, data []byte, out []Chunk) (_ []Chunk, done bool, err error)
	// End appends the chunks that close a stream that ended cleanly: with
	// Meta.IncludeUsage a usage chunk reporting u (the counts the gateway
	// bills) unless the provider's own usage chunk was relayed already.
	End(u Usage, out []Chunk) []Chunk
}

// StreamFailer is implemented by a ChatStream whose protocol ends a failed
// stream with an event of its own (the Responses API's response.failed):
// the server calls Fail instead of writing its generic error event. code
// and message are what the caller is told (already redacted); Fail appends
// the closing event to out.
type StreamFailer interface {
	Fail(code, message string, out []Chunk) []Chunk
}

// EmbeddingPair is one (embeddings → provider protocol) translator.
type EmbeddingPair interface {
	// Request: as ChatPair's; a *NotCarried when the provider protocol
	// has no embeddings.
	Request(req *EmbeddingRequest, model string) ([][]byte, error)
	Answer(raw []byte, m *Meta) (*Answer, error)
}

// NotCarried says why a route's provider protocol cannot carry a request.
type NotCarried struct {
	// Param is the request's parameter, in the API's notation
	// ("tools[0].type"); "" for the whole request. It may hold a name the
	// caller chose, as sent: whoever shows it makes it safe first.
	Param  string
	Reason string // what the provider protocol lacks, for the caller's 400
}

func (e *NotCarried) Error() string {
	if e.Param == "" {
		return e.Reason
	}
	return e.Param + ": " + e.Reason
}

// Failure is a provider's 2xx answer or stream event that reports an
// error (Type and Message are the provider's, not yet redacted) or cannot
// be read (Malformed).
type Failure struct {
	Malformed bool
	Type      string
	Message   string
}

func (e *Failure) Error() string {
	var b strings.Builder
	if e.Malformed {
		b.WriteString("malformed: ")
	}
	if e.Type != "" {
		b.WriteString(e.Type + ": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

func malformed(msg string) *Failure { return &Failure{Malformed: true, Message: msg} }
