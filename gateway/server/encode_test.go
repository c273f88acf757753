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
