package anthropic

import (
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
)

func ptr[T any](v T) *T { return &v }

// TestMarshalGolden holds the bytes jsonv2.Marshal writes for each shape.
func TestMarshalGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"request", &MessagesRequest{
			Model: "m", System: Text("be brief"), Messages: []Message{{Role: "user", Content: Text("hi")}},
			MaxTokens: ptr(4096), Temperature: ptr(1.0), StopSequences: []string{"x"}, Metadata: &Metadata{UserID: "u"}, Stream: true,
		}, `{"model":"m","system":"be brief","messages":[{"role":"user","content":"hi"}],"max_tokens":4096,"temperature":1,"stop_sequences":["x"],"metadata":{"user_id":"u"},"stream":true}`},
		{"message", &MessageResponse{
			ID: "msg_1", Type: TypeMessage, Role: RoleAssistant, Model: "b",
			Content: []ContentBlock{TextBlock("ok")}, StopReason: ptr("end_turn"),
			Usage: &Usage{InputTokens: ptr(3), CacheReadInputTokens: ptr(2), OutputTokens: ptr(1)},
		}, `{"id":"msg_1","type":"message","role":"assistant","model":"b","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"cache_read_input_tokens":2,"output_tokens":1}}`},
		{"content_block_delta", &ContentBlockDelta{Type: EventContentBlockDelta, Delta: Delta{Type: DeltaText, Text: "he"}},
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"he"}}`},
		{"message_delta", &MessageDelta{Type: EventMessageDelta, Delta: MessageDeltaBody{StopReason: "max_tokens"}, Usage: &Usage{OutputTokens: ptr(9)}},
			`{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":9}}`},
		{"error", &ErrorResponse{Type: TypeError, Error: ErrorDetail{Type: "overloaded_error", Message: "busy"}},
			`{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`},
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

// TestMessageStartRoundTrip reads a message_start as the protocol sends it
// (usage without cache members, stop_reason null) and writes it back.
func TestMessageStartRoundTrip(t *testing.T) {
	const in = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"b","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1}}}`
	var ev MessageStart
	if err := jsonv2.Unmarshal([]byte(in), &ev); err != nil {
		t.Fatal(err)
	}
	u := ev.Message.Usage
	if u == nil || u.InputTokens == nil || *u.InputTokens != 12 || u.CacheReadInputTokens != nil || ev.Message.StopReason != nil {
		t.Fatalf("read %+v", ev.Message)
	}
	b, err := jsonv2.Marshal(&ev)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != in {
		t.Errorf("got  %s\nwant %s", b, in)
	}
}
