package openai

import (
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Usage counts a request's tokens. Cached tokens are part of PromptTokens,
// reasoning tokens part of CompletionTokens; the details objects are optional
// (older servers and most compatible ones leave them out).
type Usage struct {
	PromptTokens            int                      `json:"prompt_tokens"`
	CompletionTokens        int                      `json:"completion_tokens"`
	TotalTokens             int                      `json:"total_tokens"`
	PromptTokensDetails     *PromptTokensDetails     `json:"prompt_tokens_details,omitzero"`
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitzero"`
}

// PromptTokensDetails breaks PromptTokens down.
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// CompletionTokensDetails breaks CompletionTokens down.
type CompletionTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// ChunkUsage is a chunk's "usage" member, which has three forms: a stream
// whose request set stream_options.include_usage has it in every chunk, null
// (Null set) in all but the last one, which carries the counts (Usage set);
// other streams have no member at all (the zero ChunkUsage, omitted by
// omitzero). Reading null or no member leaves Usage nil. The methods have
// pointer receivers so that marshaling a chunk does not box its usage.
type ChunkUsage struct {
	*Usage
	Null bool // write null when Usage is nil
}

// IsZero reports whether the member is left out.
func (u *ChunkUsage) IsZero() bool { return u.Usage == nil && !u.Null }

// MarshalJSONTo writes the counts, or null.
func (u *ChunkUsage) MarshalJSONTo(enc *jsontext.Encoder) error {
	if u.Usage == nil {
		return enc.WriteToken(jsontext.Null)
	}
	return jsonv2.MarshalEncode(enc, u.Usage)
}

// UnmarshalJSONFrom reads the counts or null.
func (u *ChunkUsage) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if dec.PeekKind() == 'n' {
		_, err := dec.ReadToken()
		*u = ChunkUsage{Null: true}
		return err
	}
	*u = ChunkUsage{Usage: new(Usage)}
	return jsonv2.UnmarshalDecode(dec, u.Usage)
}
