package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/gateway/server"
)

// unknownToGateway is a chat request full of members the gateway does not
// read: tools, content parts of every kind, response formats, sampling
// parameters, vendor extensions it has never heard of, nested and escaped.
const unknownToGateway = `{"model":"chat","messages":[
 {"role":"developer","content":"be brief","name":"ops"},
 {"role":"user","content":[{"type":"text","text":"caf\u00e9 <b>&"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"high"}},
  {"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}},{"type":"file","file":{"file_id":"file-1"}}]},
 {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}],"refusal":null},
 {"role":"tool","tool_call_id":"call_1","content":"42"}],
 "tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object","properties":{"a":{"type":"integer"}}},"strict":true}},{"type":"custom","custom":{"name":"g"}}],
 "tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false,
 "response_format":{"type":"json_schema","json_schema":{"name":"r","schema":{"type":"object"},"strict":true}},
 "n":2,"logprobs":true,"top_logprobs":3,"seed":7,"presence_penalty":0.5,"frequency_penalty":-0.5,"logit_bias":{"50256":-100},
 "temperature":1.7,"top_p":0.9,"stop":["\n\n"],"user":"u-1","metadata":{"team":"a"},"store":true,"service_tier":"flex",
 "reasoning_effort":"high","verbosity":"low","modalities":["text"],"prediction":{"type":"content","content":"x"},
 "web_search_options":{},"x_vendor_extension":{"deep":[1,2.50,{"k":null}],"esc":"\u2028\ud83d\ude00"},"max_completion_tokens":64,
 "stream":%STREAM%}`

// upstreamAnswer is a provider's answer with members the gateway does not
// read: it must come back unchanged but for model.
const upstreamAnswer = `{"id":"chatcmpl-up","object":"chat.completion","created":1700000000,"model":"up-model","system_fingerprint":"fp_1",
 "choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"call_2","type":"function","function":{"name":"f","arguments":"{\"a\":2}"}}],"annotations":[]},"logprobs":{"content":[]},"finish_reason":"tool_calls"},
  {"index":1,"message":{"role":"assistant","content":"two"},"logprobs":null,"finish_reason":"stop"}],
 "usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18,"prompt_tokens_details":{"cached_tokens":3,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":2,"accepted_prediction_tokens":0}},
 "service_tier":"flex"}`

// TestPassThroughUnchanged: to a provider of the caller's protocol the body
// goes as sent but for model (and, streamed, stream_options.include_usage),
// and the answer and chunks come back as the provider sent them but for
// model; the record bills the provider's counts.
func TestPassThroughUnchanged(t *testing.T) {
	var got []byte
	stream := false
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		if !stream {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, upstreamAnswer)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range streamChunks {
			_, _ = io.WriteString(w, "data: "+c+"\n\n")
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)
	st := startDirect(t, up.URL, server.Options{})
	plain, l, gwURL := st.key, st.ledger, st.url
	post := func(body string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, gwURL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+plain)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		return resp, b
	}

	body := strings.Replace(unknownToGateway, "%STREAM%", "false", 1)
	resp, answer := post(body)
	want := decodeAny(t, body)
	want["model"] = "m" // the route's model
	if g := decodeAny(t, string(got)); !reflect.DeepEqual(g, want) {
		t.Fatalf("the provider received\n%s\nfor\n%s", got, body)
	}
	wantAnswer := decodeAny(t, upstreamAnswer)
	wantAnswer["model"] = "chat" // the alias
	if g := decodeAny(t, string(answer)); !reflect.DeepEqual(g, wantAnswer) {
		t.Fatalf("the caller received\n%s\nfor\n%s", answer, upstreamAnswer)
	}
	rec, err := l.Get(t.Context(), resp.Header.Get("X-Request-Id"))
	if err != nil || rec.InputTokens != 11 || rec.OutputTokens != 7 || rec.CachedInputTokens != 3 || rec.ReasoningTokens != 2 {
		t.Fatalf("record %+v %v", rec, err)
	}

	// Streamed, without include_usage: the provider is asked for usage
	// (the gateway bills it), the caller gets none.
	stream = true
	body = strings.Replace(unknownToGateway, "%STREAM%", `true,"stream_options":{"include_obfuscation":false}`, 1)
	resp, events := post(body)
	want = decodeAny(t, body)
	want["model"] = "m"
	want["stream_options"] = map[string]any{"include_obfuscation": false, "include_usage": true}
	if g := decodeAny(t, string(got)); !reflect.DeepEqual(g, want) {
		t.Fatalf("the provider received\n%s", got)
	}
	var relayed []string
	for _, line := range strings.Split(string(events), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			relayed = append(relayed, d)
		}
	}
	// Each chunk as sent but for model, without usage; the usage-only chunk
	// dropped; one [DONE].
	if len(relayed) != len(streamChunks) || relayed[len(relayed)-1] != "[DONE]" {
		t.Fatalf("relayed %d events for %d chunks:\n%s", len(relayed), len(streamChunks), events)
	}
	for i, c := range streamChunks[:len(streamChunks)-1] {
		w := decodeAny(t, c)
		w["model"] = "chat"
		delete(w, "usage")
		if g := decodeAny(t, relayed[i]); !reflect.DeepEqual(g, w) {
			t.Fatalf("chunk %d: relayed %s for %s", i, relayed[i], c)
		}
	}
	rec, err = l.Get(t.Context(), resp.Header.Get("X-Request-Id"))
	if err != nil || rec.InputTokens != 9 || rec.OutputTokens != 4 || rec.Status != "success" {
		t.Fatalf("stream record %+v %v", rec, err)
	}
}

// streamChunks is a provider's stream as it answers include_usage: usage
// null on every chunk but the last, which has only usage; tool-call
// deltas, logprobs and an extension member on the way.
var streamChunks = []string{
	`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"up","system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"up","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"f","arguments":""}}]},"finish_reason":null}],"usage":null,"obfuscation":"xyz"}`,
	`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"up","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":3}"}}]},"logprobs":{"content":[{"token":"x","logprob":-0.1,"bytes":[120],"top_logprobs":[]}]},"finish_reason":null}],"usage":null}`,
	`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"up","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":null}`,
	`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"up","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}`,
}

func decodeAny(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return m
}
