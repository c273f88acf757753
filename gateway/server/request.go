package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/gateway/provider"
)

// limits bounds what one request may carry; zero values mean "no limit".
type limits struct {
	maxMessages     int
	maxContentChars int
}

// parsedRequest is what the gateway read of a request: what it needs for
// admission and routing. The body goes to each route's translator as the
// caller sent it.
type parsedRequest struct {
	op           provider.Operation
	alias        string
	stream       bool
	includeUsage bool
	inputTokens  int  // the gateway's estimate, for admission
	maxTokens    *int // the output cap the caller set, for admission
	body         []byte
}

const (
	maxModelChars    = 256
	maxTokensCeiling = 1 << 20
	// imageTokens is the estimate of an image part's input tokens for
	// admission (the provider's count is what is billed): about what the
	// largest image costs with either vendor.
	imageTokens = 1600
)

// readMember reads a top-level member the gateway needs; the rest of the
// body is skipped unread (and still checked to be valid JSON).
type readMember struct {
	name string
	into any
}

// readBodyFields reads the members named in fields from body, a JSON
// object, in one pass that copies nothing it skips. The body is read
// strictly, as encoding/json/v2 (github.com/go-json-experiment/json) does
// by default: invalid UTF-8, duplicate names at any depth and anything after
// the object are refused. A member whose name differs from one the gateway
// reads only in case is refused as well: a provider or proxy that matches
// names without regard to case would read it as that member, and the
// gateway would not. A proxy or WAF in front that reads the body
// leniently can therefore never see a different request than the gateway
// does.
func readBodyFields(body []byte, fields []readMember) *apiError {
	if looksCompressed(body) {
		return errCompressed()
	}
	p := decoders.Get().(*pooledDecoder)
	defer p.put()
	p.buf = *bytes.NewBuffer(body)
	p.dec.Reset(&p.buf) // reads body in place: no copy of it
	dec := &p.dec
	if dec.PeekKind() != '{' {
		if _, err := dec.ReadValue(); err != nil {
			return decodeError(err, body)
		}
		return errInvalid("invalid_json", "", "request body must be a JSON object")
	}
	if _, err := dec.ReadToken(); err != nil {
		return decodeError(err, body)
	}
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return decodeError(err, body)
		}
		name := tok.String()
		matched := false
		for _, f := range fields {
			if name == f.name {
				matched = true
				if err := json.UnmarshalDecode(dec, f.into); err != nil {
					return decodeError(err, body)
				}
				break
			}
			if strings.EqualFold(name, f.name) {
				param := safeName(name)
				return errInvalid("duplicate_field", param, "field "+strconv.Quote(param)+" differs from "+
					strconv.Quote(f.name)+" only in case; send it once, as "+strconv.Quote(f.name))
			}
		}
		if !matched {
			if err := dec.SkipValue(); err != nil {
				return decodeError(err, body)
			}
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return decodeError(err, body)
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return errInvalid("invalid_json", "", "request body is not valid JSON")
	}
	return nil
}

// decoders recycles the decoders readBodyFields reads bodies with: a
// jsontext.Decoder holds several KiB of state.
var decoders = sync.Pool{New: func() any { return new(pooledDecoder) }}

type pooledDecoder struct {
	buf bytes.Buffer
	dec jsontext.Decoder
}

func (p *pooledDecoder) put() {
	p.dec.Reset(bytes.NewReader(nil))
	p.buf = bytes.Buffer{}
	decoders.Put(p)
}

// chatFields are the members of a chat request the gateway reads.
type chatFields struct {
	model               string
	messages            []messageText
	tools               jsontext.Value
	maxTokens           *int
	maxCompletionTokens *int
	stream              *bool
	streamOptions       *streamOptions
}

// streamOptions is what the gateway reads of stream_options.
type streamOptions struct {
	IncludeUsage *bool `json:"include_usage"`
}

// parseChatRequest reads and validates what the gateway needs of a chat
// request: the alias, stream and stream_options, the output cap, and the
// messages for the input estimate and the configured limits. Everything else
// is the provider's to judge: a route of the same protocol gets it unchanged,
// one of another protocol translates it or is passed over (gateway/translate).
// Every rejection is a stable 400 (415 for a compressed body) whose code and
// param say what was wrong; the message never quotes the caller's content,
// and names the caller chose only in a short, sanitized, redacted form.
func parseChatRequest(body []byte, lim limits, countTokens func(string) int) (*parsedRequest, *apiError) {
	var f chatFields
	if e := readBodyFields(body, []readMember{
		{"model", &f.model}, {"messages", &f.messages}, {"tools", &f.tools},
		{"max_tokens", &f.maxTokens}, {"max_completion_tokens", &f.maxCompletionTokens},
		{"stream", &f.stream}, {"stream_options", &f.streamOptions},
	}); e != nil {
		return nil, e
	}
	p := &parsedRequest{op: provider.OpChat, body: body}
	if e := checkModel(f.model, p); e != nil {
		return nil, e
	}
	if f.stream != nil {
		p.stream = *f.stream
	}
	if f.streamOptions != nil {
		if !p.stream {
			return nil, errInvalid("invalid_value", "stream_options", "stream_options is only allowed when stream is true")
		}
		p.includeUsage = f.streamOptions.IncludeUsage != nil && *f.streamOptions.IncludeUsage
	}
	if e := checkMaxTokens(&f, p); e != nil {
		return nil, e
	}
	if e := checkMessages(f.messages, lim, p, countTokens); e != nil {
		return nil, e
	}
	if len(f.tools) > 0 {
		p.inputTokens += countTokens(string(f.tools))
	}
	return p, nil
}

func checkModel(model string, p *parsedRequest) *apiError {
	if model == "" {
		return errInvalid("missing_field", "model", "model is required")
	}
	if len(model) > maxModelChars || !printable(model) {
		return errInvalid("invalid_value", "model", "model must be a printable name of at most 256 characters")
	}
	p.alias = model
	return nil
}

func checkMaxTokens(f *chatFields, p *parsedRequest) *apiError {
	if f.maxTokens != nil && f.maxCompletionTokens != nil {
		return errInvalid("invalid_value", "max_completion_tokens", "set max_tokens or max_completion_tokens, not both")
	}
	mt, name := f.maxTokens, "max_tokens"
	if f.maxCompletionTokens != nil {
		mt, name = f.maxCompletionTokens, "max_completion_tokens"
	}
	if mt != nil {
		if *mt < 1 || *mt > maxTokensCeiling {
			return errInvalid("invalid_value", name, fmt.Sprintf("%s must be between 1 and %d", name, maxTokensCeiling))
		}
		p.maxTokens = mt
	}
	return nil
}

func checkMessages(msgs []messageText, lim limits, p *parsedRequest, countTokens func(string) int) *apiError {
	if len(msgs) == 0 {
		return errInvalid("missing_field", "messages", "messages must be a non-empty array")
	}
	if lim.maxMessages > 0 && len(msgs) > lim.maxMessages {
		return errInvalid("too_many_messages", "messages", fmt.Sprintf("at most %d messages are allowed", lim.maxMessages))
	}
	for i := range msgs {
		m := &msgs[i]
		if lim.maxContentChars > 0 && utf8.RuneCountInString(m.text) > lim.maxContentChars {
			return errInvalid("content_too_long", msgParam(i, ".content"), fmt.Sprintf("message content must be at most %d characters", lim.maxContentChars))
		}
		p.inputTokens += countTokens(m.text) + m.images*imageTokens
	}
	return nil
}

// msgParam names a field of messages[i] for an error's param: built only
// when there is an error, as the valid request needs none of these strings.
func msgParam(i int, field string) string {
	return "messages[" + strconv.Itoa(i) + "]" + field
}

// messageText is what the gateway reads of a message: the text of its
// content (a string, or the text of its text parts) and how many image
// parts it has, for the input estimate. Everything else, image data above
// all, is skipped without a copy.
type messageText struct {
	text   string
	images int
}

// errShape is a member whose JSON is not of a shape the gateway reads: its
// text (after the member's param, with at appended) is the 400's message.
type errShape struct{ at, msg string }

func (e *errShape) Error() string { return e.msg }

var (
	errMessageShape = &errShape{msg: "must be an object"}
	errContentShape = &errShape{msg: "must be a string, an array of content parts or null"}
)

// errPartShape is content part j that is not an object.
func errPartShape(j int) error {
	return &errShape{at: "[" + strconv.Itoa(j) + "]", msg: "must be an object with a type"}
}

// readObject reads the object at dec (notObject when there is none),
// calling member with each member's name and the kind of its value while dec
// is at the value: member reads the value and returns true, or returns false
// and the value is skipped.
func readObject(dec *jsontext.Decoder, notObject error, member func(name string, kind jsontext.Kind) (bool, error)) error {
	if dec.PeekKind() != '{' {
		return notObject
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		read, err := member(tok.String(), dec.PeekKind())
		if err != nil {
			return err
		}
		if !read {
			if err := dec.SkipValue(); err != nil {
				return err
			}
		}
	}
	_, err := dec.ReadToken()
	return err
}

// UnmarshalJSONFrom reads one message: the text and images of its content.
func (m *messageText) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return readObject(dec, errMessageShape, func(name string, _ jsontext.Kind) (bool, error) {
		if name != "content" {
			return false, nil
		}
		return true, m.readContent(dec)
	})
}

func (m *messageText) readContent(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case '"':
		tok, err := dec.ReadToken()
		m.text = tok.String()
		return err
	case 'n':
		_, err := dec.ReadToken()
		return err
	case '[':
	default:
		return errContentShape
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	var text strings.Builder
	for j := 0; dec.PeekKind() != ']'; j++ {
		typ, part, err := readPart(dec, j)
		if err != nil {
			return err
		}
		switch typ {
		case "image_url", "image", "input_image":
			m.images++
		}
		text.WriteString(part.text)
		m.images += part.images
	}
	m.text = text.String()
	_, err := dec.ReadToken()
	return err
}

// readPart reads one content part's type and what it says: its text, or
// the text and images of the content a part holds (an Anthropic
// tool_result block), skipping the rest.
func readPart(dec *jsontext.Decoder, j int) (typ string, part messageText, err error) {
	if dec.PeekKind() != '{' {
		return "", part, errPartShape(j) // built only when needed
	}
	err = readObject(dec, nil, func(name string, kind jsontext.Kind) (bool, error) {
		switch {
		case (name == "type" || name == "text") && kind == '"':
			v, err := dec.ReadToken()
			if name == "type" {
				typ = v.String()
			} else {
				part.text += v.String()
			}
			return true, err
		case name == "content" && (kind == '"' || kind == '['):
			return true, part.addContent(dec)
		}
		return false, nil
	})
	return typ, part, err
}

// addContent reads a content value (a string or an array of parts) at dec
// and adds its text and images to m's.
func (m *messageText) addContent(dec *jsontext.Decoder) error {
	var inner messageText
	if err := inner.readContent(dec); err != nil {
		return err
	}
	m.text += inner.text
	m.images += inner.images
	return nil
}

// decodeError turns the decoder's errors into stable codes without echoing
// any of the caller's values; names the caller chose are quoted only through
// safeName.
func decodeError(err error, body []byte) *apiError {
	var semErr *json.SemanticError
	var synErr *jsontext.SyntacticError
	switch {
	case errors.As(err, &synErr):
		switch {
		case errors.Is(synErr.Err, jsontext.ErrDuplicateName):
			param := paramOf(synErr.JSONPointer)
			return errInvalid("duplicate_field", param, "duplicate field "+strconv.Quote(param)+"; every field may appear only once")
		case !utf8.Valid(body):
			return errInvalid("invalid_utf8", paramOf(synErr.JSONPointer), "request body is not valid UTF-8")
		}
		return errInvalid("invalid_json", "", "request body is not valid JSON")
	case errors.As(err, &semErr):
		if errors.Is(semErr.Err, json.ErrUnknownName) {
			// The name only, not its path (documented); clipped and redacted.
			name := safeName(semErr.JSONPointer.LastToken())
			return errInvalid("unknown_parameter", name, "unknown parameter "+strconv.Quote(name)+"; see the compatible subset in docs/protocol.md")
		}
		if semErr.JSONPointer == "" {
			return errInvalid("invalid_json", "", "request body must be a JSON object")
		}
		param := paramOf(semErr.JSONPointer)
		var shape *errShape
		if errors.As(semErr.Err, &shape) {
			param += shape.at
			return errInvalid("invalid_type", param, param+" "+shape.msg)
		}
		if semErr.GoType == nil {
			return errInvalid("invalid_type", param, param+" has the wrong type")
		}
		kind := semErr.GoType.Kind()
		if semErr.JSONKind == '0' && errors.Is(semErr.Err, strconv.ErrRange) {
			return errInvalid("invalid_value", param, param+" is out of range")
		}
		return errInvalid("invalid_type", param, param+" must be "+jsonTypeName(kind))
	default:
		return errInvalid("invalid_json", "", "request body is not valid JSON")
	}
}

// jsonTypeName says in JSON terms what a Go kind accepts.
func jsonTypeName(kind reflect.Kind) string {
	switch kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

const (
	maxNameChars  = 40 // a caller-chosen name quoted in an error
	maxParamChars = 96 // a whole param path built from caller-chosen names
)

// paramOf renders a JSON pointer ("/messages/0/role") in the param notation
// of the API ("messages[0].role"); every name is passed through safeName.
func paramOf(p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if tok != "" && strings.Trim(tok, "0123456789") == "" && b.Len() > 0 {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(safeName(tok))
	}
	return clip(keyformat.Redact(b.String()), maxParamChars)
}

// safeName is the only form in which a name the caller chose may appear in an
// error: keys redacted, anything not printable replaced, at most
// maxNameChars characters. Redaction comes before clipping, so that clipping
// cannot turn a key into a fragment that Redact no longer recognizes.
func safeName(s string) string {
	return clip(printableName(keyformat.Redact(s)), maxNameChars)
}

// safeParam is safeName for a whole param path, which a translator built
// from the caller's names: at most maxParamChars characters.
func safeParam(s string) string {
	return clip(printableName(keyformat.Redact(s)), maxParamChars)
}

// printableName replaces what is not printable, and quotes and
// backslashes, with '?'.
func printableName(s string) string {
	return strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) || r == '"' || r == '\\' {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
}

// clip shortens s to at most n characters, the last one an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for j := range s {
		if count == n-1 {
			i = j
			break
		}
		count++
	}
	return s[:i] + "…"
}

// looksCompressed reports whether a body starts like a gzip, zlib or zstd
// stream. No JSON text can start with these bytes, so this only turns an
// invalid_json rejection into the clearer 415.
func looksCompressed(b []byte) bool {
	switch {
	case len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b: // gzip
		return true
	case len(b) >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd: // zstd
		return true
	case len(b) >= 2 && b[0] == 0x78 && (uint16(b[0])<<8|uint16(b[1]))%31 == 0: // zlib
		return true
	}
	return false
}

func errCompressed() *apiError {
	return &apiError{status: http.StatusUnsupportedMediaType, typ: typeInvalidRequest, code: "unsupported_content_encoding",
		message: "request bodies must not be compressed; send plain JSON without Content-Encoding"}
}

// checkContentEncoding refuses a request whose body is declared compressed
// (any Content-Encoding other than identity) with 415, before the body is read:
// a proxy that inflates bodies and the gateway, which does not, would read
// different requests.
func checkContentEncoding(h http.Header) *apiError {
	for _, v := range h[hdrContentEncoding] {
		for _, enc := range strings.Split(v, ",") {
			if enc = strings.TrimSpace(enc); enc != "" && !strings.EqualFold(enc, "identity") {
				return errCompressed()
			}
		}
	}
	return nil
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}
