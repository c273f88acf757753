package mockproviders

import (
	"bytes"
	"errors"
	"io"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// codec holds the JSON rules of every body the mock reads and writes:
// encoding/json's, laxer than the codec's defaults. Member names match
// regardless of case (underscores and dashes must match), a repeated member
// keeps its last value, invalid UTF-8 reads and writes as U+FFFD, and map
// keys are written sorted, so /mock/calls is deterministic.
var codec = jsonv2.JoinOptions(
	jsonv2.MatchCaseInsensitiveNames(true),
	jsonv1.MatchCaseSensitiveDelimiter(true),
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
	jsonv2.Deterministic(true),
)

func marshal(v any) []byte {
	b, err := jsonv2.Marshal(v, codec)
	if err != nil {
		// Only a type the mock does not write (a channel, a func) fails.
		panic(err)
	}
	return b
}

func unmarshal(b []byte, v any) error { return jsonv2.Unmarshal(b, v, codec) }

// decodeStrict decodes one JSON value and reports trailing data, which real
// vendors reject too.
func decodeStrict(body []byte, v any) error {
	dec := jsontext.NewDecoder(bytes.NewReader(body), codec)
	if err := jsonv2.UnmarshalDecode(dec, v); err != nil {
		return err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return errors.New("unexpected data after the JSON object")
	}
	return nil
}
