package server

import (
	"reflect"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/llmgw/llmgw/gateway/jsonscan"
)

// Bodies as the OpenAI SDKs send them, which the scan must take itself, and
// shapes it must leave to the strict decoder (whose error or answer then
// stands).
var (
	requestsScanned = []string{
		`{"model":"chat-alpha","messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello \"there\"\n\u00e9\ud83d\ude00"}],` +
			`"model":"chat-alpha","stream":true,"stream_options":{"include_usage":true},"max_tokens":256,"temperature":0.2,"top_p":1,"user":"u-1","n":1}`,
		` { "model" : "m" , "messages" : [ { "content" : "x" , "role" : "assistant" } ] , "stream" : false } `,
		`{"model":"m","messages":[],"stop":"END"}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"stop":["a","b\\n"],"max_completion_tokens":7}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"stop":[],"stream":null,"stream_options":null,"user":null}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":null,"temperature":null,"top_p":-0,"n":null}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":1.5e-1,"top_p":0.95,"max_tokens":-3,"stream_options":{}}`,
		"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"caf\u00e9 \xf0\x9f\x98\x80\"}]}", // raw UTF-8
		`{"model":"m","messages":[{"role":"","content":""}]}`,                                             // taken, then refused by the checks after it
		`{}`,
	}
	requestsLeft = []string{
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`, // content parts
		`{"model":"m","messages":[{"role":"user","content":null}]}`,
		`{"model":"m","messages":[{"role":"user","content":"x","name":"bob"}]}`,  // unknown member
		`{"model":"m","messages":[{"role":"user","role":"user","content":"x"}]}`, // duplicate
		`{"model":"m","model":"n","messages":[]}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[]}`, // unsupported
		`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":null}`,
		`{"Model":"m","messages":[]}`, // case variant
		`{"mod\u0065l":"m","messages":[]}`,
		`{"model":null,"messages":[]}`,
		`{"model":1,"messages":[]}`,
		`{"model":"m","messages":null}`,
		`{"model":"m","messages":[null]}`,
		`{"model":"m","messages":["x"]}`,
		`{"model":"m","messages":[{"role":null,"content":"x"}]}`,
		`{"model":"m","messages":[],"max_tokens":1.0}`,
		`{"model":"m","messages":[],"max_tokens":1e2}`,
		`{"model":"m","messages":[],"max_tokens":99999999999999999999}`,
		`{"model":"m","messages":[],"temperature":1e999}`,
		`{"model":"m","messages":[],"temperature":"1"}`,
		`{"model":"m","messages":[],"stream":"true"}`,
		`{"model":"m","messages":[],"stream":tru}`,
		`{"model":"m","messages":[],"stream_options":{"include_usage":true,"include_usage":false}}`,
		`{"model":"m","messages":[],"stream_options":{"other":1}}`,
		`{"model":"m","messages":[],"stop":["a",]}`,
		`{"model":"m","messages":[],"stop":["a",1]}`,
		`{"model":"m","messages":[],"stop":[{"a":1,"a":2}]}`,
		`{"model":"m","messages":[],"stop":null}`,
		`{"model":"m","messages":[],"stop":5}`,
		`{"model":"m","messages":[],"user":5}`,
		`{"model":"m","messages":[]} x`,
		`{"model":"m","messages":[]}{}`,
		`{"model":"m","messages":[],}`,
		`{"model":"m" "messages":[]}`,
		"{\"model\":\"m\xff\",\"messages\":[]}", // invalid UTF-8
		`{"model":"\ud800","messages":[]}`,      // a lone surrogate
		`[]`,
		``,
		"\xef\xbb\xbf{}", // a byte-order mark
	}
)

func TestRequestScanTakesSDKShapes(t *testing.T) {
	for _, s := range requestsScanned {
		agreeRequest(t, []byte(s), true)
	}
	for _, s := range requestsLeft {
		var cr chatRequest
		if scanChatRequest([]byte(s), &cr) {
			t.Errorf("scan took %s", s)
		}
	}
}

// The strict decoder's answer is the one that counts: whatever the scan
// takes, the decoder takes too and fills the same struct. want says
// whether the scan must take body.
func agreeRequest(t *testing.T, body []byte, want bool) {
	t.Helper()
	var got chatRequest
	if !scanChatRequest(body, &got) {
		if want {
			t.Errorf("scan left %s to the decoder", body)
		}
		return
	}
	var dec chatRequest
	if err := json.Unmarshal(body, &dec, strictJSON); err != nil {
		t.Fatalf("scan took %q, the decoder refuses it: %v", body, err)
	}
	got.scan = jsonscan.Reader{} // the scan's own state, not the request's
	if !reflect.DeepEqual(got, dec) {
		t.Fatalf("scan and decoder differ on %q:\nscan    %+v\ndecoder %+v", body, got, dec)
	}
}

func FuzzRequestScanAgrees(f *testing.F) {
	for _, s := range requestsScanned {
		f.Add([]byte(s))
	}
	for _, s := range requestsLeft {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { agreeRequest(t, body, false) })
}
