package server_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// sseEvents splits a raw event-stream body into the data payloads of its
// events, failing on anything that is not `data: ...` framing.
func sseEvents(t *testing.T, body []byte) []string {
	t.Helper()
	if !bytes.HasSuffix(body, []byte("\n\n")) {
		t.Fatalf("stream does not end with a blank line: %q", truncate(string(body)))
	}
	var out []string
	for _, ev := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		if !strings.HasPrefix(ev, "data: ") || strings.Contains(ev, "\n") {
			t.Fatalf("unexpected SSE framing: %q", ev)
		}
		out = append(out, strings.TrimPrefix(ev, "data: "))
	}
	return out
}

type streamSummary struct {
	content    string
	contentN   int
	errors     []errorBody
	done       int
	doneIsLast bool
	usage      *struct{ Prompt, Completion, Total int }
	finish     string
}

// summarize checks every event is valid JSON (or the one [DONE]) and
// collects what a client would see.
func summarize(t *testing.T, events []string) streamSummary {
	t.Helper()
	var s streamSummary
	for i, ev := range events {
		if ev == "[DONE]" {
			s.done++
			s.doneIsLast = i == len(events)-1
			continue
		}
		var probe map[string]json.RawMessage
		if err := json.Unmarshal([]byte(ev), &probe); err != nil {
			t.Fatalf("event %d is not JSON: %q", i, ev)
		}
		if _, ok := probe["error"]; ok {
			var e errorBody
			_ = json.Unmarshal([]byte(ev), &e)
			s.errors = append(s.errors, e)
			continue
		}
		var c struct {
			Object  string `json:"object"`
			Model   string `json:"model"`
			Choices []struct {
				Delta struct {
					Content *string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
				Total      int `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if c.Object != "chat.completion.chunk" {
			t.Fatalf("event %d object %q", i, c.Object)
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil && *ch.Delta.Content != "" {
				s.content += *ch.Delta.Content
				s.contentN++
			}
			if ch.FinishReason != nil {
				s.finish = *ch.FinishReason
			}
		}
		if c.Usage != nil {
			s.usage = &struct{ Prompt, Completion, Total int }{c.Usage.Prompt, c.Usage.Completion, c.Usage.Total}
		}
	}
	return s
}
