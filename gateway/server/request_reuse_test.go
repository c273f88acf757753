package server

import (
	"reflect"
	"testing"

	"github.com/llmgw/llmgw/api/tokens"
)

// The decode target is recycled (chatRequests): nothing of one body may
// reach the next one's parse, whether the first was accepted or refused,
// and what an accepted parse returned stays as it was.
func TestParseCarriesNothingOver(t *testing.T) {
	full := `{"model":"m","messages":[{"role":"developer","content":"be brief"},{"role":"user","content":"hi"}],` +
		`"stream":true,"stream_options":{"include_usage":true},"max_tokens":5,"temperature":0.5,"top_p":1,"stop":["x","y"],"user":"u1","n":1}`
	refused := `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"max_tokens":7,"temperature":0.2,"tools":[{}]}`
	minimal := `{"model":"m2","messages":[{"role":"user","content":"hi there"}]}`
	want, e := parseChatRequest([]byte(minimal), testLimits, tokens.Count)
	if e != nil {
		t.Fatal(e)
	}
	for range 3 { // the pool may hand out another struct: repeat
		first, e := parseChatRequest([]byte(full), testLimits, tokens.Count)
		if e != nil {
			t.Fatal(e)
		}
		keep := *first
		keep.req.Messages = append(keep.req.Messages[:0:0], first.req.Messages...)
		if _, e := parseChatRequest([]byte(refused), testLimits, tokens.Count); e == nil {
			t.Fatal("a body with tools was accepted")
		}
		got, e := parseChatRequest([]byte(minimal), testLimits, tokens.Count)
		if e != nil {
			t.Fatal(e)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("after other bodies, %s parsed as %+v, alone as %+v", minimal, got, want)
		}
		if !reflect.DeepEqual(*first, keep) || *first.req.Temperature != 0.5 || !first.includeUsage {
			t.Fatalf("the first parse's result changed under later parses: %+v", first)
		}
	}
}
