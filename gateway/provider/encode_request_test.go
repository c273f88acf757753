package provider

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// requestsToEncode cover every member, each omitted and set, and strings
// that need escapes.
func requestsToEncode() []*Request {
	return []*Request{
		{Model: "alpha-large", Messages: []Message{{Role: "user", Content: "hi"}}},
		{Model: "m", Messages: []Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "quotes \" \\ \n\t <html> & ünï \u2028 \x01 \xff"},
			{Role: "assistant", Content: ""}, {Role: "user", Content: "again"}, {Role: "user", Content: "twice"}},
			MaxTokens: ptr(256), Temperature: ptr(0.2), TopP: ptr(1.0), Stop: []string{"END", "<stop>"}, User: "u-1 \"x\""},
		{Model: "m", Messages: []Message{}, MaxTokens: ptr(1), Temperature: ptr(1.5), TopP: ptr(1e-7), Stop: []string{"x"}},
		{Model: "m", Messages: nil, Temperature: ptr(0.0), TopP: ptr(math.Copysign(0, -1))},
		{Model: "", Messages: []Message{{Role: "system", Content: "only system"}}, Temperature: ptr(2.0), User: "\xff"},
	}
}

func TestRequestEncodersMatchMarshal(t *testing.T) {
	for _, req := range requestsToEncode() {
		for _, stream := range []bool{false, true} {
			agreeEncoded(t, req, stream)
		}
	}
}

// agreeEncoded holds both protocols' hand-appended request to json.Marshal
// of the struct the encoder fills.
func agreeEncoded(t *testing.T, req *Request, stream bool) {
	t.Helper()
	for _, c := range []struct {
		name   string
		encode func(*Request, bool) ([]byte, error)
	}{{"openai", encodeOpenAI}, {"anthropic", encodeAnthropic}} {
		got, err := c.encode(req, stream)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var want []byte
		// The same structs, marshaled: the encoders only append them.
		switch c.name {
		case "openai":
			want, err = json.Marshal(openAIRequestOf(req, stream))
		default:
			want, err = json.Marshal(anthropicRequestOf(req, stream))
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s, stream %v:\n got %s\nwant %s", c.name, stream, got, want)
		}
	}
}

func FuzzRequestEncodersMatchMarshal(f *testing.F) {
	f.Add("alpha-large", "user", "hi <b>", "END", "u", 0.2, 1.0, 256, true)
	f.Add("m", "system", "\xff\u2028\"", "", "", 1e-7, 0.0, 0, false)
	f.Fuzz(func(t *testing.T, model, role, content, stop, user string, temp, topP float64, maxTokens int, stream bool) {
		req := &Request{Model: model, Messages: []Message{{Role: role, Content: content}, {Role: "user", Content: content}}, User: user}
		if stop != "" {
			req.Stop = []string{stop, stop}
		}
		if !math.IsNaN(temp) && !math.IsInf(temp, 0) {
			req.Temperature = &temp
		}
		if !math.IsNaN(topP) && !math.IsInf(topP, 0) {
			req.TopP = &topP
		}
		if maxTokens != 0 {
			req.MaxTokens = &maxTokens
		}
		agreeEncoded(t, req, stream)
	})
}

// A number json.Marshal refuses is refused the same way, not written.
func TestRequestEncodersRefuseWhatMarshalRefuses(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1)} {
		req := &Request{Model: "m", Messages: []Message{{Role: "user", Content: "x"}}, TopP: ptr(f)}
		for _, enc := range []func(*Request, bool) ([]byte, error){encodeOpenAI, encodeAnthropic} {
			if b, err := enc(req, false); err == nil {
				t.Fatalf("encoded %s", b)
			}
		}
	}
}
