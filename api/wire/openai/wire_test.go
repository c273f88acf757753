package openai

import (
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
)

func ptr[T any](v T) *T { return &v }

// golden holds the bytes jsonv2.Marshal writes for each shape, in the order
// and with the members clients and providers get.
func TestMarshalGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"request", &ChatCompletionRequest{
			Model: "m", Messages: []Message{{Role: "user", Content: Text("hi <b>")}},
			MaxTokens: ptr(5), Temperature: ptr(0.5), Stream: ptr(true),
			StreamOptions: &StreamOptions{IncludeUsage: ptr(true)},
		}, `{"model":"m","messages":[{"role":"user","content":"hi <b>"}],"max_tokens":5,"temperature":0.5,"stream":true,"stream_options":{"include_usage":true}}`},
		{"completion", &ChatCompletion{
			ID: "chatcmpl-1", Object: ObjectCompletion, Created: 7, Model: "a",
			Choices: []Choice{{Message: ResponseMessage{Role: "assistant", Content: ptr("ok")}, FinishReason: "stop"}},
			Usage: &Usage{PromptTokens: 3, CompletionTokens: 1, TotalTokens: 4,
				PromptTokensDetails: &PromptTokensDetails{CachedTokens: 2}, CompletionTokensDetails: &CompletionTokensDetails{}},
		}, `{"id":"chatcmpl-1","object":"chat.completion","created":7,"model":"a","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4,"prompt_tokens_details":{"cached_tokens":2},"completion_tokens_details":{"reasoning_tokens":0}}}`},
		{"role chunk without usage", &ChatCompletionChunk{
			ID: "c", Object: ObjectChunk, Created: 1, Model: "a",
			Choices: []ChunkChoice{{Delta: Delta{Role: "assistant", Content: ptr("")}}},
		}, `{"id":"c","object":"chat.completion.chunk","created":1,"model":"a","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`},
		{"finish chunk with usage null", &ChatCompletionChunk{
			ID: "c", Object: ObjectChunk, Created: 1, Model: "a",
			Choices: []ChunkChoice{{FinishReason: ptr("stop")}}, Usage: ChunkUsage{Null: true},
		}, `{"id":"c","object":"chat.completion.chunk","created":1,"model":"a","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`},
		{"usage chunk", &ChatCompletionChunk{
			ID: "c", Object: ObjectChunk, Created: 1, Model: "a",
			Choices: []ChunkChoice{}, Usage: ChunkUsage{Usage: &Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}},
		}, `{"id":"c","object":"chat.completion.chunk","created":1,"model":"a","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`},
		{"error", &ErrorResponse{Error: ErrorDetail{Message: "no", Type: "invalid_request_error", Code: Text("bad"), RequestID: ptr("r1")}},
			`{"error":{"message":"no","type":"invalid_request_error","code":"bad","param":null,"request_id":"r1"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := jsonv2.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("got  %s\nwant %s", b, tc.want)
			}
		})
	}
}

// TestChunkUsageRoundTrip reads each form of a chunk's usage and writes it back.
func TestChunkUsageRoundTrip(t *testing.T) {
	const head = `{"id":"c","object":"chat.completion.chunk","created":1,"model":"a","choices":[]`
	for _, tc := range []struct {
		in        string
		null, has bool
	}{
		{head + `}`, false, false},
		{head + `,"usage":null}`, true, false},
		{head + `,"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"completion_tokens_details":{"reasoning_tokens":4}}}`, false, true},
	} {
		var c ChatCompletionChunk
		if err := jsonv2.Unmarshal([]byte(tc.in), &c); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if c.Usage.Null != tc.null || (c.Usage.Usage != nil) != tc.has {
			t.Errorf("%s: read %+v", tc.in, c.Usage)
		}
		b, err := jsonv2.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.in {
			t.Errorf("round trip: got %s, want %s", b, tc.in)
		}
	}
}

// A chunk marshaled by value writes its usage as one marshaled by pointer.
func TestChunkByValue(t *testing.T) {
	c := ChatCompletionChunk{ID: "c", Choices: []ChunkChoice{}, Usage: ChunkUsage{Null: true}}
	byValue, err := jsonv2.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	byPointer, err := jsonv2.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	if string(byValue) != string(byPointer) {
		t.Fatalf("by value %s, by pointer %s", byValue, byPointer)
	}
}

func TestCodeString(t *testing.T) {
	for raw, want := range map[string]string{`"rate_limit_exceeded"`: "rate_limit_exceeded", `null`: "", `429`: "", ``: ""} {
		d := ErrorDetail{Code: []byte(raw)}
		if got := d.CodeString(); got != want {
			t.Errorf("CodeString(%s) = %q, want %q", raw, got, want)
		}
	}
}
