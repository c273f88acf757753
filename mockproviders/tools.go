package mockproviders

import (
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/tokens"
)

// tool is one tool a request offers. Only callable ones — alpha's function
// tools, beta's custom tools — can be called; the others (alpha custom
// tools, beta server tools such as web_search_20250305) are accepted and
// never called.
type tool struct {
	name     string
	schema   jsontext.Value // the arguments' JSON Schema, raw; empty: none
	callable bool
}

// toolMode is what tool_choice asks: let the model decide, never call,
// call some tool (alpha "required", beta any) or call one named tool.
type toolMode int

const (
	toolsAuto toolMode = iota
	toolsNone
	toolsRequired
	toolsNamed
)

// toolCall is the call an answer makes: the tool and its arguments as
// compact JSON text.
type toolCall struct{ name, args string }

// firstTool is the tool= value that calls the first callable tool offered
// (unless a tool is named "first").
const firstTool = "first"

// chooseCall decides whether the answer calls a tool, and which one with
// which arguments. In order: tool_choice none never calls (tool= and args=
// are ignored then); a tool=
// directive calls that tool (a tool_choice naming a tool must agree);
// right after tool results the answer is text; a tool_choice naming a tool
// calls it; tool_choice required/any calls the first tool. Arguments come
// from args= or else from the tool's schema (schemaValue). A directive the
// request cannot satisfy is a 400.
func chooseCall(req *chatRequest, f Fault) (*toolCall, *apiError) {
	name := ""
	switch {
	case req.toolMode == toolsNone:
	case f.Has("tool"):
		name = f.Tool
		if req.toolMode == toolsNamed && name != req.toolName && name != firstTool {
			return nil, badRequest("messages", "@mock: tool=%s but tool_choice forces the tool %q", name, req.toolName)
		}
		if req.toolMode == toolsNamed {
			name = req.toolName
		}
	case afterToolResult(req):
	case req.toolMode == toolsNamed:
		name = req.toolName
	case req.toolMode == toolsRequired:
		name = firstTool
	}
	if name == "" {
		if f.Has("args") && req.toolMode != toolsNone {
			return nil, badRequest("messages", "@mock: args= given but the answer calls no tool (add tool=NAME)")
		}
		return nil, nil
	}
	t := findTool(req.tools, name)
	if t == nil {
		if !f.Has("tool") {
			return nil, nil // a forced choice with nothing the mock can call: answer text
		}
		return nil, badRequest("messages", "@mock: tool=%s names no tool the request offers (callable: %s)", name, callableNames(req.tools))
	}
	args := f.Args
	if !f.Has("args") {
		args = string(schemaValue(t.schema))
		if args == "" || args[0] != '{' {
			args = "{}" // arguments are an object whatever the schema's root says
		}
	}
	return &toolCall{name: t.name, args: args}, nil
}

// afterToolResult reports whether the caller's last turn carries tool results.
func afterToolResult(req *chatRequest) bool {
	i := lastTurn(req)
	return i >= 0 && len(req.messages[i].results) > 0
}

// findTool is the callable tool named name; "first", when no tool has
// that name, is the first callable tool.
func findTool(tools []tool, name string) *tool {
	if t := toolNamed(tools, name); t != nil || name != firstTool {
		return t
	}
	for i := range tools {
		if tools[i].callable {
			return &tools[i]
		}
	}
	return nil
}

// toolNamed is the callable tool named name, exactly.
func toolNamed(tools []tool, name string) *tool {
	for i := range tools {
		if tools[i].callable && tools[i].name == name {
			return &tools[i]
		}
	}
	return nil
}

// sortedKeys lists a set for an error message, in a stable order.
func sortedKeys(set map[string]bool) string {
	return strings.Join(slices.Sorted(maps.Keys(set)), ", ")
}

func callableNames(tools []tool) string {
	var names []string
	for _, t := range tools {
		if t.callable {
			names = append(names, t.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// buildToolAnswer is the answer that calls call. Its pieces are the tool's
// name (the piece that opens the call in a stream) and then the arguments
// cut into max(chunks, 2) pieces of about equal length (fewer only when
// the arguments have fewer characters), so every stream sends the
// arguments in two pieces at least. The output count is
// Count(name) + Count(arguments); max_tokens and stop sequences do not
// apply to a call.
func buildToolAnswer(fl Flavor, req *chatRequest, call *toolCall, chunks int) *answer {
	a := baseAnswer(fl, req, seed(req))
	a.call, a.finish = call, finishToolCall
	a.pieces = append([]string{call.name}, splitRunes(call.args, max(chunks, 2))...)
	a.outputTokens = tokens.Count(call.name) + tokens.Count(call.args)
	return a
}

// splitRunes cuts s into min(n, runes) pieces of about equal rune counts.
func splitRunes(s string, n int) []string {
	r := utf8.RuneCountInString(s)
	n = min(n, r)
	out := make([]string, 0, n)
	at, done := 0, 0
	for j := range n {
		want := (j + 1) * r / n
		end := at
		for done < want {
			_, size := utf8.DecodeRuneInString(s[end:])
			end += size
			done++
		}
		out = append(out, s[at:end])
		at = end
	}
	return out
}

// checkToolNames refuses duplicate names, as both vendors do.
func checkToolNames(tools []tool, param string) *apiError {
	seen := map[string]bool{}
	for _, t := range tools {
		if t.name == "" {
			continue
		}
		if seen[t.name] {
			return badRequest(param, "%s: tool names must be unique (%q is given twice)", param, t.name)
		}
		seen[t.name] = true
	}
	return nil
}

// callID is a tool call's id: the protocol's prefix and the answer id.
func callID(prefix string, a *answer) string { return prefix + a.id }

// lastResults are the tool results of the caller's last turn (see
// lastTurn), for /mock/calls: every tool message that ends the
// conversation counts (alpha answers parallel calls with one tool message
// each), not only the last.
func lastResults(req *chatRequest) []ToolResult {
	var out []ToolResult
	last := lastTurn(req)
	for i := last; i >= 0; i-- {
		m := req.messages[i]
		if len(m.results) == 0 || (i != last && m.role != "tool") {
			break
		}
		var these []ToolResult
		for _, r := range m.results {
			these = append(these, ToolResult{CallID: r.id, Content: cutUTF8(strings.Join(m.texts[r.from:r.to], "\n"), maxToolResultBytes), IsError: r.isError})
		}
		out = append(these, out...)
		if m.role != "tool" {
			break
		}
	}
	return out
}

// cutUTF8 cuts s to at most n bytes without splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
