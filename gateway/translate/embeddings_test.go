package translate

import (
	"bytes"
	"errors"
	"testing"
)

// The embeddings pass-through sends the caller's body but for model:
// inputs of every form, dimensions, encoding and members the gateway does
// not know are the caller's.
func TestOpenAIEmbeddingsRequest(t *testing.T) {
	for _, in := range []string{
		`{"model":"embed","input":"hello"}`,
		`{"input":[[1,2,3],[4]],"model":"embed","dimensions":256,"encoding_format":"base64","user":"u"}`,
		`{"input":["caf\u00e9","\ud83d\ude00"],"input_type":"query","truncate":"END","x_vendor":{"a":[null]},"model":"embed"}`,
		`{"input":"no model member"}`,
	} {
		segs, err := Embeddings(ProtocolOpenAI).Request(&EmbeddingRequest{Body: []byte(in)}, "text-embedding-3-small")
		if err != nil {
			t.Fatalf("Request(%s): %v", in, err)
		}
		got := bytes.Join(segs, nil)
		want := oaiWant(t, []byte(in), func(m map[string]any) { m["model"] = "text-embedding-3-small" })
		if c := canonical(t, got); c != want {
			t.Errorf("sent %s\nwant (in meaning) %s", got, want)
		}
	}
}

func TestOpenAIEmbeddingsAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		usage     *Usage
		failure   string // "" for an answer
	}{
		{"floats", `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-2e-3]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":5,"total_tokens":5}}`,
			&Usage{InputTokens: 5}, ""},
		{"base64 and vendor members", `{"object":"list","model":"m","data":[{"object":"embedding","index":0,"embedding":"AACAPwAAAEA="}],"usage":{"prompt_tokens":2,"total_tokens":2},"meta":{"billed_units":{"input_tokens":2}}}`,
			&Usage{InputTokens: 2}, ""},
		{"no usage", `{"object":"list","data":[],"model":"m"}`, nil, ""},
		{"usage null", `{"object":"list","data":[],"model":"m","usage":null}`, nil, ""},
		{"no model", `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1]}]}`, nil, ""},
		{"error envelope", `{"error":{"message":"input too long","type":"invalid_request_error","code":null}}`, nil,
			`failure: malformed=false type="invalid_request_error" message="input too long"` + "\n"},
		{"no data", `{"object":"list","model":"m"}`, nil, `failure: malformed=true type="" message="response has no data array"` + "\n"},
		{"data null", `{"object":"list","data":null}`, nil, `failure: malformed=true type="" message="response has no data array"` + "\n"},
		{"malformed usage", `{"data":[],"usage":{"prompt_tokens":"x"}}`, nil, `failure: malformed=true type="" message="malformed usage in the response"` + "\n"},
		{"not JSON", `<html>`, nil, `failure: malformed=true type="" message="malformed response JSON"` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := oaiMeta
			a, err := Embeddings(ProtocolOpenAI).Answer([]byte(tc.raw), &m)
			if tc.failure != "" {
				if err == nil {
					t.Fatalf("answer %s, want %s", a.Body, tc.failure)
				}
				if got := failureString(t, err); got != tc.failure {
					t.Fatalf("got %q, want %q", got, tc.failure)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasSuffix(a.Body, []byte("\n")) {
				t.Errorf("body %q does not end in a newline", a.Body)
			}
			want := oaiWant(t, []byte(tc.raw), func(m map[string]any) { m["model"] = "chat-alpha" })
			if got := canonical(t, a.Body); got != want {
				t.Errorf("body %s\nwant (in meaning) %s", got, want)
			}
			if usageString(a.Usage) != usageString(tc.usage) || a.Text != "" {
				t.Errorf("usage %s text %q, want %s", usageString(a.Usage), a.Text, usageString(tc.usage))
			}
		})
	}
}

// The Anthropic protocol has no embeddings: the request is refused before
// anything is sent (the router passes over the route), and an answer, were
// one to come, is no answer.
func TestAnthropicEmbeddingsNotCarried(t *testing.T) {
	pair := Embeddings(ProtocolAnthropic)
	segs, err := pair.Request(&EmbeddingRequest{Body: []byte(`{"model":"e","input":"x"}`)}, "claude")
	var nc *NotCarried
	if !errors.As(err, &nc) || segs != nil {
		t.Fatalf("segments %q, error %T %v; want a *NotCarried", segs, err, err)
	}
	if nc.Param != "" || nc.Reason == "" || nc.Error() != nc.Reason {
		t.Errorf("NotCarried %+v, text %q: the whole request, with a reason", nc, nc.Error())
	}
	m := oaiMeta
	if _, err := pair.Answer([]byte(`{"data":[]}`), &m); failureString(t, err) == "" {
		t.Error("an answer from a protocol without embeddings was read")
	}
}

func TestUnknownProtocol(t *testing.T) {
	if Chat("grpc") != nil || Embeddings("grpc") != nil {
		t.Fatal("a translator for an unknown protocol")
	}
	if Chat(ProtocolOpenAI) == nil || Chat(ProtocolAnthropic) == nil || Embeddings(ProtocolOpenAI) == nil || Embeddings(ProtocolAnthropic) == nil {
		t.Fatal("a known protocol without a translator")
	}
}

func TestNotCarriedAndFailureText(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&NotCarried{Param: "tools[0].type", Reason: "only function tools"}, "tools[0].type: only function tools"},
		{&NotCarried{Reason: "no embeddings"}, "no embeddings"},
		{&Failure{Type: "server_error", Message: "boom"}, "server_error: boom"},
		{&Failure{Malformed: true, Message: "bad JSON"}, "malformed: bad JSON"},
		{&Failure{Message: "text"}, "text"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%#v: %q, want %q", tc.err, got, tc.want)
		}
	}
}
