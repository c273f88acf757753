package mockproviders

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strings"

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

// message is a chat turn reduced to what the mock derives from: its role and its
// text parts (a string content is one part).
type message struct {
	role  string
	texts []string
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
}

type finishReason int

const (
	finishStop finishReason = iota
	finishLength
	finishStopSequence
)

// answer is everything a protocol needs to render a response, JSON or stream.
type answer struct {
	id           string // hex, deterministic; each protocol adds its own prefix
	model        string
	text         string
	pieces       []string
	finish       finishReason
	stopSequence string
	inputTokens  int
	outputTokens int
}

// stripLastUser removes directive lines from the last user message in place and
// returns them; earlier messages keep any @mock text as ordinary prose.
func stripLastUser(req *chatRequest) []string {
	for i := len(req.messages) - 1; i >= 0; i-- {
		m := &req.messages[i]
		if m.role != "user" {
			continue
		}
		var lines []string
		for j, t := range m.texts {
			clean, l := StripDirectives(t)
			m.texts[j] = clean
			lines = append(lines, l...)
		}
		return lines
	}
	return nil
}

// seed hashes the conversation (after directive removal) word by word, so
// whitespace alone — such as the line break a removed directive leaves behind —
// does not change the answer. Length prefixes keep ("ab","c") and ("a","bc") apart.
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

// buildAnswer derives the output: "<flavor>/<model> says:" and 8..16 vocabulary
// words picked by the request hash (more if chunks needs them), then max_tokens
// truncation and stop sequences, then the split into content pieces.
func buildAnswer(fl Flavor, req *chatRequest, chunks int) *answer {
	s := seed(req)
	state := s
	n := 8 + int(splitmix64(&state)%9)
	out := []string{string(fl) + "/" + req.model, "says:"}
	for len(out) < n+2 || len(out) < chunks {
		out = append(out, words[splitmix64(&state)%uint64(len(words))])
	}
	a := &answer{model: req.model, finish: finishStop}
	full := strings.Join(out, " ")
	limit := len(full)
	if req.maxTokens > 0 && req.maxTokens < len(out) {
		limit = len(strings.Join(out[:req.maxTokens], " "))
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
	for _, t := range req.system {
		a.inputTokens += tokens.Count(t)
	}
	for _, m := range req.messages {
		a.inputTokens += tokens.CountMessages(m.texts...)
	}
	idh := fnv.New64a()
	fmt.Fprintf(idh, "%s\x00%s\x00%d", fl, req.model, s)
	a.id = fmt.Sprintf("%016x", idh.Sum64())
	return a
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
