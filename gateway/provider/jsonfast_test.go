package provider

import (
	"reflect"
	"testing"
)

// Chunks as OpenAI sends them, which the fast reader must take itself, and
// shapes it must leave to the struct decoder.
var (
	chunksTaken = []string{
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
		`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" word \"quoted\"\n\u00e9\ud83d\ude00"},"finish_reason":null}]}`,
		`{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`,
		`{"id":"c","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":2},"completion_tokens_details":{"reasoning_tokens":1}}}`,
		// usage as OpenAI sends it today, with counts the gateway does not read
		`{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,` +
			`"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,` +
			`"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`,
		`{"choices":[],"usage":{"prompt_tokens":null,"completion_tokens":-0,"prompt_tokens_details":null,"completion_tokens_details":{}}}`,
		`{"choices":[],"usage":{}}`,
		`{"choices":[{"index":1,"delta":{"content":"second"}},{"index":0,"delta":null,"finish_reason":null}]}`,
		`{"error":{"message":"overloaded","type":"server_error","code":null}}`,
		` { "choices" : null , "x" : [1, {"y": "z"}] } `,
		`{}`,
		// skipped values of every kind, escapes and a surrogate pair
		`{"x":{"a":[true,false,null,-1.5e+3,0,0.25,1E2,"s\"\\\/\b\f\n\r\t\u0041",[],{}]},"choices":[{"index":0,"delta":{"content":"\ud83d\ude00 ok"}}]}`,
		"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"caf\u00e9 \xf0\x9f\x98\x80\"}}]}", // raw UTF-8
	}
	chunksLeft = []string{
		`{"choices":[{"index":0,"delta":{"content":"a"}}],"choices":[]}`, // repeated member
		`{"ch\u006fices":[{"index":0,"delta":{"content":"a"}}]}`,         // escaped name
		`{"choices":[{"index":"0","delta":{"content":"a"}}]}`,            // a string index
		`{"choices":[{"index":1.0,"delta":{"content":"a"}}]}`,
		`{"choices":[null]}`,
		`{"usage":{"prompt_tokens":1,"prompt_tokens":2}}`, // repeated member within usage
		`{"usage":{"prompt_tokens_details":{"cached_tokens":1},"prompt_tokens_details":{"x":0}}}`,
		`{"usage":{"completion_tokens_details":{"reasoning_tokens":1,"reasoning_tokens":2}}}`,
		`{"usage":{"pr\u006fmpt_tokens":3}}`,
		`{"usage":{"prompt_tokens":1.5}}`,
		`{"usage":{"prompt_tokens":"3"}}`,
		`{"usage":{"prompt_tokens":99999999999999999999}}`,
		`{"usage":{"prompt_tokens_details":[]}}`,
		`{"usage":{"completion_tokens_details":{"reasoning_tokens":true}}}`,
		`{"usage":[]}`,
		`{"usage":{"prompt_tokens":1}`,
		`{"choices":[{"delta":{"content":7}}]}`,
		"{\"choices\":[{\"delta\":{\"content\":\"\xff\"}}]}", // invalid UTF-8
		`{"choices":[]} {}`,
		`null`,
		`{"choices":[`,
		// invalid JSON in what the reader skips, and what it leaves to the struct decoder
		`{"x":01,"choices":[]}`,
		`{"x":1.,"choices":[]}`,
		`{"x":-,"choices":[]}`,
		`{"x":[1,],"choices":[]}`,
		`{"x":{"a":1,},"choices":[]}`,
		`{"x":nul,"choices":[]}`,
		`{"x":nullx,"choices":[]}`,
		`{"x":"\q","choices":[]}`,
		"{\"x\":\"a\tb\",\"choices\":[]}", // a raw control character
		`{"x":"\ud800","choices":[]}`,     // a lone surrogate
		`{"x":"\udc00\ud800","choices":[]}`,
		`{"choices":[{"index":0},]}`,
		`{"choices":[{"index":0} {"index":1}]}`,
		`{"choices":[],}`,
	}
)

func TestChunkReaderTakesOpenAIShapes(t *testing.T) {
	for _, s := range chunksTaken {
		var r fastReader
		var c oaiChunk
		if !r.oaiChunk([]byte(s), &c) {
			t.Errorf("fast reader gave up on %s", s)
		}
		agree(t, []byte(s))
	}
	for _, s := range chunksLeft {
		var r fastReader
		var c oaiChunk
		if r.oaiChunk([]byte(s), &c) {
			t.Errorf("fast reader took %q, which is the struct decoder's to judge", s)
		}
		agree(t, []byte(s))
	}
}

// A reused decoder gives each chunk its own answer, whatever came before.
func TestOpenAIDecoderReuse(t *testing.T) {
	var d oaiDecoder
	var q queue
	for _, s := range append(append([]string(nil), chunksTaken...), chunksLeft...) {
		var want oaiChunk
		wantErr := decodeJSON([]byte(s), &want) != nil
		_, e := d.decode(nil, []byte(s), &q)
		if (e != nil) != (wantErr || want.Error != nil) {
			t.Fatalf("decode(%q) = %v, want an error: %v", s, e, wantErr || want.Error != nil)
		}
		if e == nil && !sameChunk(d.chunk, want) {
			t.Fatalf("decode(%q) read %+v, the struct decoder %+v", s, d.chunk, want)
		}
		for _, ok := q.pop(); ok; _, ok = q.pop() {
		}
	}
}

// agree checks that whenever the fast reader takes a chunk, the struct
// decoder takes it too and reads the same.
func agree(t *testing.T, data []byte) {
	t.Helper()
	var r fastReader
	var fast oaiChunk
	if !r.oaiChunk(data, &fast) {
		return
	}
	var want oaiChunk
	if err := decodeJSON(data, &want); err != nil {
		t.Fatalf("fast reader took %q, the struct decoder refused it: %v", data, err)
	}
	if !sameChunk(fast, want) {
		t.Fatalf("%q: fast reader %+v, struct decoder %+v", data, fast, want)
	}
}

func sameChunk(a, b oaiChunk) bool {
	if len(a.Choices) == 0 && len(b.Choices) == 0 {
		a.Choices, b.Choices = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

func FuzzChunkReaderAgrees(f *testing.F) {
	for _, s := range chunksTaken {
		f.Add([]byte(s))
	}
	for _, s := range chunksLeft {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { agree(t, data) })
}

var (
	antTaken = []string{
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" word \"q\"\n\u00e9"}}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`,
		`{"type":"ping"}`,
		`{"type":"content_block_stop","index":0,"delta":null}`,
		`{"delta":{"text":"no type"},"x":[1,{"y":null}]}`,
		`{"type":"message_start","message":{"usage":{"input_tokens":5}}}`,
		`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,` +
			`"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":3,"cache_read_input_tokens":4,"output_tokens":1,` +
			`"service_tier":"standard"}}}`,
		`{"type":"message_start","message":null}`,
		`{"type":"message_start","message":{"usage":null}}`,
		`{"type":"message_start","message":{}}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":null,"output_tokens":17,` +
			`"cache_read_input_tokens":null}}`,
		`{"type":"message_delta","usage":{"output_tokens":1,"output_tokens":2,"input_tokens":3,"input_tokens":null}}`,
		`{"type":"message_delta","usage":null}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"a"}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}`,
		`{"type":"content_block_start","content_block":{"type":"text","text":null,"type":"other"}}`,
		`{"type":"content_block_start","content_block":null}`,
	}
	antLeft = []string{
		`{"type":"message_start","message":{"usage":{"input_tokens":5},"usage":{"output_tokens":1}}}`, // repeated object: merged
		`{"type":"message_start","message":{"usage":{"input_tokens":5}},"message":{}}`,
		`{"type":"message_delta","usage":{"output_tokens":1},"usage":{"input_tokens":2}}`,
		`{"type":"content_block_start","content_block":{"type":"text"},"content_block":{"text":"a"}}`,
		`{"type":"message_start","message":{"usage":{"input_tokens":"5"}}}`,
		`{"type":"message_start","message":{"usage":{"input_tokens":5.0}}}`,
		`{"type":"message_start","message":{"usage":{"cache_read_input_tokens":-1e3}}}`,
		`{"type":"message_start","message":{"usage":[]}}`,
		`{"type":"message_start","message":[]}`,
		`{"type":"message_start","message":{"us\u0061ge":{"input_tokens":5}}}`,
		`{"type":"message_delta","usage":{"output_tokens":99999999999999999999}}`,
		`{"type":"content_block_start","content_block":{"type":"text","text":7}}`,
		"{\"type\":\"content_block_start\",\"content_block\":{\"type\":\"text\",\"text\":\"\xff\"}}", // invalid UTF-8
		`{"type":"content_block_start","content_block":"text"}`,
		`{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`,
		`{"type":"content_block_delta","delta":{"text":"a"},"delta":{"type":"text_delta"}}`, // repeated member
		`{"type":"content_block_delta","d\u0065lta":{"text":"a"}}`,                          // escaped name
		`{"type":"content_block_delta","delta":{"text":1}}`,
		`{"type":"content_block_delta","delta":"text"}`,
		"{\"type\":\"content_block_delta\",\"delta\":{\"text\":\"\xff\"}}", // invalid UTF-8
		`{"type":"ping"} x`,
		`[]`,
	}
)

func TestFastReaderTakesAnthropicShapes(t *testing.T) {
	for _, s := range antTaken {
		var r fastReader
		var e antEvent
		if !r.antEvent([]byte(s), &e, new(antEventDelta)) {
			t.Errorf("fast reader gave up on %s", s)
		}
		agreeAnthropic(t, []byte(s))
	}
	for _, s := range antLeft {
		var r fastReader
		var e antEvent
		if r.antEvent([]byte(s), &e, new(antEventDelta)) {
			t.Errorf("fast reader took %q, which is the struct decoder's to judge", s)
		}
		agreeAnthropic(t, []byte(s))
	}
}

func agreeAnthropic(t *testing.T, data []byte) {
	t.Helper()
	var r fastReader
	var fast antEvent
	if !r.antEvent(data, &fast, new(antEventDelta)) {
		return
	}
	var want antEvent
	if err := decodeJSON(data, &want); err != nil {
		t.Fatalf("fast reader took %q, the struct decoder refused it: %v", data, err)
	}
	if !reflect.DeepEqual(fast, want) {
		t.Fatalf("%q: fast reader %+v (delta %+v), struct decoder %+v (delta %+v)", data, fast, fast.Delta, want, want.Delta)
	}
}

func FuzzAnthropicReaderAgrees(f *testing.F) {
	for _, s := range append(append([]string(nil), antTaken...), antLeft...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { agreeAnthropic(t, data) })
}
