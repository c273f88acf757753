package mockproviders

import (
	"fmt"
	"strconv"
	"strings"
)

// DirectivePrefix starts a fault directive line in the last user message.
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

	set uint16
}

type faultKey struct {
	name     string
	min, max int
	get      func(*Fault) *int
}

// faultKeys is the grammar's key table; its order is the canonical label order.
var faultKeys = []faultKey{
	{"status", 400, 599, func(f *Fault) *int { return &f.Status }},
	{"retry_after", 0, 86400, func(f *Fault) *int { return &f.RetryAfter }},
	{"delay_ms", 0, maxDelayMS, func(f *Fault) *int { return &f.DelayMS }},
	{"first_byte_delay_ms", 0, maxDelayMS, func(f *Fault) *int { return &f.FirstByteDelayMS }},
	{"chunks", 1, MaxChunks, func(f *Fault) *int { return &f.Chunks }},
	{"chunk_delay_ms", 0, maxDelayMS, func(f *Fault) *int { return &f.ChunkDelayMS }},
	{"drop_after", 0, MaxChunks, func(f *Fault) *int { return &f.DropAfter }},
	{"error_after", 0, MaxChunks, func(f *Fault) *int { return &f.ErrorAfter }},
	{"stall_after", 0, MaxChunks, func(f *Fault) *int { return &f.StallAfter }},
	{"no_usage", 0, 1, nil},
	{"cached_tokens", 0, maxUsageTokens, func(f *Fault) *int { return &f.CachedTokens }},
	{"reasoning_tokens", 0, maxUsageTokens, func(f *Fault) *int { return &f.ReasoningTokens }},
}

const (
	// MaxChunks bounds chunks and the *_after keys so a typo cannot make a huge answer.
	MaxChunks = 10000
	// maxDelayMS is one hour: long enough for any timeout test, short enough to notice.
	maxDelayMS = 3_600_000
	// maxUsageTokens bounds cached_tokens and reasoning_tokens.
	maxUsageTokens = 1_000_000
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
		if f.set&(1<<i) != 0 {
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
// when err is nil. Items are TARGET:KEY=VALUE with TARGET alpha, beta or *; a
// flavor's own item overrides a * item with the same key. Errors name the
// offending item: unknown target or key, a value that is not a decimal integer in
// the key's range, the same TARGET:KEY twice, or more than one of drop_after,
// error_after and stall_after resolving for one flavor.
func ParseDirectives(text string) (map[Flavor]Fault, error) {
	_, lines := StripDirectives(text)
	byTarget := map[string]*Fault{"*": {}, string(Alpha): {}, string(Beta): {}}
	for _, line := range lines {
		items := strings.Fields(strings.TrimPrefix(strings.TrimLeft(line, " \t"), DirectivePrefix))
		for _, item := range items {
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
				f.put(i, own.value(i))
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
	v, err := parseDecimal(val)
	if err != nil || v < k.min || v > k.max {
		return fmt.Errorf("@mock: item %q: %s wants an integer in %d..%d", shown, key, k.min, k.max)
	}
	if f.set&(1<<i) != 0 {
		return fmt.Errorf("@mock: item %q: %s:%s given twice", shown, target, key)
	}
	f.put(i, v)
	return nil
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
