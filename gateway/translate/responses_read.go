package translate

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/openai"
)

// This file reads a Responses request for the two translations
// (responses_openai*.go, responses_anthropic*.go): what both refuse, and
// the conversation, tools and options in a neutral form each of them
// writes in its provider's protocol. Every unexported name of the
// Responses translations starts with "rs".
//
// Dropped: members the translated request is sent without, because they
// are hints or server-side features whose absence does not change what an
// answer means:
//   - store: the gateway keeps nothing, and translated routes store
//     nothing (a later previous_response_id is refused)
//   - reasoning (effort, summary): chat-completions' reasoning_effort is
//     refused by models that do not reason, and Messages' thinking needs a
//     budget; the provider's default applies
//   - reasoning items in input (their encrypted_content only the server
//     that wrote it can read)
//   - include (reasoning.encrypted_content, logprobs...: nothing of it is
//     produced)
//   - prompt_cache_key, prompt_cache_retention (providers cache prompt
//     prefixes on their own terms)
//   - safety_identifier, user, metadata, client_metadata (Codex's ids)
//   - service_tier
//   - truncation "disabled" (the default: a prompt too long fails)
//   - text.verbosity
//   - stream_options (the answer has no obfuscation padding to turn off)
//   - max_tool_calls (it limits built-in tools, which are not carried)
//   - parallel_tool_calls true (the default); false is carried
//   - strict on function tools and the grammar of custom tools: the
//     provider is not held to them (a custom tool becomes a function of
//     one string, input, whose description states the grammar)
//
// Not carried: a request with any of these is refused with *NotCarried
// naming the parameter, so that the route is passed over:
//   - previous_response_id, conversation (state the provider stored)
//   - background true
//   - truncation "auto"
//   - prompt (a stored prompt template)
//   - top_logprobs (other than 0)
//   - built-in tools a client runs or that need a server of OpenAI's
//     (mcp, local_shell, shell, apply_patch...), a tool_choice naming any
//     built-in tool, and allowed_tools; the hosted tools and namespaces of
//     rsLeftOut are left out instead (responses_tools.go)
//   - item_reference items, and items of built-in tools' calls
//     (web_search_call, local_shell_call, ...)
//   - input_file parts, and input_image parts given by file_id
//   - instructions that are not a string
//   - members this translation does not know

// rsStrict decodes what the caller sent: a member this translation does
// not know must be refused by name, not dropped.
var rsStrict = json.RejectUnknownMembers(true)

// rsNoEquivalent is the reason a parameter neither provider protocol can
// carry is refused.
const rsNoEquivalent = "has no equivalent in the provider's chat protocol"

// rsStored is the reason of a parameter that needs state a server kept.
const rsStored = "refers to state the provider stored, which a translated route does not keep"

// rsEmptySchema is the parameters of a function declared without any.
var rsEmptySchema = jsontext.Value(`{"type":"object","properties":{}}`)

// Message roles as the translations read them: developer messages are
// system messages (chat-completions providers outside OpenAI know only
// system; Messages has one system prompt), and a tool output is a message
// of its own role.
const (
	rsRoleUser      = openai.RoleUser
	rsRoleAssistant = openai.RoleAssistant
	rsRoleSystem    = openai.RoleSystem
	rsRoleTool      = openai.RoleTool
)

// rsRequest is a Responses request read for translation.
type rsRequest struct {
	r      *openai.ResponsesRequest
	system string // instructions
	msgs   []rsMsg
	tools  []rsTool
	choice rsChoice
	// format is text.format when it asks for JSON (json_object or
	// json_schema); nil for text.
	format *openai.ResponsesTextFormat
	echo   rsEcho
}

// rsMsg is one message of the conversation: a message item, a tool call
// the assistant made (call), or a tool call's output (role tool, callID).
type rsMsg struct {
	param  string // the item's place ("input[3]"), for what a writer refuses
	role   string
	str    bool // the content was a string: parts holds it as one text part
	parts  []rsPart
	call   *rsCall
	callID string
}

// rsPart is one content part: text (or a refusal, which providers get as
// text), or an image (url: an http(s) or data: URL).
type rsPart struct {
	param   string
	text    string
	refusal bool
	image   bool
	url     string
	detail  string
}

// rsCall is a tool call of the history. args is the arguments as JSON
// text; a custom tool's free-form input is the string member input of
// args, the function the tool becomes.
type rsCall struct {
	id, name, args string
}

// rsTool is a tool as a function: a function tool, or a custom tool
// taking its input as one string parameter.
type rsTool struct {
	name, description string
	schema            jsontext.Value
}

// rsChoice is tool_choice: mode auto, none, required, or a tool by name
// (rsChoiceNamed); "" when the caller sent none.
type rsChoice struct {
	mode, name string
}

const rsChoiceNamed = "named"

// rsEcho is what a translated answer repeats of its request: the members
// of the response object that echo it, and which tools are custom ones
// (their calls are custom_tool_call items).
type rsEcho struct {
	resp   openai.Response
	custom map[string]bool
}

// rsRead reads and checks a Responses request.
func rsRead(body []byte) (*rsRequest, error) {
	var r openai.ResponsesRequest
	if err := json.Unmarshal(body, &r, rsStrict); err != nil {
		nc := rsDecodeError(err, "")
		// A member the request type lacks is reported by name, unless a
		// check names the cause better (a built-in tool has members named
		// after its type, which are not the caller's mistake).
		var lax openai.ResponsesRequest
		if errors.Is(err, json.ErrUnknownName) && json.Unmarshal(body, &lax) == nil {
			rq, buildErr := rsBuild(&lax, body)
			if buildErr != nil {
				return nil, buildErr
			}
			// The unknown member is one of a tool that is left out: the
			// tool's own business, which the translation does not read.
			if rsInLeftOutTool(err, &lax) {
				return rq, nil
			}
		}
		return nil, nc
	}
	return rsBuild(&r, body)
}

// rsInLeftOutTool reports whether every unknown member the strict decode
// found (err) is in a tool rsTools leaves out.
func rsInLeftOutTool(err error, r *openai.ResponsesRequest) bool {
	var se *json.SemanticError
	if !errors.As(err, &se) {
		return false
	}
	var tokens []string
	for tok := range se.JSONPointer.Tokens() {
		tokens = append(tokens, tok)
	}
	if len(tokens) < 3 || tokens[0] != "tools" {
		return false
	}
	i, convErr := strconv.Atoi(tokens[1])
	return convErr == nil && i >= 0 && i < len(r.Tools) && rsLeftOut[r.Tools[i].Type]
}

func rsBuild(r *openai.ResponsesRequest, body []byte) (*rsRequest, error) {
	if err := rsRefuse(r); err != nil {
		return nil, err
	}
	rq := &rsRequest{r: r}
	var err error
	if rq.system, err = rsInstructions(r.Instructions); err != nil {
		return nil, err
	}
	if rq.msgs, err = rsInput(r.Input); err != nil {
		return nil, err
	}
	custom := map[string]bool{}
	if rq.tools, err = rsTools(r.Tools, custom); err != nil {
		return nil, err
	}
	if rq.choice, err = rsToolChoice(r.ToolChoice); err != nil {
		return nil, err
	}
	if r.Text != nil && r.Text.Format != nil {
		switch f := r.Text.Format; f.Type {
		case "text":
		case "json_object":
			rq.format = f
		case "json_schema":
			if len(f.Schema) == 0 || f.Schema.Kind() != '{' {
				return nil, &NotCarried{Param: "text.format.schema", Reason: "must be a JSON Schema object"}
			}
			rq.format = f
		default:
			return nil, &NotCarried{Param: "text.format.type", Reason: "must be text, json_object or json_schema"}
		}
	}
	rq.echo, err = rsEchoOf(r, body, custom)
	return rq, err
}

// rsRefuse refuses the members that ask for what no chat protocol has.
func rsRefuse(r *openai.ResponsesRequest) error {
	var s string
	switch {
	case r.PreviousResponseID != nil:
		return &NotCarried{Param: "previous_response_id", Reason: rsStored}
	case !rsIsNull(r.Conversation):
		return &NotCarried{Param: "conversation", Reason: rsStored}
	case !rsIsNull(r.Prompt):
		return &NotCarried{Param: "prompt", Reason: "a stored prompt template " + rsNoEquivalent}
	case !antIsFalse(r.Background) && len(r.Background) > 0:
		return &NotCarried{Param: "background", Reason: "a background response " + rsNoEquivalent}
	case !antIsZero(r.TopLogprobs) && len(r.TopLogprobs) > 0:
		return &NotCarried{Param: "top_logprobs", Reason: rsNoEquivalent}
	case !rsIsNull(r.Truncation) && (json.Unmarshal(r.Truncation, &s) != nil || s != "disabled"):
		return &NotCarried{Param: "truncation", Reason: "only disabled has an equivalent in the provider's chat protocol"}
	}
	return nil
}

// rsIsNull: absent or null.
func rsIsNull(v jsontext.Value) bool { return len(v) == 0 || v.Kind() == 'n' }

// rsInstructions reads instructions: a string, or nothing.
func rsInstructions(v jsontext.Value) (string, error) {
	if rsIsNull(v) {
		return "", nil
	}
	var s string
	if v.Kind() != '"' || json.Unmarshal(v, &s) != nil {
		return "", &NotCarried{Param: "instructions", Reason: "must be a string"}
	}
	return s, nil
}

// rsInput reads input: a string is one user message, an array the items.
func rsInput(v jsontext.Value) ([]rsMsg, error) {
	switch v.Kind() {
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, rsDecodeError(err, "input")
		}
		return []rsMsg{{param: "input", role: rsRoleUser, str: true, parts: []rsPart{{param: "input", text: s}}}}, nil
	case '[':
	default:
		return nil, &NotCarried{Param: "input", Reason: "must be a string or an array of items"}
	}
	var items []openai.InputItem
	if err := json.Unmarshal(v, &items, rsStrict); err != nil {
		nc := rsDecodeError(err, "input")
		var lax []openai.InputItem
		if errors.Is(err, json.ErrUnknownName) && json.Unmarshal(v, &lax) == nil {
			if _, err := rsItems(lax); err != nil {
				return nil, err
			}
		}
		return nil, nc
	}
	return rsItems(items)
}

func rsItems(items []openai.InputItem) ([]rsMsg, error) {
	msgs := make([]rsMsg, 0, len(items))
	for i := range items {
		m, keep, err := rsItem(&items[i], fmt.Sprintf("input[%d]", i))
		if err != nil {
			return nil, err
		}
		if keep {
			msgs = append(msgs, m)
		}
	}
	return msgs, nil
}

// rsItem reads one item; keep is false for an item that is dropped.
func rsItem(it *openai.InputItem, param string) (m rsMsg, keep bool, err error) {
	m.param = param
	switch it.Type {
	case openai.ItemMessage, "":
		switch it.Role {
		case openai.RoleUser, openai.RoleAssistant, openai.RoleSystem:
			m.role = it.Role
		case openai.RoleDeveloper:
			m.role = rsRoleSystem
		case "":
			if it.Type == "" {
				return m, false, &NotCarried{Param: param + ".type", Reason: "is required"}
			}
			return m, false, &NotCarried{Param: param + ".role", Reason: "is required"}
		default:
			return m, false, &NotCarried{Param: param + ".role", Reason: "must be user, assistant, system or developer"}
		}
		m.str, m.parts, err = rsContent(it.Content, param+".content")
		return m, true, err
	case openai.ItemFunctionCall, openai.ItemCustomToolCall:
		if it.CallID == "" || it.Name == "" {
			return m, false, &NotCarried{Param: param, Reason: "a tool call needs call_id and name"}
		}
		m.role = rsRoleAssistant
		m.call = &rsCall{id: it.CallID, name: it.Name, args: antStr(it.Arguments)}
		if it.Type == openai.ItemCustomToolCall {
			m.call.args = rsCustomArgs(antStr(it.Input))
		}
		return m, true, nil
	case openai.ItemFunctionCallOutput, openai.ItemCustomToolCallOutput:
		if it.CallID == "" {
			return m, false, &NotCarried{Param: param + ".call_id", Reason: "is required"}
		}
		m.role, m.callID = rsRoleTool, it.CallID
		m.str, m.parts, err = rsContent(it.Output, param+".output")
		return m, true, err
	case openai.ItemReasoning:
		return m, false, nil
	case openai.ItemReference:
		return m, false, &NotCarried{Param: param, Reason: rsStored}
	}
	return m, false, &NotCarried{Param: param + ".type", Reason: "only message, function_call, custom_tool_call, their outputs and reasoning items have an equivalent in the provider's chat protocol"}
}

// rsCustomArgs is a custom tool call's input as the arguments of the
// function the tool becomes.
func rsCustomArgs(input string) string {
	b, _ := json.Marshal(struct {
		Input string `json:"input"`
	}{input}) // a string always encodes (invalid UTF-8 is replaced)
	return string(b)
}

// rsContent reads a content (or a tool output): a string, or parts.
func rsContent(v jsontext.Value, param string) (str bool, parts []rsPart, err error) {
	switch v.Kind() {
	case 0, 'n':
		return false, nil, nil
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return false, nil, rsDecodeError(err, param)
		}
		return true, []rsPart{{param: param, text: s}}, nil
	case '[':
	default:
		return false, nil, &NotCarried{Param: param, Reason: "must be a string or an array of content parts"}
	}
	var items []openai.ContentItem
	if err := json.Unmarshal(v, &items, rsStrict); err != nil {
		nc := rsDecodeError(err, param)
		var lax []openai.ContentItem
		if errors.Is(err, json.ErrUnknownName) && json.Unmarshal(v, &lax) == nil {
			if _, err := rsParts(lax, param); err != nil {
				return false, nil, err
			}
		}
		return false, nil, nc
	}
	parts, err = rsParts(items, param)
	return false, parts, err
}

func rsParts(items []openai.ContentItem, param string) ([]rsPart, error) {
	parts := make([]rsPart, 0, len(items))
	for j := range items {
		c := &items[j]
		p := rsPart{param: fmt.Sprintf("%s[%d]", param, j)}
		switch c.Type {
		case openai.PartInputText, openai.PartOutputText:
			p.text = antStr(c.Text)
		case openai.PartRefusal:
			p.text, p.refusal = antStr(c.Refusal), true
		case openai.PartInputImage:
			switch {
			case c.ImageURL != "":
				p.image, p.url, p.detail = true, c.ImageURL, c.Detail
			case c.FileID != "":
				return nil, &NotCarried{Param: p.param + ".file_id", Reason: "an uploaded file " + rsNoEquivalent}
			default:
				return nil, &NotCarried{Param: p.param + ".image_url", Reason: "is required"}
			}
		case openai.PartInputFile:
			return nil, &NotCarried{Param: p.param + ".type", Reason: "a file input " + rsNoEquivalent}
		default:
			return nil, &NotCarried{Param: p.param + ".type", Reason: rsNoEquivalent}
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// rsDecodeError is a decode error of the value at param as the caller's
// parameter: an unknown member by its name, any other by the place of the
// value the decoder could not read.
func rsDecodeError(err error, param string) *NotCarried {
	var se *json.SemanticError
	if !errors.As(err, &se) {
		return &NotCarried{Param: param, Reason: "is not valid JSON"}
	}
	param = antParam(param, se.JSONPointer)
	if errors.Is(err, json.ErrUnknownName) {
		return &NotCarried{Param: param, Reason: rsNoEquivalent}
	}
	return &NotCarried{Param: param, Reason: "has a value of the wrong type"}
}
