package mockproviders

import "github.com/llmgw/llmgw/api/tokens"

// Tokens is what a mock delivered, as GET /mock/calls reports it: the mock's
// own count, for tests that check a gateway's ledger against it.
//
// An answer counts only once content reached the client: an error answer, a
// JSON body cut short or a stream cut before its first piece counts nothing.
// An answer whose usage was sent (a JSON body, or a stream's tail, sent in
// full) counts that usage in the first four fields, exactly as reported.
// An answer that delivered content without usage (no_usage=1, a stream
// without include_usage, or a stream cut before its tail) counts in the
// Unreported fields what the client could count itself: the prompt as
// received (directive lines included) and the content pieces sent.
type Tokens struct {
	InputTokens       int64 `json:"input_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
	ReasoningTokens   int64 `json:"reasoning_tokens"`

	UnreportedInputTokens  int64 `json:"unreported_input_tokens"`
	UnreportedOutputTokens int64 `json:"unreported_output_tokens"`
}

func (t *Tokens) add(o Tokens) {
	t.InputTokens += o.InputTokens
	t.CachedInputTokens += o.CachedInputTokens
	t.OutputTokens += o.OutputTokens
	t.ReasoningTokens += o.ReasoningTokens
	t.UnreportedInputTokens += o.UnreportedInputTokens
	t.UnreportedOutputTokens += o.UnreportedOutputTokens
}

// usageCounts is the usage an answer reports, protocol-neutral: cached is
// part of input and reasoning part of output (OpenAI's semantics; beta
// renders them its own way).
type usageCounts struct{ input, cached, output, reasoning int }

func (x *exchange) usage() usageCounts {
	return usageCounts{
		input:     x.ans.inputTokens,
		cached:    min(x.fault.CachedTokens, x.ans.inputTokens),
		output:    x.ans.outputTokens + x.fault.ReasoningTokens,
		reasoning: x.fault.ReasoningTokens,
	}
}

// delivery tracks what one exchange sent, for Tokens.
type delivery struct {
	rawInput  int            // the prompt's tokens as received, directive lines included
	text      int            // tokens of the text pieces sent (and of a tool call's name)
	args      tokens.Counter // a tool call's argument pieces sent, counted as one text
	content   bool           // at least one content piece reached the client
	usageSent bool           // the usage did too
}

func (d *delivery) sentOutput() int { return d.text + d.args.N() }

// sentPiece records that piece i reached the client. A tool call's
// argument pieces are cut anywhere, so they are counted as the text they
// add up to, the way Count counts the whole arguments in the usage.
func (x *exchange) sentPiece(i int) {
	p := x.ans.pieces[i]
	if x.ans.call != nil && i > 0 {
		x.sent.args.Add(p)
	} else {
		x.sent.text += tokens.Count(p)
	}
	x.sent.content = true
}

// rawInputTokens counts the prompt before directive lines are removed.
func rawInputTokens(req *chatRequest) int { return inputTokens(req) }

// tokensOf is what x counts in /mock/calls (see Tokens). Beta's protocol
// has no reasoning count: its reasoning tokens are in output_tokens only,
// so they count as output there.
func (x *exchange) tokensOf(fl Flavor) Tokens {
	d := &x.sent
	switch {
	case !d.content:
		return Tokens{}
	case !d.usageSent:
		return Tokens{UnreportedInputTokens: int64(d.rawInput), UnreportedOutputTokens: int64(d.sentOutput())}
	}
	u := x.usage()
	t := Tokens{InputTokens: int64(u.input), CachedInputTokens: int64(u.cached), OutputTokens: int64(u.output),
		ReasoningTokens: int64(u.reasoning)}
	if fl == Beta {
		t.ReasoningTokens = 0
	}
	return t
}
