package translate

import (
	"bytes"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/openai"
)

// openAIToOpenAI passes a chat-completions request through to a provider
// of the same protocol: the body as the caller sent it but for model, and
// in a stream stream_options.include_usage (the gateway bills the
// provider's counts, which a stream reports only when asked). The answer
// and its chunks come back as the provider sent them but for model, and
// for the usage the caller did not ask for.
type openAIToOpenAI struct{}

func (openAIToOpenAI) Request(req *ChatRequest, model string) ([][]byte, error) {
	o, err := memberSpans(req.Body, "model", "stream_options")
	if err != nil {
		return nil, err // the server validated the body: a defect, not a caller's error
	}
	set := []memberValue{{"model", quoted(model)}}
	if req.Stream {
		opts := includeUsage
		if sp, ok := o.found["stream_options"]; ok {
			if opts, err = withIncludeUsage(sp.value); err != nil {
				return nil, err
			}
		}
		set = append(set, memberValue{"stream_options", opts})
	}
	return splice(req.Body, setMembers(o, set...)), nil
}

var includeUsage = []byte(`{"include_usage":true}`)

// withIncludeUsage is a stream_options object (or null) with
// include_usage true and its other members kept.
func withIncludeUsage(opts jsontext.Value) ([]byte, error) {
	if opts.Kind() != '{' {
		return includeUsage, nil
	}
	var w objectWriter
	w.begin(nil)
	err := eachMember(opts, func(m *member) error {
		if m.name != "include_usage" {
			w.raw(m.rawName, m.value)
		}
		return nil
	})
	w.set("include_usage", []byte("true"))
	return w.end(), err
}

// oaiSaid is what the gateway reads of a message or a delta: what it says,
// for its own count when the provider reports no usage, and (in a delta)
// whether it says anything at all (the commit point).
type oaiSaid struct {
	Content   *string `json:"content"`
	Refusal   *string `json:"refusal"`
	ToolCalls []struct {
		Function struct {
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// appendText appends what s says to b; said reports whether it says
// anything (a tool call says something even with empty arguments).
func (s *oaiSaid) appendText(b []byte) (_ []byte, said bool) {
	for _, p := range []*string{s.Content, s.Refusal} {
		if p != nil && *p != "" {
			said = true
			b = append(b, *p...)
		}
	}
	for _, tc := range s.ToolCalls {
		said = true
		b = append(b, tc.Function.Arguments...)
	}
	return b, said
}

// oaiAnswerChoice is what the gateway reads of an answer's choice.
type oaiAnswerChoice struct {
	Message      oaiSaid   `json:"message"`
	FinishReason laxReason `json:"finish_reason"`
}

func (openAIToOpenAI) Answer(raw []byte, m *Meta) (*Answer, error) {
	a := &Answer{}
	var choices []oaiAnswerChoice
	body, err := relayObject(make([]byte, 0, len(raw)+len(m.Alias)+1), raw, m.Alias, "malformed response JSON", func(mb *member) (bool, error) {
		switch mb.name {
		case "choices":
			if err := json.Unmarshal(mb.value, &choices, lenient); err != nil {
				return false, malformed("malformed choices in the response")
			}
		case "usage":
			if mb.value.Kind() != 'n' {
				var u openai.Usage
				if err := json.Unmarshal(mb.value, &u, lenient); err != nil {
					return false, malformed("malformed usage in the response")
				}
				a.Usage = oaiUsage(&u)
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if len(choices) == 0 {
		return nil, malformed("response has no choices")
	}
	a.Body = append(body, '\n')
	a.FinishReason = string(choices[0].FinishReason)
	if a.Usage == nil {
		var text []byte
		for i := range choices {
			text, _ = choices[i].Message.appendText(text)
		}
		a.Text = string(text)
	}
	return a, nil
}

func (openAIToOpenAI) Stream(m *Meta) ChatStream { return &oaiPassStream{meta: m} }

// oaiPassStream relays one stream's chunks.
type oaiPassStream struct {
	meta *Meta
	buf  []byte
	// id and created of the last chunk, for a usage chunk End adds.
	id, created  []byte
	usageRelayed bool
	choices      []oaiChunkChoice
}

// oaiChunkChoice is what the gateway reads of a chunk's choice: whether it
// says anything (the commit point) and what, for its own count; why it
// finished, for the gateway's telemetry.
type oaiChunkChoice struct {
	Index        laxIndex  `json:"index"`
	FinishReason laxReason `json:"finish_reason"`
	Delta        struct {
		oaiSaid      `json:",inline"`
		FunctionCall *struct {
			Arguments string `json:"arguments"`
		} `json:"function_call"`
		// Reasoning as compatible servers stream it (DeepSeek, vLLM,
		// OpenRouter): not text the caller bills, but something said.
		ReasoningContent *string `json:"reasoning_content"`
		Reasoning        *string `json:"reasoning"`
	} `json:"delta"`
}

var doneMarker = []byte("[DONE]")

func (s *oaiPassStream) Event(_, data []byte, out []Chunk) ([]Chunk, bool, error) {
	if bytes.Equal(data, doneMarker) {
		return out, true, nil
	}
	var c Chunk
	s.choices = s.choices[:0]
	hasChoices := false
	buf, err := relayObject(s.buf[:0], data, s.meta.Alias, "malformed stream chunk JSON", func(mb *member) (bool, error) {
		switch mb.name {
		case "id":
			s.id = append(s.id[:0], mb.value...)
		case "created":
			s.created = append(s.created[:0], mb.value...)
		case "choices":
			clear(s.choices[:cap(s.choices)])
			if err := json.Unmarshal(mb.value, &s.choices, lenient); err != nil {
				return false, malformed("malformed stream chunk JSON")
			}
			hasChoices = len(s.choices) > 0
		case "usage":
			if mb.value.Kind() != 'n' {
				var u openai.Usage
				if err := json.Unmarshal(mb.value, &u, lenient); err != nil {
					return false, malformed("malformed stream chunk JSON")
				}
				c.Usage = oaiUsage(&u)
			}
			return s.meta.IncludeUsage, nil // relayed only when the caller asked for it
		}
		return true, nil
	})
	if err != nil {
		return out, false, err
	}
	s.buf = buf
	var text []byte
	for i := range s.choices {
		d := &s.choices[i].Delta
		var said bool
		text, said = d.appendText(text)
		if d.FunctionCall != nil {
			said = true
			text = append(text, d.FunctionCall.Arguments...)
		}
		if said || deref(d.ReasoningContent) != "" || deref(d.Reasoning) != "" {
			c.Commit = true
		}
		if s.choices[i].Index == 0 && s.choices[i].FinishReason != "" {
			c.FinishReason = string(s.choices[i].FinishReason) // the first choice's, as in an answer
		}
	}
	c.Text = string(text)
	switch {
	case c.Usage != nil && !hasChoices && !s.meta.IncludeUsage:
		// A usage-only chunk the caller did not ask for: counted, not sent.
	default:
		c.Data = s.buf
		if c.Usage != nil {
			s.usageRelayed = true
		}
	}
	return append(out, c), false, nil
}

func (s *oaiPassStream) End(u Usage, out []Chunk) []Chunk {
	if !s.meta.IncludeUsage || s.usageRelayed {
		return out
	}
	c := openai.ChatCompletionChunk{ID: s.meta.ID, Object: openai.ObjectChunk, Created: s.meta.Created, Model: s.meta.Alias,
		Choices: []openai.ChunkChoice{}, Usage: openai.ChunkUsage{Usage: UsageJSON(u)}}
	// The provider's id and created, as its other chunks had them (a
	// member of another type than the protocol's keeps the gateway's).
	var id string
	if json.Unmarshal(s.id, &id, lenient) == nil {
		c.ID = id
	}
	var created int64
	if json.Unmarshal(s.created, &created, lenient) == nil {
		c.Created = created
	}
	return append(out, Chunk{Data: appendJSON(nil, &c)})
}

// oaiUsage reads the protocol's counts; the details objects are optional.
func oaiUsage(u *openai.Usage) *Usage {
	out := &Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		out.CachedInputTokens = d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		out.ReasoningTokens = d.ReasoningTokens
	}
	return out
}

// UsageJSON is u in the protocol's shape, details included.
func UsageJSON(u Usage) *openai.Usage {
	return &openai.Usage{
		PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens,
		PromptTokensDetails:     &openai.PromptTokensDetails{CachedTokens: u.CachedInputTokens},
		CompletionTokensDetails: &openai.CompletionTokensDetails{ReasoningTokens: u.ReasoningTokens},
	}
}

// upstreamError is the Failure an "error" member reports.
func upstreamError(v jsontext.Value) *Failure {
	var d openai.ErrorDetail
	if err := json.Unmarshal(v, &d, lenient); err != nil {
		var s string
		if json.Unmarshal(v, &s, lenient) == nil {
			return &Failure{Message: s}
		}
		return malformed("malformed error object")
	}
	typ := d.Type
	if typ == "" {
		typ = d.CodeString()
	}
	return &Failure{Type: typ, Message: d.Message}
}

// asFailure keeps a Failure and turns any other error (the JSON itself is
// invalid) into a malformed one.
func asFailure(err error, msg string) *Failure {
	if f, ok := err.(*Failure); ok {
		return f
	}
	return malformed(msg)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
