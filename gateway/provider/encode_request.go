package provider

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/llmgw/llmgw/gateway/jsonenc"
)

// The request sent to a provider is appended by hand, as json.Marshal of
// its struct would write it (TestRequestEncodersMatchMarshal,
// FuzzRequestEncodersMatchMarshal): it is encoded for every attempt, and
// Marshal's reflection was about 1 % of the gateway's CPU a stream at c=8
// (BenchmarkEncodeRequest).

// marshalRequest encodes r with json.Marshal when encodeJSON cannot: a
// number Marshal refuses (NaN or an infinity, which validation keeps out)
// gets Marshal's error.
func marshalRequest[R interface{ encodeJSON() []byte }](r R, floats ...*float64) ([]byte, error) {
	for _, f := range floats {
		if f != nil && (math.IsNaN(*f) || math.IsInf(*f, 0)) {
			return json.Marshal(r)
		}
	}
	return r.encodeJSON(), nil
}

func (r *oaiRequest) encodeJSON() []byte {
	message := func(i int) (string, string) { return r.Messages[i].Role, r.Messages[i].Content }
	b := make([]byte, 0, requestSize(r.Model, r.User, r.Stop, len(r.Messages), message))
	b = jsonenc.AppendString(append(b, `{"model":`...), r.Model)
	b = appendMessages(append(b, `,"messages":`...), r.Messages == nil, len(r.Messages), message)
	if r.MaxTokens != nil {
		b = strconv.AppendInt(append(b, `,"max_tokens":`...), int64(*r.MaxTokens), 10)
	}
	b = appendSampling(b, r.Temperature, r.TopP)
	if len(r.Stop) > 0 {
		b = appendStrings(append(b, `,"stop":`...), r.Stop)
	}
	if r.User != "" {
		b = jsonenc.AppendString(append(b, `,"user":`...), r.User)
	}
	if r.Stream {
		b = append(b, `,"stream":true`...)
	}
	if o := r.StreamOptions; o != nil {
		b = strconv.AppendBool(append(b, `,"stream_options":{"include_usage":`...), o.IncludeUsage)
		b = append(b, '}')
	}
	return append(b, '}')
}

func (r *antRequest) encodeJSON() []byte {
	message := func(i int) (string, string) { return r.Messages[i].Role, r.Messages[i].Content }
	user := ""
	if r.Metadata != nil {
		user = r.Metadata.UserID
	}
	b := make([]byte, 0, len(r.System)+requestSize(r.Model, user, r.StopSequences, len(r.Messages), message))
	b = jsonenc.AppendString(append(b, `{"model":`...), r.Model)
	if r.System != "" {
		b = jsonenc.AppendString(append(b, `,"system":`...), r.System)
	}
	b = appendMessages(append(b, `,"messages":`...), r.Messages == nil, len(r.Messages), message)
	b = strconv.AppendInt(append(b, `,"max_tokens":`...), int64(r.MaxTokens), 10)
	b = appendSampling(b, r.Temperature, r.TopP)
	if len(r.StopSequences) > 0 {
		b = appendStrings(append(b, `,"stop_sequences":`...), r.StopSequences)
	}
	if m := r.Metadata; m != nil {
		b = jsonenc.AppendString(append(b, `,"metadata":{"user_id":`...), m.UserID)
		b = append(b, '}')
	}
	if r.Stream {
		b = append(b, `,"stream":true`...)
	}
	return append(b, '}')
}

// requestSize is about what a request's JSON takes (more only where a
// string needs escapes), so that it is appended into one allocation.
func requestSize(model, user string, stop []string, messages int, message func(int) (role, content string)) int {
	n := 160 + len(model) + len(user) + 28*messages
	for i := range messages {
		role, content := message(i)
		n += len(role) + len(content)
	}
	for _, s := range stop {
		n += len(s) + 3
	}
	return n
}

// appendMessages appends a protocol's messages (null for a nil slice, as
// Marshal writes it); message(i) is the i-th one's role and content.
func appendMessages(b []byte, null bool, n int, message func(int) (role, content string)) []byte {
	if null {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		role, content := message(i)
		b = jsonenc.AppendString(append(b, `{"role":`...), role)
		b = jsonenc.AppendString(append(b, `,"content":`...), content)
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendSampling(b []byte, temperature, topP *float64) []byte {
	if temperature != nil {
		b = jsonenc.AppendFloat(append(b, `,"temperature":`...), *temperature)
	}
	if topP != nil {
		b = jsonenc.AppendFloat(append(b, `,"top_p":`...), *topP)
	}
	return b
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, s)
	}
	return append(b, ']')
}
