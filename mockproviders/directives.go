package mockproviders

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/go-json-experiment/json/jsontext"
)

// DirectivePrefix starts a fault directive line in the last user turn (see lastTurn).
const DirectivePrefix = "@mock"

// Fault is what one directive asks of one flavor, after `*` items and that flavor's
// own items are merged. The zero Fault asks for nothing. Has tells which keys were
// given, because 0 is a meaningful value for the *_after keys.
type Fault struct {
	Status           int  // status=N: answer with this HTTP status (400..599) and the protocol's error body
	RetryAfter       int  // retry_after=S: Retry-After header (seconds) on the Status answer
	DelayMS          int  // delay_ms=N: wait before response headers
	FirstByteDelayMS int  // first_byte_delay_ms=N: headers flushed, then wait before the first body byte
	Chunks           int  // chunks=N: content pieces in the answer (>= 1)
	ChunkDelayMS     int  // chunk_delay_ms=N: wait between content pieces
	DropAfter        int  // drop_after=N: N content pieces, then the connection is cut
	ErrorAfter       int  // error_after=N: N content pieces, then the protocol's error event
	StallAfter       int  // stall_after=N: N content pieces, then silence until the client leaves
	NoUsage          bool // no_usage=1: usage is left out
	// cached_tokens=N: N of the prompt's tokens are reported as read from a
	// prompt cache (at most all of them); they stay part of the input count.
	CachedTokens int
	// reasoning_tokens=N: the answer spent N more tokens on reasoning the
	// client does not see; they are added to the output count.
	ReasoningTokens int
	// tool=NAME: answer with a call of the offered tool NAME; "first" (when
	// no tool has that name) calls the first tool offered. See tools.go.
	Tool string
	// args=JSON: the arguments of the tool called, a JSON object on the
	// directive's line (spaces allowed inside it), kept in compact form.
	Args string

	set uint16 // a bit per faultKeys entry
}

// faultKey is one key of the grammar: an integer key (get, min, max) or a
// text key (str, with parse to check and canonicalise the value).
type faultKey struct {
	name     string
	min, max int
	get      func(*Fault) *int
	str      func(*Fault) *string
	parse    func(string) (string, error)
}

// faultKeys is the grammar's key table; its order is the canonical label order.
var faultKeys = []faultKey{
	intKey("status", 400, 599, func(f *Fault) *int { return &f.Status }),
	intKey("retry_after", 0, 86400, func(f *Fault) *int { return &f.RetryAfter }),
	intKey("delay_ms", 0, maxDelayMS, func(f *Fault) *int { return &f.DelayMS }),
	intKey("first_byte_delay_ms", 0, maxDelayMS, func(f *Fault) *int { return &f.FirstByteDelayMS }),
	intKey("chunks", 1, MaxChunks, func(f *Fault) *int { return &f.Chunks }),
	intKey("chunk_delay_ms", 0, maxDelayMS, func(f *Fault) *int { return &f.ChunkDelayMS }),
	intKey("drop_after", 0, MaxChunks, func(f *Fault) *int { return &f.DropAfter }),
	intKey("error_after", 0, MaxChunks, func(f *Fault) *int { return &f.ErrorAfter }),
	intKey("stall_after", 0, MaxChunks, func(f *Fault) *int { return &f.StallAfter }),
	intKey("no_usage", 0, 1, nil),
	intKey("cached_tokens", 0, maxUsageTokens, func(f *Fault) *int { return &f.CachedTokens }),
	intKey("reasoning_tokens", 0, maxUsageTokens, func(f *Fault) *int { return &f.ReasoningTokens }),
	{name: "tool", str: func(f *Fault) *string { return &f.Tool }, parse: parseToolName},
	{name: "args", str: func(f *Fault) *string { return &f.Args }, parse: parseArgs},
}

func intKey(name string, lo, hi int, get func(*Fault) *int) faultKey {
	return faultKey{name: name, min: lo, max: hi, get: get}
}

const (
	// MaxChunks bounds chunks and the *_after keys so a typo cannot make a huge answer.
	MaxChunks = 10000
	// maxDelayMS is one hour: long enough for any timeout test, short enough to notice.
	maxDelayMS = 3_600_000
	// maxUsageTokens bounds cached_tokens and reasoning_tokens.
	maxUsageTokens = 1_000_000
	// maxArgsBytes bounds an args= value.
	maxArgsBytes = 16 << 10
	// maxToolName is Anthropic's limit; alpha's own (64) is checked on the tools.
	maxToolName = 128
)

func keyIndex(name string) int {
	for i, k := range faultKeys {
		if k.name == name {
			return i
		}
	}
	return -1
}

// Has reports whether the directive gave key (a grammar key such as "drop_after").
func (f Fault) Has(key string) bool {
	i := keyIndex(key)
	return i >= 0 && f.set&(1<<i) != 0
}

// IsZero reports whether no key was given.
func (f Fault) IsZero() bool { return f.set == 0 }

func (f *Fault) put(i, v int) {
	if k := faultKeys[i]; k.get != nil {
		*k.get(f) = v
	} else {
		f.NoUsage = v == 1
	}
	f.set |= 1 << i
}

func (f *Fault) putText(i int, v string) {
	*faultKeys[i].str(f) = v
	f.set |= 1 << i
}

// copyKey sets key i of f to its value in from.
func (f *Fault) copyKey(i int, from *Fault) {
	if k := faultKeys[i]; k.str != nil {
		f.putText(i, *k.str(from))
	} else {
		f.put(i, from.value(i))
	}
}

func (f Fault) value(i int) int {
	if k := faultKeys[i]; k.get != nil {
		return *k.get(&f)
	}
	if f.NoUsage {
		return 1
	}
	return 0
}

// Labels lists the given keys as "key=value" in canonical order; /mock/calls counts these.
func (f Fault) Labels() []string {
	var out []string
	for i, k := range faultKeys {
		switch {
		case f.set&(1<<i) == 0:
		case k.str != nil:
			out = append(out, k.name+"="+*k.str(&f))
		default:
			out = append(out, k.name+"="+strconv.Itoa(f.value(i)))
		}
	}
	return out
}

// String is the space-separated Labels, without a target.
func (f Fault) String() string { return strings.Join(f.Labels(), " ") }

// isDirectiveLine: the first field must be exactly @mock, so "@mockingbird" is prose.
func isDirectiveLine(line string) bool {
	rest, ok := strings.CutPrefix(strings.TrimLeft(line, " \t"), DirectivePrefix)
	return ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\r')
}

// StripDirectives removes every @mock line (with its line break) from text and
// returns the rest and the removed lines. Everything the mock derives — output
// words, input tokens — is computed on the rest.
func StripDirectives(text string) (clean string, lines []string) {
	if !strings.Contains(text, DirectivePrefix) {
		return text, nil
	}
	var b strings.Builder
	for rest := text; rest != ""; {
		line, tail, found := strings.Cut(rest, "\n")
		if isDirectiveLine(line) {
			lines = append(lines, strings.TrimRight(line, "\r"))
		} else {
			b.WriteString(line)
			if found {
				b.WriteByte('\n')
			}
		}
		rest = tail
	}
	return b.String(), lines
}

// ParseDirectives parses every @mock line in text (other lines are ignored) and
// returns the resolved Fault for each flavor; both map entries are always present
// when err is nil. Items are TARGET:KEY=VALUE with TARGET alpha, beta or *,
// separated by whitespace (an args= value is one JSON object and may hold
// spaces); a flavor's own item overrides a * item with the same key. Errors
// name the offending item: unknown target or key, a value that is not a
// decimal integer in the key's range (or not a tool name, or not a JSON
// object), the same TARGET:KEY twice, or more than one of drop_after,
// error_after and stall_after resolving for one flavor.
func ParseDirectives(text string) (map[Flavor]Fault, error) {
	_, lines := StripDirectives(text)
	byTarget := map[string]*Fault{"*": {}, string(Alpha): {}, string(Beta): {}}
	for _, line := range lines {
		for _, item := range directiveItems(strings.TrimPrefix(strings.TrimLeft(line, " \t"), DirectivePrefix)) {
			if err := parseItem(byTarget, item); err != nil {
				return nil, err
			}
		}
	}
	out := make(map[Flavor]Fault, 2)
	for _, fl := range []Flavor{Alpha, Beta} {
		f := *byTarget["*"]
		own := byTarget[string(fl)]
		for i := range faultKeys {
			if own.set&(1<<i) != 0 {
				f.copyKey(i, own)
			}
		}
		n := 0
		for _, k := range []string{"drop_after", "error_after", "stall_after"} {
			if f.Has(k) {
				n++
			}
		}
		if n > 1 {
			return nil, fmt.Errorf("@mock: %s gets more than one of drop_after, error_after, stall_after (%s)", fl, f)
		}
		out[fl] = f
	}
	return out, nil
}

func parseItem(byTarget map[string]*Fault, item string) error {
	shown := shorten(item)
	target, kv, ok := strings.Cut(item, ":")
	if !ok {
		return fmt.Errorf("@mock: item %q is not TARGET:KEY=VALUE", shown)
	}
	f, ok := byTarget[target]
	if !ok {
		return fmt.Errorf("@mock: item %q: unknown target %q (want alpha, beta or *)", shown, shorten(target))
	}
	key, val, ok := strings.Cut(kv, "=")
	if !ok {
		return fmt.Errorf("@mock: item %q is not TARGET:KEY=VALUE", shown)
	}
	i := keyIndex(key)
	if i < 0 {
		return fmt.Errorf("@mock: item %q: unknown key %q", shown, shorten(key))
	}
	k := faultKeys[i]
	if f.set&(1<<i) != 0 {
		return fmt.Errorf("@mock: item %q: %s:%s given twice", shown, target, key)
	}
	if k.str != nil {
		v, err := k.parse(val)
		if err != nil {
			return fmt.Errorf("@mock: item %q: %s %w", shown, key, err)
		}
		f.putText(i, v)
		return nil
	}
	v, err := parseDecimal(val)
	if err != nil || v < k.min || v > k.max {
		return fmt.Errorf("@mock: item %q: %s wants an integer in %d..%d", shown, key, k.min, k.max)
	}
	f.put(i, v)
	return nil
}

// directiveItems splits a directive line's items at whitespace, except
// that an args= value runs to the end of its JSON value, so arguments may
// be written with spaces. A value that is not JSON ends at whitespace and
// is refused by parseArgs.
func directiveItems(line string) []string {
	var items []string
	for rest := strings.TrimLeftFunc(line, unicode.IsSpace); rest != ""; rest = strings.TrimLeftFunc(rest, unicode.IsSpace) {
		end := strings.IndexFunc(rest, unicode.IsSpace)
		if end < 0 {
			end = len(rest)
		}
		if _, kv, ok := strings.Cut(rest[:end], ":"); ok && strings.HasPrefix(kv, "args=") {
			at := len(rest[:end]) - len(kv) + len("args=")
			dec := jsontext.NewDecoder(strings.NewReader(rest[at:]))
			if _, err := dec.ReadValue(); err == nil {
				if n := at + int(dec.InputOffset()); n > end {
					end = n
				}
			}
		}
		items = append(items, rest[:end])
		rest = rest[end:]
	}
	return items
}

// toolNameOK is the tool-name rule both vendors share (OpenAI allows 64
// characters, Anthropic 128).
func toolNameOK(s string, maxLen int) bool {
	if s == "" || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func parseToolName(s string) (string, error) {
	if !toolNameOK(s, maxToolName) {
		return "", fmt.Errorf("wants a tool name (1..%d of A-Z a-z 0-9 _ -)", maxToolName)
	}
	return s, nil
}

// parseArgs accepts one JSON object and keeps it compact, so a rendered
// directive parses back to the same value.
func parseArgs(s string) (string, error) {
	v := jsontext.Value(s)
	if len(s) > maxArgsBytes || !v.IsValid() || s[0] != '{' {
		return "", fmt.Errorf("wants a JSON object of at most %d bytes", maxArgsBytes)
	}
	if err := v.Compact(); err != nil {
		return "", fmt.Errorf("wants a JSON object: %w", err)
	}
	return string(v), nil
}

// shorten keeps error messages readable when a directive item is long garbage.
func shorten(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// parseDecimal accepts plain digits only: no sign, no spaces, no overflow.
func parseDecimal(s string) (int, error) {
	if s == "" || len(s) > 9 {
		return 0, strconv.ErrSyntax
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, strconv.ErrSyntax
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, nil
}
