package translate

import (
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/openai"
)

// The tools of a Responses request, its tool_choice, and what the answer
// echoes of it, read for the two translations (responses_read.go reads
// the rest).

// rsTools reads the tools as functions, and the names of custom tools
// into custom.
func rsTools(tools []openai.ResponsesTool, custom map[string]bool) ([]rsTool, error) {
	out := make([]rsTool, 0, len(tools))
	for i := range tools {
		t := &tools[i]
		param := fmt.Sprintf("tools[%d]", i)
		switch t.Type {
		case openai.ResponsesToolFunction:
			schema := t.Parameters
			if rsIsNull(schema) {
				schema = rsEmptySchema
			}
			out = append(out, rsTool{name: t.Name, description: t.Description, schema: schema})
		case openai.ResponsesToolCustom:
			schema, err := rsCustomSchema(t.Format, param+".format")
			if err != nil {
				return nil, err
			}
			custom[t.Name] = true
			out = append(out, rsTool{name: t.Name, description: t.Description, schema: schema})
		default:
			if rsLeftOut[t.Type] {
				continue
			}
			return nil, &NotCarried{Param: param + ".type", Reason: "only function and custom tools have an equivalent in the provider's chat protocol (built-in tools run on OpenAI's servers)"}
		}
	}
	return out, nil
}

// rsLeftOut are the tools a translated request leaves out instead of
// being refused: OpenAI's hosted tools, which run on OpenAI's servers (a
// provider of another protocol has none of them: the model answers without
// them), and namespaces, groups of functions a client offers under one
// name (Codex's sub-agent tools), which chat-completions and Messages
// cannot name. Codex offers web_search and a namespace with every request;
// refusing them would keep Codex off every translated route. A
// tool_choice naming one of them is still refused (rsToolChoice).
var rsLeftOut = map[string]bool{
	"web_search": true, "web_search_preview": true, "web_search_2025_08_26": true, "web_search_preview_2025_03_11": true,
	"file_search": true, "code_interpreter": true, "image_generation": true, "computer_use_preview": true,
	"namespace": true,
}

// rsCustomSchema is the parameters of the function a custom tool becomes:
// one string, input, whose description states the tool's format. The
// provider is not held to a grammar: a model that writes input outside it
// has its call relayed as it is, and the tool reports the error.
func rsCustomSchema(format jsontext.Value, param string) (jsontext.Value, error) {
	desc := "The tool's input, as free-form text."
	if !rsIsNull(format) {
		var f openai.ResponsesCustomFormat
		if err := json.Unmarshal(format, &f, rsStrict); err != nil {
			return nil, rsDecodeError(err, param)
		}
		switch f.Type {
		case "text":
		case "grammar":
			desc = fmt.Sprintf("The tool's input, as text that follows this %s grammar:\n%s", f.Syntax, f.Definition)
		default:
			return nil, &NotCarried{Param: param + ".type", Reason: "must be text or grammar"}
		}
	}
	schema := `{"type":"object","properties":{"input":{"type":"string","description":` + string(quoted(desc)) +
		`}},"required":["input"],"additionalProperties":false}`
	return jsontext.Value(schema), nil
}

// rsToolChoice reads tool_choice: none, auto, required, or a function or
// custom tool by name.
func rsToolChoice(v jsontext.Value) (rsChoice, error) {
	switch v.Kind() {
	case 0, 'n':
		return rsChoice{}, nil
	case '"':
		var s string
		if json.Unmarshal(v, &s) == nil {
			switch s {
			case openai.ToolChoiceNone, openai.ToolChoiceAuto, openai.ToolChoiceRequired:
				return rsChoice{mode: s}, nil
			}
		}
	case '{':
		var c openai.ResponsesToolChoice
		if err := json.Unmarshal(v, &c); err != nil {
			return rsChoice{}, rsDecodeError(err, "tool_choice")
		}
		switch c.Type {
		case openai.ResponsesToolFunction, openai.ResponsesToolCustom:
			if c.Name == "" {
				return rsChoice{}, &NotCarried{Param: "tool_choice.name", Reason: "is required"}
			}
			return rsChoice{mode: rsChoiceNamed, name: c.Name}, nil
		}
		return rsChoice{}, &NotCarried{Param: "tool_choice.type", Reason: "only none, auto, required, a function or a custom tool have an equivalent in the provider's chat protocol"}
	}
	return rsChoice{}, &NotCarried{Param: "tool_choice", Reason: "must be none, auto, required or an object naming a tool"}
}

// rsEchoOf is what the answer repeats of r: what it was asked with, with
// the protocol's defaults for what the caller left out. tools and text are
// the caller's bytes.
func rsEchoOf(r *openai.ResponsesRequest, body []byte, custom map[string]bool) (rsEcho, error) {
	o, err := memberSpans(body, "tools", "text", "tool_choice", "metadata")
	if err != nil {
		return rsEcho{}, err // the server validated the body: a defect, not a caller's error
	}
	raw := func(name, def string) jsontext.Value {
		if sp, ok := o.found[name]; ok && sp.value.Kind() != 'n' {
			return sp.value
		}
		return jsontext.Value(def)
	}
	e := openai.Response{
		Instructions:      jsontext.Value("null"),
		MaxOutputTokens:   r.MaxOutputTokens,
		ParallelToolCalls: new(r.ParallelToolCalls == nil || *r.ParallelToolCalls),
		Store:             new(false), // nothing is stored, whatever store asked
		Temperature:       r.Temperature,
		TopP:              r.TopP,
		Text:              raw("text", `{"format":{"type":"text"}}`),
		ToolChoice:        raw("tool_choice", `"auto"`),
		Tools:             raw("tools", `[]`),
		Metadata:          raw("metadata", `{}`),
	}
	if !rsIsNull(r.Instructions) {
		e.Instructions = r.Instructions
	}
	return rsEcho{resp: e, custom: custom}, nil
}
