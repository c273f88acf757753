package server_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// finishReasons is a span's gen_ai.response.finish_reasons, which must be a
// string array; ok false when the span has none.
func finishReasons(t *testing.T, s sdktrace.ReadOnlySpan) (reasons []string, ok bool) {
	t.Helper()
	for _, kv := range s.Attributes() {
		if kv.Key != "gen_ai.response.finish_reasons" {
			continue
		}
		if kv.Value.Type() != attribute.STRINGSLICE {
			t.Fatalf("gen_ai.response.finish_reasons is a %s, want a string array", kv.Value.Type())
		}
		return kv.Value.AsStringSlice(), true
	}
	return nil, false
}

// The server span says why the model stopped, as the answering provider
// said it in its own protocol, for a JSON answer and a stream, passed
// through or translated either way: a Messages request answered by the
// OpenAI mock (alpha) carries alpha's finish_reason though its caller reads
// a stop_reason, a chat request answered by the Anthropic mock (beta)
// beta's stop_reason though its caller reads a finish_reason. A request
// whose provider has no reason to give (embeddings) has none.
func TestTraceFinishReasons(t *testing.T) {
	tracer, sr := traceOn()
	ts := newTraceStack(t, tracer, sr)
	const prompt = "Count the stones on a quiet beach"
	messages := []string{"Anthropic-Version", "2023-06-01"}
	tests := []struct {
		name, path, body string
		headers          []string
		want             []string // nil: no attribute
		// says: what the answer the caller read says of the reason, in its
		// own protocol ("" not checked).
		says string
	}{
		{"chat JSON", "/v1/chat/completions", `{"model":"chat-alpha","messages":[{"role":"user","content":"` + prompt + `"}]}`,
			nil, []string{"stop"}, `"finish_reason":"stop"`},
		{"chat JSON cut", "/v1/chat/completions", `{"model":"chat-alpha","max_tokens":2,"messages":[{"role":"user","content":"` + prompt + `"}]}`,
			nil, []string{"length"}, `"finish_reason":"length"`},
		{"chat stream", "/v1/chat/completions", `{"model":"chat-alpha","stream":true,"max_tokens":2,"messages":[{"role":"user","content":"` + prompt + `"}]}`,
			nil, []string{"length"}, `"finish_reason":"length"`},
		{"messages to openai", "/v1/messages", `{"model":"chat-alpha","max_tokens":2,"messages":[{"role":"user","content":"` + prompt + `"}]}`,
			messages, []string{"length"}, `"stop_reason":"max_tokens"`},
		{"messages stream to openai", "/v1/messages", `{"model":"chat-alpha","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"` + prompt + `"}]}`,
			messages, []string{"stop"}, `"stop_reason":"end_turn"`},
		{"chat to anthropic", "/v1/chat/completions", `{"model":"chat-beta","messages":[{"role":"user","content":"` + prompt + `"}]}`,
			nil, []string{"end_turn"}, `"finish_reason":"stop"`},
		{"chat stream to anthropic", "/v1/chat/completions", `{"model":"chat-beta","stream":true,"max_tokens":2,"messages":[{"role":"user","content":"` + prompt + `"}]}`,
			nil, []string{"max_tokens"}, `"finish_reason":"length"`},
		{"messages stream", "/v1/messages", `{"model":"chat-beta","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"` + prompt + `"}]}`,
			messages, []string{"end_turn"}, `"stop_reason":"end_turn"`},
		// alpha serves the Responses API itself: passed through.
		{"responses stream", "/v1/responses", `{"model":"chat-alpha","stream":true,"max_output_tokens":16,"input":"` + prompt + `"}`,
			nil, []string{"max_output_tokens"}, `"reason":"max_output_tokens"`},
		{"responses to anthropic", "/v1/responses", `{"model":"chat-beta","max_output_tokens":16,"input":"` + prompt + `"}`,
			nil, []string{"max_tokens"}, `"reason":"max_output_tokens"`},
		{"responses stream to anthropic", "/v1/responses", `{"model":"chat-beta","stream":true,"input":"` + prompt + `"}`,
			nil, []string{"end_turn"}, `"status":"completed"`},
		{"embeddings", "/v1/embeddings", `{"model":"embed-alpha","input":"` + prompt + `"}`, nil, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.post(tc.path, ts.keyA, tc.body, tc.headers...)
			if r.status != http.StatusOK {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if !strings.Contains(string(r.body), tc.says) {
				t.Fatalf("the answer does not say %s: %s", tc.says, r.body)
			}
			srv := ts.traceFor(r.header.Get("X-Request-Id")).server
			got, ok := finishReasons(t, srv)
			switch {
			case tc.want == nil && ok:
				t.Errorf("gen_ai.response.finish_reasons %q, want none", got)
			case tc.want != nil && !slices.Equal(got, tc.want):
				t.Errorf("gen_ai.response.finish_reasons %q (set %v), want %q", got, ok, tc.want)
			}
		})
	}
	ts.assertNoText(prompt)
}

// A request refused before any provider answered has no reason.
func TestTraceFinishReasonsOfARefusal(t *testing.T) {
	tracer, sr := traceOn()
	ts := newTraceStack(t, tracer, sr)
	r := ts.post("/v1/chat/completions", ts.keyA, chatBody("no-such-alias", false, ""))
	if r.status == http.StatusOK {
		t.Fatalf("status %d for an unknown alias", r.status)
	}
	if got, ok := finishReasons(t, ts.traceFor(r.header.Get("X-Request-Id")).server); ok {
		t.Errorf("gen_ai.response.finish_reasons %q on a refused request", got)
	}
}
