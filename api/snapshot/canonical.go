package snapshot

import (
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The canonical form (see Encode) and the compact form of the parts
// (shard.go) are written by one codec, github.com/go-json-experiment/json:
// json.Marshal writes a value's struct fields in declaration order, then
// jsontext's Format sorts every object's members in place. Format sorts by
// the UTF-16 code units of the names (RFC 8785); the schema's names are its
// fields' ASCII JSON names, for which that is bytewise order.

// marshalOptions spell values the way the canonical form always has: a nil
// slice is null, each invalid UTF-8 byte becomes U+FFFD, U+2028 and U+2029
// are escaped, '<', '>' and '&' are written as they are. The snapshot's
// types are structs without maps, whose JSON cannot repeat a name, so the
// encoder does not check for repeats.
var marshalOptions = json.JoinOptions(
	json.FormatNilSliceAsNull(true),
	jsontext.AllowInvalidUTF8(true),
	jsontext.EscapeForJS(true),
	jsontext.AllowDuplicateNames(true),
)

// compactDepth asks appendJSON for the compact form.
const compactDepth = -1

// appendJSON appends v's JSON with sorted members. At depth >= 0 it is
// written as it appears at that nesting depth of the canonical form (the
// snapshot is depth 0, each of its keys depth 2): every member and element
// on its own line, indented two spaces a level, a space after each colon.
// At compactDepth it has no whitespace at all.
func appendJSON(b []byte, v any, depth int) ([]byte, error) {
	opts := marshalOptions
	if depth != compactDepth {
		opts = json.JoinOptions(marshalOptions, jsontext.WithIndentPrefix(strings.Repeat("  ", depth)), jsontext.WithIndent("  "))
	}
	raw, err := json.Marshal(v, opts)
	if err != nil {
		return nil, err
	}
	val := jsontext.Value(raw)
	if err := val.Format(opts, jsontext.ReorderRawObjects(true)); err != nil {
		return nil, err
	}
	if b == nil {
		return val, nil
	}
	return append(b, val...), nil
}
