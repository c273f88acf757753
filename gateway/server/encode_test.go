package server

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/wire/openai"
	"github.com/llmgw/llmgw/gateway/usage"
)

// quoted is s as encoding/json writes a string: the answers escape text as
// they always did (<, >, & and U+2028/U+2029 as \u escapes).
func quoted(t testing.TB, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Texts that exercise escaping; all valid UTF-8, as a provider's decoded
// text always is.
var encodeTexts = []string{"Hello, world.", "", "quotes \" and \\ and\nnewlines\t<html> & ünïcödé \u2028 \u2029 \x01 \x7f 😀"}

func TestEncodeCompletionGolden(t *testing.T) {
	u := usageOf(&usage.Record{InputTokens: 25, OutputTokens: 14, CachedInputTokens: 7, ReasoningTokens: 3})
	for _, alias := range []string{"chat-alpha", "a/b:c@d+e<&>"} {
		for _, text := range encodeTexts {
			got := encodeCompletion("req_01ABC", 1796066039, alias, text, "length", u)
			want := `{"id":"chatcmpl-req_01ABC","object":"chat.completion","created":1796066039,"model":` + quoted(t, alias) +
				`,"choices":[{"index":0,"message":{"role":"assistant","content":` + quoted(t, text) + `},"finish_reason":"length"}],` +
				`"usage":{"prompt_tokens":25,"completion_tokens":14,"total_tokens":39,"prompt_tokens_details":{"cached_tokens":7},` +
				`"completion_tokens_details":{"reasoning_tokens":3}}}` + "\n"
			if string(got) != want {
				t.Errorf("text %q:\n got %s\nwant %s", text, got, want)
			}
		}
	}
}

// The relay's chunks, with a short alias and one that needs escapes, and
// with usage asked for (every chunk but the usage one has "usage":null) or
// not (no usage member).
func TestChunkEncoderGolden(t *testing.T) {
	const id, created = "req_01M8PY1NSK0002XJS23DQZYBBV", 1796066039
	for _, alias := range []string{"chat-alpha", "a/b:\"c\"\\ü\u2028" + strings.Repeat("x", 300)} {
		for _, withUsage := range []bool{false, true} {
			var e chunkEncoder
			e.init(id, created, alias, withUsage)
			head := `data: {"id":"chatcmpl-` + id + `","object":"chat.completion.chunk","created":1796066039,"model":` + quoted(t, alias) + `,"choices":[`
			tail := "}\n\n"
			if withUsage {
				tail = `,"usage":null}` + "\n\n"
			}
			want := []string{head + `{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]` + tail}
			got := []string{string(e.role(nil))}
			for _, text := range encodeTexts {
				if text == "" {
					continue
				}
				want = append(want, head+`{"index":0,"delta":{"content":`+quoted(t, text)+`},"finish_reason":null}]`+tail)
				got = append(got, string(e.content(nil, text)))
			}
			want = append(want, head+`{"index":0,"delta":{},"finish_reason":"stop"}]`+tail)
			got = append(got, string(e.finish(nil, "stop")))
			want = append(want, head+`],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,`+
				`"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`+"\n\n")
			got = append(got, string(e.usage(nil, usageOf(&usage.Record{InputTokens: 5, OutputTokens: 2}))))
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("alias %d B, usage %v, event %d:\n got %s\nwant %s", len(alias), withUsage, i, got[i], want[i])
				}
			}
		}
	}
}

// Events append to what the relay's buffer holds.
func TestChunkEncoderAppends(t *testing.T) {
	var e chunkEncoder
	e.init("r", 1, "m", false)
	b := e.content([]byte("data: [x]\n\n"), "a")
	b = e.content(b, "b")
	if want := "data: [x]\n\n" + string(e.content(nil, "a")) + string(e.content(nil, "b")); string(b) != want {
		t.Fatalf("got %q, want %q", b, want)
	}
}

func TestErrorJSONGolden(t *testing.T) {
	for _, c := range []struct {
		e    apiError
		want string
	}{
		{apiError{typ: typeInvalidRequest, code: "invalid_value", param: "messages[0].content", message: "content <b> & \"x\""},
			`{"error":{"message":"content \u003cb\u003e \u0026 \"x\"","type":"invalid_request_error","code":"invalid_value","param":"messages[0].content","request_id":"req_1"}}`},
		{apiError{typ: typeRateLimit, code: "rate_limited", message: "slow down", retryAfter: 1500 * time.Millisecond},
			`{"error":{"message":"slow down","type":"rate_limit_error","code":"rate_limited","param":null,"request_id":"req_1","retry_after_ms":1500}}`},
	} {
		if got := string(appendErrorJSON(nil, &c.e, "req_1")); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
		if got, want := string(appendErrorEvent(nil, &c.e, "req_1")), "data: "+c.want+"\n\n"; got != want {
			t.Errorf("event: got %q, want %q", got, want)
		}
	}
}

// Invalid UTF-8 (which no provider text carries: its decoder replaced it)
// is written as U+FFFD, as encoding/json reads it too.
func TestEncodeInvalidUTF8(t *testing.T) {
	var c openai.ChatCompletion
	body := encodeCompletion("r", 1, "m", "a\xffb", "stop", usageOf(&usage.Record{}))
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatal(err)
	}
	if got := c.Choices[0].Message.Content; got != "a\uFFFDb" {
		t.Fatalf("content %q", got)
	}
}

func BenchmarkEncodeCompletion(b *testing.B) {
	u := usageOf(&usage.Record{InputTokens: 25, OutputTokens: 14})
	b.ReportAllocs()
	for b.Loop() {
		encodeCompletion("req_01M8PY1NSK0002XJS23DQZYBBV", 1796066039, "chat-alpha",
			"Hamlet, prince of Denmark, learns that his uncle murdered his father.", "stop", u)
	}
}

// BenchmarkEncodeChunk is one content chunk of the SSE relay.
func BenchmarkEncodeChunk(b *testing.B) {
	var e chunkEncoder
	e.init("req_01M8PY1NSK0002XJS23DQZYBBV", 1796066039, "chat-alpha", false)
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = e.content(buf[:0], " word")
	}
}
