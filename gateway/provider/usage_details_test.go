package provider

import (
	"errors"
	"io"
	"reflect"
	"testing"
)

// TestUsageDetails: cached and reasoning token counts are read from both
// protocols' usage objects, JSON and streamed, and are absent (zero) when the
// provider leaves the details out.
func TestUsageDetails(t *testing.T) {
	full := Usage{InputTokens: 10, CachedInputTokens: 4, OutputTokens: 7, ReasoningTokens: 3}
	oaiUsage := `"usage":{"prompt_tokens":10,"completion_tokens":7,"total_tokens":17,` +
		`"prompt_tokens_details":{"cached_tokens":4,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":3}}`
	t.Run("openai json", func(t *testing.T) {
		for _, tc := range []struct {
			name, body string
			want       Usage
		}{
			{"details", `{"choices":[{"message":{"content":"a"},"finish_reason":"stop"}],` + oaiUsage + `}`, full},
			{"no details", `{"choices":[{"message":{"content":"a"}}],"usage":{"prompt_tokens":10,"completion_tokens":7}}`,
				Usage{InputTokens: 10, OutputTokens: 7}},
			{"null details", `{"choices":[{"message":{"content":"a"}}],"usage":{"prompt_tokens":10,"completion_tokens":7,"prompt_tokens_details":null,"completion_tokens_details":null}}`,
				Usage{InputTokens: 10, OutputTokens: 7}},
		} {
			c, perr := decodeOpenAI([]byte(tc.body))
			if perr != nil || !c.HasUsage || c.Usage != tc.want {
				t.Errorf("%s: usage %+v (has %v), err %v; want %+v", tc.name, c.Usage, c.HasUsage, perr, tc.want)
			}
		}
	})
	t.Run("anthropic json", func(t *testing.T) {
		c, perr := decodeAnthropic([]byte(`{"type":"message","content":[{"type":"text","text":"a"}],"usage":` +
			`{"input_tokens":5,"cache_read_input_tokens":4,"cache_creation_input_tokens":1,"output_tokens":7}}`))
		want := Usage{InputTokens: 10, CachedInputTokens: 4, OutputTokens: 7}
		if perr != nil || c.Usage != want {
			t.Fatalf("usage %+v, err %v; want %+v", c.Usage, perr, want)
		}
	})
	streams := []struct {
		name, protocol, body string
		want                 Usage
	}{
		{"openai stream", ProtocolOpenAI, oaiPre + oaiText("a") + oaiFinish +
			`data: {"id":"c","choices":[],` + oaiUsage + "}\n\n" + oaiDone, full},
		{"anthropic stream", ProtocolAnthropic,
			antEv("message_start", `{"type":"message_start","message":{"usage":{"input_tokens":6,"cache_read_input_tokens":4,"output_tokens":1}}}`) +
				antBlockStart + antText("a") + antBlockStop + antDelta("end_turn", 7) + antStop,
			Usage{InputTokens: 10, CachedInputTokens: 4, OutputTokens: 7}},
		{"anthropic stream, usage repeated in message_delta", ProtocolAnthropic,
			antStart + antBlockStart + antText("a") + antBlockStop +
				antEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":2,"cache_read_input_tokens":3,"output_tokens":7}}`) + antStop,
			Usage{InputTokens: 5, CachedInputTokens: 3, OutputTokens: 7}},
	}
	for _, tc := range streams {
		t.Run(tc.name, func(t *testing.T) {
			s := streamOf(t, tc.protocol, tc.body)
			defer s.Close()
			var got *Usage
			for {
				ev, err := s.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if ev.Usage != nil {
					got = ev.Usage
				}
			}
			if got == nil || !reflect.DeepEqual(*got, tc.want) {
				t.Fatalf("usage %+v, want %+v", got, tc.want)
			}
		})
	}
}
