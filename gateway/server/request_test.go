package server

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/tokens"
)

var testLimits = limits{maxMessages: 4, maxContentChars: 50}

func TestParseChatRequestAccepts(t *testing.T) {
	cases := []struct {
		name, body string
		check      func(t *testing.T, p *parsedRequest)
	}{
		{"minimal", `{"model":"m","messages":[{"role":"user","content":"hi there"}]}`, func(t *testing.T, p *parsedRequest) {
			if p.alias != "m" || p.stream || p.inputTokens != 2 || p.maxTokens != nil {
				t.Fatalf("%+v", p)
			}
		}},
		{"what the gateway reads", `{"model":"m","messages":[{"role":"developer","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a "},{"type":"text","text":"b"}]},{"role":"assistant","content":"ok"}],
			"stream":true,"stream_options":{"include_usage":true},"max_tokens":5}`,
			func(t *testing.T, p *parsedRequest) {
				if !p.stream || !p.includeUsage || *p.maxTokens != 5 || p.inputTokens != 5 {
					t.Fatalf("%+v", p)
				}
			}},
		{"max_completion_tokens", `{"model":"m","messages":[{"role":"user","content":"x"}],"max_completion_tokens":7}`, func(t *testing.T, p *parsedRequest) {
			if *p.maxTokens != 7 {
				t.Fatal(*p.maxTokens)
			}
		}},
		// What the gateway does not read is the provider's to judge: passed
		// through to a route of the same protocol, translated or refused by
		// a route of another (gateway/translate).
		{"agents' traffic", `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]},
			{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"42","name":"f"}],
			"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"auto","parallel_tool_calls":false,
			"response_format":{"type":"json_object"},"n":2,"logprobs":true,"seed":1,"temperature":3,"stop":5,"user":5,"frobnicate":{"x":[1]}}`,
			func(t *testing.T, p *parsedRequest) {
				if p.inputTokens < imageTokens+3 {
					t.Fatalf("the estimate leaves out the image or the tools: %d", p.inputTokens)
				}
			}},
		{"explicit nulls", `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":null,"seed":null,"stream":null,"max_tokens":null}`, nil},
		{"content null", `{"model":"m","messages":[{"role":"assistant","content":null}]}`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, e := parseChatRequest([]byte(tc.body), testLimits, tokens.Count)
			if e != nil {
				t.Fatalf("rejected: %v", e)
			}
			if string(p.body) != tc.body {
				t.Fatal("the body is not kept as sent")
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

func TestParseChatRequestRejects(t *testing.T) {
	msg := `"messages":[{"role":"user","content":"x"}]`
	cases := []struct {
		name, body, code, param string
	}{
		{"malformed JSON", `{"model":`, "invalid_json", ""},
		{"not an object", `[1,2]`, "invalid_json", ""},
		{"trailing data", `{"model":"m",` + msg + `} {}`, "invalid_json", ""},
		{"missing model", `{` + msg + `}`, "missing_field", "model"},
		{"model wrong type", `{"model":5,` + msg + `}`, "invalid_type", "model"},
		{"model with control chars", `{"model":"a\nb",` + msg + `}`, "invalid_value", "model"},
		{"no messages", `{"model":"m","messages":[]}`, "missing_field", "messages"},
		{"messages not an array", `{"model":"m","messages":{}}`, "invalid_type", "messages"},
		{"too many messages", `{"model":"m","messages":[` + strings.Repeat(`{"role":"user","content":"x"},`, 4) + `{"role":"user","content":"x"}]}`, "too_many_messages", "messages"},
		{"content too long", `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("a", 51) + `"}]}`, "content_too_long", "messages[0].content"},
		{"content too long in parts", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"` + strings.Repeat("a", 30) + `"},{"type":"text","text":"` + strings.Repeat("a", 30) + `"}]}]}`, "content_too_long", "messages[0].content"},
		{"content number", `{"model":"m","messages":[{"role":"user","content":5}]}`, "invalid_type", "messages[0].content"},
		{"message not an object", `{"model":"m","messages":["x"]}`, "invalid_type", "messages[0]"},
		{"part not an object", `{"model":"m","messages":[{"role":"user","content":[5]}]}`, "invalid_type", "messages[0].content[0]"},
		{"stream wrong type", `{"model":"m",` + msg + `,"stream":"yes"}`, "invalid_type", "stream"},
		{"stream_options without stream", `{"model":"m",` + msg + `,"stream_options":{"include_usage":true}}`, "invalid_value", "stream_options"},
		{"include_usage wrong type", `{"model":"m",` + msg + `,"stream":true,"stream_options":{"include_usage":1}}`, "invalid_type", "stream_options.include_usage"},
		{"max_tokens zero", `{"model":"m",` + msg + `,"max_tokens":0}`, "invalid_value", "max_tokens"},
		{"max_tokens float", `{"model":"m",` + msg + `,"max_tokens":1.5}`, "invalid_type", "max_tokens"},
		{"both max fields", `{"model":"m",` + msg + `,"max_tokens":1,"max_completion_tokens":1}`, "invalid_value", "max_completion_tokens"},
		{"case-variant of a field the gateway reads", `{"model":"m",` + msg + `,"Stream":true}`, "duplicate_field", "Stream"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, e := parseChatRequest([]byte(tc.body), testLimits, tokens.Count)
			if e == nil {
				t.Fatal("accepted")
			}
			if e.status != 400 || e.typ != typeInvalidRequest || e.code != tc.code || e.param != tc.param {
				t.Fatalf("got %d %s/%s param %q, want %s param %q (%s)", e.status, e.typ, e.code, e.param, tc.code, tc.param, e.message)
			}
		})
	}
}

// The error message never quotes the caller's content.
func TestParseErrorsDoNotEchoContent(t *testing.T) {
	secret := "TOPSECRETPROMPT"
	for _, body := range []string{
		`{"model":"m","messages":[{"role":"user","content":"` + secret + strings.Repeat("a", 60) + `"}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"` + secret + strings.Repeat("a", 60) + `"}]}]}`,
		`{"model":"` + secret + "\n" + `","messages":[{"role":"user","content":"x"}]}`,
	} {
		_, e := parseChatRequest([]byte(body), testLimits, tokens.Count)
		if e == nil || strings.Contains(e.message, secret) {
			t.Fatalf("error %v echoes content", e)
		}
	}
}

// Bodies as the OpenAI SDKs send them, and shapes at the edges of what the
// decoder accepts: the seeds of FuzzParseChatRequest.
var (
	requestsSDK = []string{
		`{"model":"chat-alpha","messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello \"there\"\n\u00e9\ud83d\ude00"}],` +
			`"model":"chat-alpha","stream":true,"stream_options":{"include_usage":true},"max_tokens":256,"temperature":0.2,"top_p":1,"user":"u-1","n":1}`,
		` { "model" : "m" , "messages" : [ { "content" : "x" , "role" : "assistant" } ] , "stream" : false } `,
		`{"model":"m","messages":[],"stop":"END"}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"stop":["a","b\\n"],"max_completion_tokens":7}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"stop":[],"stream":null,"stream_options":null,"user":null}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":null,"temperature":null,"top_p":-0,"n":null}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":1.5e-1,"top_p":0.95,"max_tokens":-3,"stream_options":{}}`,
		"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"caf\u00e9 \xf0\x9f\x98\x80\"}]}", // raw UTF-8
		`{"model":"m","messages":[{"role":"","content":""}]}`,                                             // decoded, then refused by the checks after it
		`{}`,
	}
	requestsEdge = []string{
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`, // content parts
		`{"model":"m","messages":[{"role":"user","content":null}]}`,
		`{"model":"m","messages":[{"role":"user","content":"x","name":"bob"}]}`,  // unknown member
		`{"model":"m","messages":[{"role":"user","role":"user","content":"x"}]}`, // duplicate
		`{"model":"m","model":"n","messages":[]}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[]}`, // unsupported
		`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":null}`,
		`{"Model":"m","messages":[]}`, // case variant
		`{"mod\u0065l":"m","messages":[]}`,
		`{"model":null,"messages":[]}`,
		`{"model":1,"messages":[]}`,
		`{"model":"m","messages":null}`,
		`{"model":"m","messages":[null]}`,
		`{"model":"m","messages":["x"]}`,
		`{"model":"m","messages":[{"role":null,"content":"x"}]}`,
		`{"model":"m","messages":[],"max_tokens":1.0}`,
		`{"model":"m","messages":[],"max_tokens":1e2}`,
		`{"model":"m","messages":[],"max_tokens":99999999999999999999}`,
		`{"model":"m","messages":[],"temperature":1e999}`,
		`{"model":"m","messages":[],"temperature":"1"}`,
		`{"model":"m","messages":[],"stream":"true"}`,
		`{"model":"m","messages":[],"stream":tru}`,
		`{"model":"m","messages":[],"stream_options":{"include_usage":true,"include_usage":false}}`,
		`{"model":"m","messages":[],"stream_options":{"other":1}}`,
		`{"model":"m","messages":[],"stop":["a",]}`,
		`{"model":"m","messages":[],"stop":["a",1]}`,
		`{"model":"m","messages":[],"stop":[{"a":1,"a":2}]}`,
		`{"model":"m","messages":[],"stop":null}`,
		`{"model":"m","messages":[],"stop":5}`,
		`{"model":"m","messages":[],"user":5}`,
		`{"model":"m","messages":[]} x`,
		`{"model":"m","messages":[]}{}`,
		`{"model":"m","messages":[],}`,
		`{"model":"m" "messages":[]}`,
		"{\"model\":\"m\xff\",\"messages\":[]}", // invalid UTF-8
		`{"model":"\ud800","messages":[]}`,      // a lone surrogate
		`[]`,
		``,
		"\xef\xbb\xbf{}", // a byte-order mark
	}
)

func FuzzParseChatRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stop":["a"]}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"max_tokens":3}`))
	f.Add([]byte(`{"model":1}`))
	f.Add([]byte(`[]`))
	for _, s := range append(append([]string(nil), requestsSDK...), requestsEdge...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, e := parseChatRequest(body, testLimits, tokens.Count)
		if (p == nil) == (e == nil) {
			t.Fatal("exactly one of request and error must be set")
		}
		if e != nil && (e.code == "" || e.typ != typeInvalidRequest ||
			e.status != 400 && (e.status != http.StatusUnsupportedMediaType || e.code != "unsupported_content_encoding")) {
			t.Fatalf("unstable error %+v", e)
		}
		if e != nil && (utf8.RuneCountInString(e.param) > maxParamChars || !safeText(e.param) || !safeText(e.message)) {
			t.Fatalf("error quotes an unsafe name: %+v", e)
		}
		if p != nil && (p.alias == "" || p.inputTokens < 0 || !bytes.Equal(p.body, body)) {
			t.Fatalf("accepted an invalid request: %+v", p)
		}
	})
}

// Issue 11, strict and safe parsing: every row here was accepted, or answered
// differently, before the decoder moved to encoding/json/v2 semantics.
func TestParseChatRequestStrict(t *testing.T) {
	msg := `"messages":[{"role":"user","content":"x"}]`
	key, _, _, err := keyformat.Generate()
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(`{"model":"m",` + msg + `}`))
	_ = zw.Close()
	cases := []struct {
		name, body  string
		status      int
		code, param string
		msgHas      string
	}{
		// A proxy that matches names case-insensitively, or keeps the first of
		// two duplicates, would have read "chat-restricted".
		{"case-variant top-level name", `{"Model":"chat-restricted","model":"chat-alpha",` + msg + `}`, 400, "duplicate_field", "Model", `only in case`},
		{"case-variant after the name", `{"model":"chat-alpha","MODEL":"chat-restricted",` + msg + `}`, 400, "duplicate_field", "MODEL", ""},
		{"case-variant stream", `{"model":"m",` + msg + `,"STREAM":true}`, 400, "duplicate_field", "STREAM", ""},
		{"duplicate model", `{"model":"chat-restricted","model":"chat-alpha",` + msg + `}`, 400, "duplicate_field", "model", `duplicate field "model"`},
		{"duplicate role", `{"model":"m","messages":[{"role":"system","role":"user","content":"x"}]}`, 400, "duplicate_field", "messages[0].role", ""},
		{"duplicate in a text part", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}]}`, 400, "duplicate_field", "messages[0].content[0].text", ""},
		{"duplicate in a member the gateway does not read", `{"model":"m",` + msg + `,"tools":[{"type":"function","type":"x"}]}`, 400, "duplicate_field", "tools[0].type", ""},
		{"tools then tools:null", `{"model":"m",` + msg + `,"tools":[{"type":"function"}],"tools":null}`, 400, "duplicate_field", "tools", ""},
		{"invalid UTF-8 in content", "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\xffb\"}]}", 400, "invalid_utf8", "messages[0].content", ""},
		{"invalid UTF-8 in model", "{\"model\":\"m\xc3\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", 400, "invalid_utf8", "model", ""},
		{"invalid UTF-8 in an ignored part field", "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"x\",\"x\":\"\xff\"}]}]}", 400, "invalid_utf8", "messages[0].content[0].x", ""},
		{"unpaired surrogate escape", `{"model":"m","messages":[{"role":"user","content":"\ud800"}]}`, 400, "invalid_json", "", ""},
		{"max_tokens 1.5", `{"model":"m",` + msg + `,"max_tokens":1.5}`, 400, "invalid_type", "max_tokens", "max_tokens must be an integer"},
		{"max_tokens as a string", `{"model":"m",` + msg + `,"max_tokens":"5"}`, 400, "invalid_type", "max_tokens", "max_tokens must be an integer"},
		{"max_tokens overflows", `{"model":"m",` + msg + `,"max_tokens":99999999999999999999999}`, 400, "invalid_value", "max_tokens", "out of range"},
		{"stream wrong type has a path", `{"model":"m",` + msg + `,"stream":5}`, 400, "invalid_type", "stream", "must be a boolean"},
		{"gzip body", gz.String(), 415, "unsupported_content_encoding", "", "must not be compressed"},
		{"zstd body", "\x28\xb5\x2f\xfd\x00", 415, "unsupported_content_encoding", "", ""},
		{"duplicate name like a key in a part", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a","` + key + `":1,"` + key + `":2}]}]}`, 400, "duplicate_field", "messages[0].content[0]." + key[:len("lgw_")+10+1] + "<redacted>", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, e := parseChatRequest([]byte(tc.body), testLimits, tokens.Count)
			if e == nil {
				t.Fatal("accepted")
			}
			if e.status != tc.status || e.typ != typeInvalidRequest || e.code != tc.code || e.param != tc.param {
				t.Fatalf("got %d %s/%s param %q, want %d %s param %q (%s)", e.status, e.typ, e.code, e.param, tc.status, tc.code, tc.param, e.message)
			}
			if !strings.Contains(e.message, tc.msgHas) {
				t.Fatalf("message %q lacks %q", e.message, tc.msgHas)
			}
			if strings.Contains(e.message+e.param, key) || keyformat.LooksLikeKey(e.message+e.param) {
				t.Fatalf("error echoes a key: %+v", e)
			}
			if utf8.RuneCountInString(e.param) > maxParamChars || !safeText(e.param) || !safeText(e.message) {
				t.Fatalf("unsafe param or message: %q / %q", e.param, e.message)
			}
		})
	}
}

func TestSafeName(t *testing.T) {
	key, _, _, err := keyformat.Generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{key, "xx" + key + "yy", strings.Repeat("z", 30) + key, "\x00\u202e\"\\\xff" + key, strings.Repeat("é", 200)} {
		out := safeName(in)
		if strings.Contains(out, key[len(key)-20:]) || keyformat.LooksLikeKey(out) || utf8.RuneCountInString(out) > maxNameChars || !safeText(out) {
			t.Errorf("safeName(%q) = %q", in, out)
		}
	}
	if got := safeName("frobnicate"); got != "frobnicate" {
		t.Errorf("a plain name changed: %q", got)
	}
}

// A declared Content-Encoding other than identity is refused with 415.
func TestCheckContentEncoding(t *testing.T) {
	for _, tc := range []struct {
		values []string
		reject bool
	}{
		{nil, false}, {[]string{"identity"}, false}, {[]string{"IDENTITY"}, false}, {[]string{""}, false},
		{[]string{"gzip"}, true}, {[]string{"br"}, true}, {[]string{"identity, gzip"}, true},
		{[]string{"identity", "deflate"}, true}, {[]string{"zstd"}, true},
	} {
		h := http.Header{}
		for _, v := range tc.values {
			h.Add("Content-Encoding", v)
		}
		e := checkContentEncoding(h)
		if (e != nil) != tc.reject {
			t.Fatalf("%q: got %v, want reject=%v", tc.values, e, tc.reject)
		}
		if e != nil && (e.status != http.StatusUnsupportedMediaType || e.typ != typeInvalidRequest || e.code != "unsupported_content_encoding") {
			t.Fatalf("%q: %d %s/%s", tc.values, e.status, e.typ, e.code)
		}
	}
}

// safeText: valid UTF-8, printable, no quote or backslash from a caller's name
// (the message's own quotes around a name excepted).
func safeText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// Error lets test failures print an apiError readably; the gateway itself
// never treats one as an error value.
func (e *apiError) Error() string { return e.typ + "/" + e.code + ": " + e.message }
