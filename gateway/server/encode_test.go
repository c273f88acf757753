package server

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The reference the hand-written encoder must match byte for byte.
type completionJSON struct {
	ID      string           `json:"id"`
	Object  string           `json:"object"`
	Created int64            `json:"created"`
	Model   string           `json:"model"`
	Choices []completionItem `json:"choices"`
	Usage   usageJSON        `json:"usage"`
}

type completionItem struct {
	Index        int         `json:"index"`
	Message      messageJSON `json:"message"`
	FinishReason string      `json:"finish_reason"`
}

type messageJSON struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func TestEncodeCompletionMatchesMarshal(t *testing.T) {
	u := usageJSON{PromptTokens: 25, CompletionTokens: 14, TotalTokens: 39}
	u.PromptTokensDetails.CachedTokens = 7
	u.CompletionTokensDetails.ReasoningTokens = 3
	for _, c := range []struct{ alias, text, finish string }{
		{"chat-alpha", "Hello, world.", "stop"},
		{"a/b:c@d+e", "", "length"},
		{"chat", "quotes \" and \\ and\nnewlines\t<html> & ünïcödé \u2028 \x01 \xff", "content_filter"},
	} {
		want, err := json.Marshal(completionJSON{
			ID: "chatcmpl-req_01ABC", Object: "chat.completion", Created: 1796066039, Model: c.alias,
			Choices: []completionItem{{Message: messageJSON{Role: "assistant", Content: c.text}, FinishReason: c.finish}},
			Usage:   u,
		})
		if err != nil {
			t.Fatal(err)
		}
		got := encodeCompletion("req_01ABC", 1796066039, c.alias, c.text, c.finish, u)
		if !bytes.Equal(got, append(want, '\n')) {
			t.Errorf("text %q:\n got %s\nwant %s", c.text, got, want)
		}
	}
}

func BenchmarkEncodeCompletion(b *testing.B) {
	u := usageJSON{PromptTokens: 25, CompletionTokens: 14, TotalTokens: 39}
	b.ReportAllocs()
	for b.Loop() {
		encodeCompletion("req_01M8PY1NSK0002XJS23DQZYBBV", 1796066039, "chat-alpha",
			"Hamlet, prince of Denmark, learns that his uncle murdered his father.", "stop", u)
	}
}

func BenchmarkEncodeCompletionMarshal(b *testing.B) {
	u := usageJSON{PromptTokens: 25, CompletionTokens: 14, TotalTokens: 39}
	b.ReportAllocs()
	for b.Loop() {
		out, _ := json.Marshal(completionJSON{
			ID: "chatcmpl-req_01M8PY1NSK0002XJS23DQZYBBV", Object: "chat.completion", Created: 1796066039, Model: "chat-alpha",
			Choices: []completionItem{{Message: messageJSON{Role: "assistant",
				Content: "Hamlet, prince of Denmark, learns that his uncle murdered his father."}, FinishReason: "stop"}},
			Usage: u,
		})
		_ = append(out, '\n')
	}
}

// The chunks' reference: OpenAI's chat.completion.chunk as json.Marshal
// writes it (usage present only when the caller asked for it).
type chunkJSON struct {
	ID      string      `json:"id"`
	Object  string      `json:"object"`
	Created int64       `json:"created"`
	Model   string      `json:"model"`
	Choices []chunkItem `json:"choices"`
	Usage   *usageJSON  `json:"usage,omitempty"`
}

type chunkItem struct {
	Index        int       `json:"index"`
	Delta        deltaJSON `json:"delta"`
	FinishReason *string   `json:"finish_reason"`
}

type deltaJSON struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

// The relay's chunks are byte for byte what json.Marshal writes, with a
// short alias (the prefix in the encoder's own storage) and one longer than
// that storage, and with usage asked for or not.
func TestChunkEncoderMatchesMarshal(t *testing.T) {
	const id, created = "req_01M8PY1NSK0002XJS23DQZYBBV", 1796066039
	str := func(s string) *string { return &s }
	for _, alias := range []string{"chat-alpha", "a/b:\"c\"\\ü\u2028" + string(bytes.Repeat([]byte("x"), 300))} {
		for _, withUsage := range []bool{false, true} {
			var e chunkEncoder
			e.init(id, created, alias, withUsage)
			event := func(c chunkJSON) string {
				c.ID, c.Object, c.Created, c.Model = "chatcmpl-"+id, "chat.completion.chunk", created, alias
				b, err := json.Marshal(c)
				if err != nil {
					t.Fatal(err)
				}
				if withUsage && c.Usage == nil { // the usage member of every other chunk is null
					b = append(b[:len(b)-1], `,"usage":null}`...)
				}
				return "data: " + string(b) + "\n\n"
			}
			u := usageJSON{PromptTokens: 5, CompletionTokens: 2, TotalTokens: 7}
			for _, c := range []struct{ got, want string }{
				{string(e.role(nil)), event(chunkJSON{Choices: []chunkItem{{Delta: deltaJSON{Role: "assistant", Content: str("")}}}})},
				{string(e.content(nil, "quotes \" \\ \n ü \x01")), event(chunkJSON{Choices: []chunkItem{{Delta: deltaJSON{Content: str("quotes \" \\ \n ü \x01")}}}})},
				{string(e.finish(nil, "stop")), event(chunkJSON{Choices: []chunkItem{{FinishReason: str("stop")}}})},
				{string(e.usage(nil, u)), event(chunkJSON{Choices: []chunkItem{}, Usage: &u})},
			} {
				if c.got != c.want {
					t.Errorf("alias %d B, usage %v:\n got %s\nwant %s", len(alias), withUsage, c.got, c.want)
				}
			}
		}
	}
}
