package mockproviders

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/tokens"
	"github.com/llmgw/llmgw/api/wire/anthropic"
	"github.com/llmgw/llmgw/api/wire/openai"
)

func keysOf(m map[string]jsontext.Value) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestJSONShape(t *testing.T) {
	want := map[Flavor][]string{
		Alpha: {"choices", "created", "id", "model", "object", "usage"},
		Beta:  {"content", "id", "model", "role", "stop_reason", "stop_sequence", "type", "usage"},
	}
	for _, fl := range flavors {
		t.Run(string(fl), func(t *testing.T) {
			m := newMock(t, Options{Flavor: fl})
			res := m.call(t, reqSpec{model: "big-model", system: "be brief", user: "hello there world"})
			if res.resp.StatusCode != 200 || res.resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%d %s: %s", res.resp.StatusCode, res.resp.Header.Get("Content-Type"), res.body)
			}
			a := decodeAnswer(t, fl, res.body)
			if got := keysOf(a.rawTopLevel); !slices.Equal(got, want[fl]) {
				t.Errorf("top-level keys %v, want %v", got, want[fl])
			}
			if a.model != "big-model" || !strings.HasPrefix(a.text, string(fl)+"/big-model says: ") {
				t.Errorf("model %q text %q", a.model, a.text)
			}
			if a.in != 5 || a.out != tokens.Count(a.text) {
				t.Errorf("usage in=%d out=%d for %q", a.in, a.out, a.text)
			}
			switch fl {
			case Alpha:
				var top openai.ChatCompletion
				mustUnmarshal(t, string(res.body), &top)
				var c struct {
					Choices []map[string]jsontext.Value `json:"choices"`
				}
				mustUnmarshal(t, string(res.body), &c)
				if !strings.HasPrefix(top.ID, "chatcmpl-") || top.Object != "chat.completion" || top.Created == 0 || a.finish != "stop" {
					t.Errorf("alpha top level: %s", res.body)
				}
				if got := keysOf(c.Choices[0]); !slices.Equal(got, []string{"finish_reason", "index", "message"}) {
					t.Errorf("choice keys %v", got)
				}
				if !strings.Contains(string(res.body), `"message":{"role":"assistant","content":`) {
					t.Errorf("message shape: %s", res.body)
				}
			case Beta:
				var top anthropic.MessageResponse
				mustUnmarshal(t, string(res.body), &top)
				if !strings.HasPrefix(top.ID, "msg_") || top.Type != "message" || top.Role != "assistant" || a.finish != "end_turn" || a.stopSequence != nil {
					t.Errorf("beta top level: %s", res.body)
				}
				if !strings.Contains(string(res.body), `"stop_sequence":null`) {
					t.Errorf("stop_sequence must be an explicit null: %s", res.body)
				}
			}
		})
	}
}

// alphaStreamBytes is the exact wire form the OpenAI protocol promises.
func alphaStreamBytes(id, model string, pieces []string, finish string, usage string) string {
	head := fmt.Sprintf(`{"id":%q,"object":"chat.completion.chunk","created":1767225600,"model":%q,`, id, model)
	var b strings.Builder
	b.WriteString("data: " + head + `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
	for _, p := range pieces {
		c := mustMarshal(p)
		b.WriteString("data: " + head + `"choices":[{"index":0,"delta":{"content":` + string(c) + `},"finish_reason":null}]}` + "\n\n")
	}
	b.WriteString("data: " + head + `"choices":[{"index":0,"delta":{},"finish_reason":"` + finish + `"}]}` + "\n\n")
	if usage != "" {
		b.WriteString("data: " + head + `"choices":[],"usage":` + usage + "}\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

func betaStreamBytes(id, model string, pieces []string, in, out int, usage bool) string {
	var b strings.Builder
	startUsage, deltaUsage := "", ""
	if usage {
		startUsage = fmt.Sprintf(`,"usage":{"input_tokens":%d,"output_tokens":1}`, in)
		deltaUsage = fmt.Sprintf(`,"usage":{"output_tokens":%d}`, out)
	}
	fmt.Fprintf(&b, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":%q,\"type\":\"message\",\"role\":\"assistant\",\"model\":%q,\"content\":[],\"stop_reason\":null,\"stop_sequence\":null%s}}\n\n", id, model, startUsage)
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	b.WriteString("event: ping\ndata: {\"type\":\"ping\"}\n\n")
	for _, p := range pieces {
		c := mustMarshal(p)
		b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":" + string(c) + "}}\n\n")
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	fmt.Fprintf(&b, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null}%s}\n\n", deltaUsage)
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return b.String()
}

func TestStreamExactBytes(t *testing.T) {
	tests := []struct {
		name         string
		user         string
		includeUsage bool
		usage        bool // usage expected in the stream
	}{
		{"plain", "hello there", false, false},
		{"include_usage", "hello there", true, true},
		{"include_usage with no_usage", "hello there\n@mock *:no_usage=1", true, false},
	}
	for _, fl := range flavors {
		for _, tt := range tests {
			t.Run(string(fl)+"/"+tt.name, func(t *testing.T) {
				m := newMock(t, Options{Flavor: fl})
				js := decodeAnswer(t, fl, m.call(t, reqSpec{model: "mdl", user: "hello there"}).body)
				var id struct {
					ID string `json:"id"`
				}
				mustUnmarshal(t, string(m.call(t, reqSpec{model: "mdl", user: "hello there"}).body), &id)

				res := m.call(t, reqSpec{model: "mdl", user: tt.user, stream: true, includeUsage: tt.includeUsage})
				if res.readErr != nil || res.resp.StatusCode != 200 {
					t.Fatalf("%d %v", res.resp.StatusCode, res.readErr)
				}
				if ct := res.resp.Header.Get("Content-Type"); ct != "text/event-stream" {
					t.Fatalf("content type %q", ct)
				}
				pieces := splitPieces(js.text, DefaultChunks)
				var want string
				if fl == Alpha {
					usage := ""
					if tt.usage {
						usage = fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`, js.in, js.out, js.in+js.out)
					}
					want = alphaStreamBytes(id.ID, "mdl", pieces, "stop", usage)
				} else {
					// Beta always reports usage unless no_usage; include_usage is an OpenAI notion.
					want = betaStreamBytes(id.ID, "mdl", pieces, js.in, js.out, !strings.Contains(tt.user, "no_usage"))
				}
				if string(res.body) != want {
					t.Fatalf("stream bytes differ\n got: %q\nwant: %q", res.body, want)
				}
				evs := parseSSE(t, res.body)
				if got := strings.Join(contentPieces(t, fl, evs), ""); got != js.text {
					t.Fatalf("stream text %q != JSON text %q", got, js.text)
				}
				if fl == Alpha && strings.Count(string(res.body), "data: [DONE]") != 1 {
					t.Fatal("want exactly one [DONE]")
				}
				if fl == Beta && evs[len(evs)-1].name != "message_stop" {
					t.Fatal("beta stream must end with message_stop")
				}
			})
		}
	}
}

func TestTokenCounts(t *testing.T) {
	for _, fl := range flavors {
		t.Run(string(fl), func(t *testing.T) {
			m := newMock(t, Options{Flavor: fl})
			spec := reqSpec{
				system:  "you are  terse",                                       // 3
				history: []string{"first question here", "an answer"},           // 3 + 2
				user:    "and now\n@mock *:chunks=3 alpha:delay_ms=1\nthis one", // 4, directive excluded
			}
			a := decodeAnswer(t, fl, m.call(t, spec).body)
			if a.in != 12 {
				t.Errorf("input tokens %d, want 12", a.in)
			}
			if a.out != tokens.Count(a.text) {
				t.Errorf("output tokens %d, count %d", a.out, tokens.Count(a.text))
			}
			spec.stream, spec.includeUsage = true, true
			evs := parseSSE(t, m.call(t, spec).body)
			pieces := contentPieces(t, fl, evs)
			if len(pieces) != 3 {
				t.Fatalf("chunks=3 gave %d pieces", len(pieces))
			}
			sum := 0
			for _, p := range pieces {
				sum += tokens.Count(p)
			}
			if sum != a.out {
				t.Errorf("stream piece tokens %d != usage %d", sum, a.out)
			}
			usage := ""
			for _, e := range evs {
				if strings.Contains(e.data, `"usage"`) {
					usage += e.data
				}
			}
			wantIn, wantOut := fmt.Sprintf("%d", a.in), fmt.Sprintf("%d", a.out)
			if !strings.Contains(usage, wantIn) || !strings.Contains(usage, wantOut) {
				t.Errorf("stream usage %s does not carry in=%s out=%s", usage, wantIn, wantOut)
			}
		})
	}
}

func TestMaxTokensAndStops(t *testing.T) {
	for _, fl := range flavors {
		t.Run(string(fl), func(t *testing.T) {
			m := newMock(t, Options{Flavor: fl})
			full := decodeAnswer(t, fl, m.call(t, reqSpec{user: "q"}).body)
			words := strings.Fields(full.text)

			a := decodeAnswer(t, fl, m.call(t, reqSpec{user: "q", maxTokens: 3}).body)
			wantFinish := map[Flavor]string{Alpha: "length", Beta: "max_tokens"}[fl]
			if a.text != strings.Join(words[:3], " ") || a.out != 3 || a.finish != wantFinish {
				t.Errorf("max_tokens=3: %+v", a)
			}
			evs := parseSSE(t, m.call(t, reqSpec{user: "q", maxTokens: 3, stream: true}).body)
			if got := strings.Join(contentPieces(t, fl, evs), ""); got != a.text || !strings.Contains(evs[len(evs)-2].data+evs[len(evs)-3].data, wantFinish) {
				t.Errorf("stream max_tokens=3: %q / %v", got, evs)
			}

			stop := " " + words[4]
			a = decodeAnswer(t, fl, m.call(t, reqSpec{user: "q", stops: []string{stop}}).body)
			if !strings.HasPrefix(full.text, a.text) || strings.Contains(a.text, stop) {
				t.Errorf("stop %q: %q", stop, a.text)
			}
			wantFinish = map[Flavor]string{Alpha: "stop", Beta: "stop_sequence"}[fl]
			if a.finish != wantFinish || (fl == Beta && (a.stopSequence == nil || *a.stopSequence != stop)) {
				t.Errorf("stop finish %q seq %v", a.finish, a.stopSequence)
			}
		})
	}
}

func TestDeterminism(t *testing.T) {
	for _, fl := range flavors {
		t.Run(string(fl), func(t *testing.T) {
			m := newMock(t, Options{Flavor: fl})
			for _, stream := range []bool{false, true} {
				spec := reqSpec{model: "m-one", user: "tell me something", stream: stream, includeUsage: true}
				first, second := m.call(t, spec), m.call(t, spec)
				if string(first.body) != string(second.body) {
					t.Fatalf("stream=%v: same request, different bytes", stream)
				}
			}
			one := decodeAnswer(t, fl, m.call(t, reqSpec{model: "m-one", user: "tell me something"}).body)
			two := decodeAnswer(t, fl, m.call(t, reqSpec{model: "m-two", user: "tell me something"}).body)
			if one.text == two.text || !strings.Contains(two.text, "m-two") || strings.Contains(two.text, "m-one") {
				t.Fatalf("model not named: %q vs %q", one.text, two.text)
			}
			// The directive line is removed before anything is derived.
			plain := decodeAnswer(t, fl, m.call(t, reqSpec{model: "m-one", user: "tell me something"}).body)
			directed := decodeAnswer(t, fl, m.call(t, reqSpec{model: "m-one", user: "tell me something\n@mock *:chunk_delay_ms=1"}).body)
			if plain.text != directed.text || plain.in != directed.in {
				t.Fatalf("directive changed the answer: %+v vs %+v", plain, directed)
			}
		})
	}
}

func TestContentParts(t *testing.T) {
	for _, fl := range flavors {
		t.Run(string(fl), func(t *testing.T) {
			m := newMock(t, Options{Flavor: fl})
			parts := `[{"type":"text","text":"hello there"},{"type":"text","text":"@mock *:chunks=2\nagain"}]`
			body := fmt.Sprintf(`{"model":"m","max_tokens":50,"stream":true,"messages":[{"role":"user","content":%s}]}`, parts)
			res := m.do(t, t.Context(), []byte(body), nil)
			if res.resp.StatusCode != 200 {
				t.Fatalf("%d %s", res.resp.StatusCode, res.body)
			}
			if n := len(contentPieces(t, fl, parseSSE(t, res.body))); n != 2 {
				t.Fatalf("directive in a text part: %d pieces", n)
			}
			bad := `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]}`
			if res := m.do(t, t.Context(), []byte(bad), nil); res.resp.StatusCode != 400 {
				t.Fatalf("non-text part: %d", res.resp.StatusCode)
			}
		})
	}
}

func TestBadRequests(t *testing.T) {
	tests := []struct {
		name string
		fl   Flavor
		body string
		want string // substring of the error message
	}{
		{"alpha invalid json", Alpha, `{"model":`, "invalid JSON"},
		{"alpha trailing data", Alpha, `{"model":"m","messages":[{"role":"user","content":"x"}]} {}`, "after the JSON"},
		{"alpha missing model", Alpha, `{"messages":[{"role":"user","content":"x"}]}`, "model is required"},
		{"alpha model with space", Alpha, `{"model":"a b","messages":[{"role":"user","content":"x"}]}`, "without whitespace"},
		{"alpha no messages", Alpha, `{"model":"m","messages":[]}`, "non-empty"},
		{"alpha bad role", Alpha, `{"model":"m","messages":[{"role":"robot","content":"x"}]}`, "role"},
		{"alpha bad content", Alpha, `{"model":"m","messages":[{"role":"user","content":5}]}`, "string or an array"},
		{"alpha max_tokens 0", Alpha, `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"x"}]}`, "at least 1"},
		{"alpha n=2", Alpha, `{"model":"m","n":2,"messages":[{"role":"user","content":"x"}]}`, "n=1"},
		{"alpha stream_options without stream", Alpha, `{"model":"m","stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`, "stream_options"},
		{"alpha temperature type", Alpha, `{"model":"m","temperature":"hot","messages":[{"role":"user","content":"x"}]}`, "invalid JSON"},
		{"alpha bad directive", Alpha, `{"model":"m","messages":[{"role":"user","content":"x\n@mock alpha:explode=1"}]}`, "unknown key"},
		{"beta missing max_tokens", Beta, `{"model":"m","messages":[{"role":"user","content":"x"}]}`, "max_tokens"},
		{"beta only a system message", Beta, `{"model":"m","max_tokens":5,"messages":[{"role":"system","content":"x"}]}`, "at least one user or assistant"},
		{"beta bad role", Beta, `{"model":"m","max_tokens":5,"messages":[{"role":"robot","content":"x"}]}`, "is not one of user, assistant, system"},
		{"beta system message with an image", Beta, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"system","content":[{"type":"image","source":{"type":"url","url":"https://x.invalid/a.png"}}]}]}`, "text blocks only"},
		{"beta bad stop_sequences", Beta, `{"model":"m","max_tokens":5,"stop_sequences":"x","messages":[{"role":"user","content":"x"}]}`, "invalid JSON"},
		{"beta bad directive value", Beta, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"@mock beta:status=200"}]}`, "400..599"},
		{"beta bad directive target", Beta, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"@mock gamma:status=500"}]}`, "unknown target"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMock(t, Options{Flavor: tt.fl})
			res := m.do(t, t.Context(), []byte(tt.body), nil)
			if res.resp.StatusCode != 400 {
				t.Fatalf("status %d: %s", res.resp.StatusCode, res.body)
			}
			typ, _, msg := errorType(t, tt.fl, res.body)
			if typ != "invalid_request_error" || !strings.Contains(msg, tt.want) {
				t.Fatalf("error %q %q, want message containing %q", typ, msg, tt.want)
			}
		})
	}
}

func TestWrongPathAndMethod(t *testing.T) {
	for _, fl := range flavors {
		t.Run(string(fl), func(t *testing.T) {
			m := newMock(t, Options{Flavor: fl})
			other := map[Flavor]string{Alpha: "/v1/messages", Beta: "/v1/chat/completions"}[fl]
			resp, err := m.Client().Post(m.URL+other, "application/json", strings.NewReader(string(reqSpec{user: "x"}.body(fl))))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 404 {
				t.Errorf("other protocol's path: %d", resp.StatusCode)
			}
			resp, err = m.Client().Get(m.URL + m.path())
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
				t.Errorf("GET: %d allow %q", resp.StatusCode, resp.Header.Get("Allow"))
			}
		})
	}
}
