package translate

import "github.com/go-json-experiment/json/jsontext"

// The pass-through pairs read a provider's finish reason only for the
// gateway's telemetry (Answer.FinishReason, Chunk.FinishReason). They relay
// whatever the provider sent, so a reason (or the index of its choice) of a
// type the protocol does not give it must not turn an answer the caller
// could read into a malformed one: these types read what they can and take
// anything else as unknown. The translating pairs decode the reason into
// the wire types, which they need to write the caller's.

// laxReason is a finish_reason or stop_reason member: its string, "" for
// null or a value of another type.
type laxReason string

// UnmarshalJSONFrom reads a string, and skips anything else.
func (r *laxReason) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if dec.PeekKind() != '"' {
		*r = ""
		return dec.SkipValue()
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	*r = laxReason(tok.String())
	return nil
}

// laxIndex is a chat choice's index: the number (an absent or null one is
// 0, as servers that send one choice may leave it out); -1, no choice's,
// for a number that is no int or a value of another type.
type laxIndex int

// UnmarshalJSONFrom reads a number, and skips anything else.
func (i *laxIndex) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case '0':
	case 'n':
		*i = 0
		return dec.SkipValue()
	default:
		*i = -1
		return dec.SkipValue()
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	n, err := tok.Int()
	if err != nil || n != int64(int(n)) {
		n = -1 // a fraction, or beyond an int: no choice's index
	}
	*i = laxIndex(n)
	return nil
}
