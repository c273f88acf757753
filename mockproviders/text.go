package mockproviders

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/llmgw/llmgw/api/tokens"
)

// words is the whole output vocabulary. Completions never reuse request text, so a
// test that searches stored data for a prompt cannot be fooled by the mock's answer.
var words = [64]string{
	"amber", "basalt", "cedar", "delta", "ember", "fjord", "garnet", "harbor",
	"indigo", "juniper", "kelp", "lagoon", "marble", "nectar", "obsidian", "pebble",
	"quartz", "river", "saffron", "tundra", "umber", "velvet", "willow", "xenon",
	"yarrow", "zephyr", "acorn", "birch", "cobalt", "dune", "estuary", "flint",
	"glacier", "heron", "iris", "jasper", "kestrel", "lichen", "meadow", "nimbus",
	"orchid", "prairie", "quill", "reef", "sierra", "thistle", "upland", "vireo",
	"walnut", "xylem", "yonder", "zinnia", "aurora", "bramble", "canyon", "dahlia",
	"egret", "fern", "grove", "hazel", "islet", "jetty", "knoll", "lotus",
}

// message is a chat turn reduced to what the mock derives from: its role, its
// texts (a string content is one; tool results and tool-call arguments are
// texts too, so they count as input), its images and its tool calls and
// results (for the pairing checks and the answer after a tool result).
type message struct {
	role    string
	texts   []string
	images  int        // image (and other attachment) parts, ImageInputTokens each
	calls   []string   // ids of the tool calls an assistant turn makes
	results []toolTurn // tool results this turn carries, in order
}

// toolTurn is one tool result: the call it answers and its texts,
// texts[from:to] of its message (so directive removal applies to them).
type toolTurn struct {
	id       string
	from, to int
	isError  bool
}

// chatRequest is the protocol-neutral form both flavors parse into.
type chatRequest struct {
	model        string
	system       []string
	messages     []message
	stream       bool
	includeUsage bool // alpha stream_options.include_usage
	maxTokens    int  // 0: no limit
	stops        []string
	user         string // alpha's user, beta's metadata.user_id: /mock/calls groups tokens by it

	tools    []tool   // offered tools (tools.go)
	toolMode toolMode // from tool_choice
	toolName string   // the tool tool_choice names (toolsNamed)
	format   format   // response_format / output_config.format (format.go)
}

type finishReason int

const (
	finishStop finishReason = iota
	finishLength
	finishStopSequence
	finishToolCall
)

// answer is everything a protocol needs to render a response, JSON or stream.
// A tool-call answer has call set, no text, and pieces [name, arguments
// piece, ...]: the first piece opens the call, the others carry its
// arguments (see buildToolAnswer).
type answer struct {
	id           string // hex, deterministic; each protocol adds its own prefix
	model        string
	text         string
	call         *toolCall
	pieces       []string
	finish       finishReason
	stopSequence string
	inputTokens  int
	outputTokens int
}

// lastTurn is the message directive lines are read from: the last user
// message, or (alpha) the last tool message when tool results end the
// conversation, since they are the caller's turn. -1 when there is none.
func lastTurn(req *chatRequest) int {
	for i := len(req.messages) - 1; i >= 0; i-- {
		if r := req.messages[i].role; r == "user" || r == "tool" {
			return i
		}
	}
	return -1
}

// stripLastUser removes directive lines from the last turn (see lastTurn) in
// place and returns them; earlier messages keep any @mock text as ordinary prose.
func stripLastUser(req *chatRequest) []string {
	i := lastTurn(req)
	if i < 0 {
		return nil
	}
	m := &req.messages[i]
	var lines []string
	for j, t := range m.texts {
		clean, l := StripDirectives(t)
		m.texts[j] = clean
		lines = append(lines, l...)
	}
	return lines
}

// seed hashes the conversation (after directive removal) word by word, so
// whitespace alone — such as the line break a removed directive leaves behind —
// does not change the answer. Length prefixes keep ("ab","c") and ("a","bc") apart.
// Images and tool-call ids enter the hash only when present, so a text-only
// conversation keeps the answer it always had.
func seed(req *chatRequest) uint64 {
	h := fnv.New64a()
	var n [8]byte
	put := func(s string) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	putText := func(s string) {
		put(strings.Join(strings.Fields(s), " "))
	}
	for _, s := range req.system {
		put("system")
		putText(s)
	}
	for _, m := range req.messages {
		put(m.role)
		for _, t := range m.texts {
			putText(t)
		}
		if m.images > 0 {
			put("images " + strconv.Itoa(m.images))
		}
		for _, id := range m.calls {
			put("call " + id)
		}
		for _, r := range m.results {
			put("result " + r.id)
		}
	}
	return h.Sum64()
}

// splitmix64 turns the one seed into a stream of well-mixed word choices.
func splitmix64(x *uint64) uint64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// inputTokens is the prompt's count: every text (system, messages, tool
// results, tool-call arguments) plus ImageInputTokens per image.
func inputTokens(req *chatRequest) int {
	n := 0
	for _, t := range req.system {
		n += tokens.Count(t)
	}
	for _, m := range req.messages {
		n += tokens.CountMessages(m.texts...) + m.images*ImageInputTokens
	}
	return n
}

// baseAnswer is what every answer to req shares: its id and input count.
func baseAnswer(fl Flavor, req *chatRequest, s uint64) *answer {
	idh := fnv.New64a()
	fmt.Fprintf(idh, "%s\x00%s\x00%d", fl, req.model, s)
	return &answer{id: fmt.Sprintf("%016x", idh.Sum64()), model: req.model, finish: finishStop, inputTokens: inputTokens(req)}
}

// buildAnswer derives a text answer: "<flavor>/<model> says:" and 8..16
// vocabulary words picked by the request hash — or, right after a tool
// result, the words of toolReply — (more words if chunks needs them), in the
// requested format (format.go), then max_tokens truncation and stop
// sequences, then the split into content pieces.
func buildAnswer(fl Flavor, req *chatRequest, chunks int) *answer {
	s := seed(req)
	state := s
	n := 8 + int(splitmix64(&state)%9)
	out := []string{string(fl) + "/" + req.model, "says:"}
	if lead := toolReply(req); lead != nil {
		out = append(out, lead...)
	} else {
		for len(out) < n+2 {
			out = append(out, words[splitmix64(&state)%uint64(len(words))])
		}
	}
	for len(out) < chunks {
		out = append(out, words[splitmix64(&state)%uint64(len(words))])
	}
	a := baseAnswer(fl, req, s)
	full := req.format.render(strings.Join(out, " "))
	limit := len(full)
	if end, cut := wordEnd(full, req.maxTokens); cut {
		limit = end
		a.finish = finishLength
	}
	a.text = full[:limit]
	// A stop sequence wins when it is fully generated before the token limit hits.
	best := -1
	for _, stop := range req.stops {
		if stop == "" {
			continue
		}
		if i := strings.Index(full, stop); i >= 0 && i+len(stop) <= limit && (best < 0 || i < best) {
			best, a.stopSequence = i, stop
		}
	}
	if best >= 0 {
		a.text = full[:best]
		a.finish = finishStopSequence
	}
	a.pieces = splitPieces(a.text, chunks)
	a.outputTokens = tokens.Count(a.text)
	return a
}

// wordEnd is where the n-th word of text ends, and whether text has more
// than n words (n <= 0: no limit). Words are tokens.Count's.
func wordEnd(text string, n int) (int, bool) {
	if n <= 0 {
		return len(text), false
	}
	seen, inWord, end := 0, false, 0
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		space := r != utf8.RuneError && unicode.IsSpace(r)
		if !space {
			if !inWord {
				if seen == n {
					return end, true
				}
				seen++
			}
			end = i + size
		}
		inWord = !space
		i += size
	}
	return len(text), false
}

// replySnippet is how many characters of a tool result the answer after it repeats.
const replySnippet = 40

// toolReply is the lead of the answer right after tool results (nil
// otherwise): "tool result received: <the first 40 characters of the last
// result, whitespace collapsed>" ("tool error received" when it is marked
// as an error), so a test can check the result reached the provider. It is
// the one place a mock repeats caller text.
func toolReply(req *chatRequest) []string {
	i := lastTurn(req)
	if i < 0 || len(req.messages[i].results) == 0 {
		return nil
	}
	m := req.messages[i]
	r := m.results[len(m.results)-1]
	snippet := strings.Join(strings.Fields(strings.Join(m.texts[r.from:r.to], " ")), " ")
	if rs := []rune(snippet); len(rs) > replySnippet {
		snippet = strings.TrimRightFunc(string(rs[:replySnippet]), unicode.IsSpace)
	}
	if snippet == "" {
		snippet = "(empty)"
	}
	kind := "result"
	if r.isError {
		kind = "error"
	}
	return append([]string{"tool", kind, "received:"}, strings.Fields(snippet)...)
}

// splitPieces cuts text into at most n pieces at whitespace boundaries, each piece
// after the first starting with its whitespace, so concatenation restores text and
// token counts add up piece by piece. Fewer pieces come back only when text has
// fewer than n words.
func splitPieces(text string, n int) []string {
	// starts[k] is where word k's preceding whitespace begins (0 for the first word).
	var starts []int
	inWord := false
	wsStart := 0
	for i := 0; i < len(text); i++ {
		space := text[i] == ' '
		if space && inWord {
			wsStart = i
		}
		if !space && !inWord {
			if len(starts) == 0 {
				starts = append(starts, 0)
			} else {
				starts = append(starts, wsStart)
			}
		}
		inWord = !space
	}
	w := len(starts)
	if w == 0 {
		if text == "" {
			return nil
		}
		return []string{text}
	}
	if n > w {
		n = w
	}
	pieces := make([]string, n)
	for j := range n {
		from := starts[j*w/n]
		to := len(text)
		if j+1 < n {
			to = starts[(j+1)*w/n]
		}
		pieces[j] = text[from:to]
	}
	return pieces
}
