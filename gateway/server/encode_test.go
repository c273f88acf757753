package server

import (
	"testing"
	"time"
)

func TestErrorJSONGolden(t *testing.T) {
	for _, c := range []struct {
		e    apiError
		want string
	}{
		{apiError{typ: typeInvalidRequest, code: "invalid_value", param: "messages[0].content", message: "content <b> & \"x\""},
			`{"error":{"message":"content \u003cb\u003e \u0026 \"x\"","type":"invalid_request_error","code":"invalid_value","param":"messages[0].content","request_id":"req_1"}}`},
		{apiError{typ: typeRateLimit, code: "rate_limited", message: "slow down", retryAfter: 1500 * time.Millisecond},
			`{"error":{"message":"slow down","type":"rate_limit_error","code":"rate_limited","param":null,"request_id":"req_1","retry_after_ms":1500}}`},
	} {
		if got := string(appendErrorJSON(nil, &c.e, "req_1")); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
		if got, want := string(appendErrorEvent(nil, &c.e, "req_1")), "data: "+c.want+"\n\n"; got != want {
			t.Errorf("event: got %q, want %q", got, want)
		}
	}
}
