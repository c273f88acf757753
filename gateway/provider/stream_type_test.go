package provider

import (
	"mime"
	"net/http"
	"testing"
)

// eventStreamType answers as mime.ParseMediaType does, whatever the header
// holds; only the usual value skips the parse.
func TestEventStreamTypeMatchesParseMediaType(t *testing.T) {
	for _, ct := range []string{
		"text/event-stream", "Text/Event-Stream", "text/event-stream; charset=utf-8", "text/event-stream;charset=utf-8",
		" text/event-stream", "application/json", "text/html; charset=utf-8", "", "text/event-stream; x", ";;",
	} {
		want, _, _ := mime.ParseMediaType(ct)
		if got := eventStreamType(http.Header{"Content-Type": {ct, "application/json"}}); got != want {
			t.Errorf("eventStreamType(%q) = %q, ParseMediaType says %q", ct, got, want)
		}
	}
	if got := eventStreamType(http.Header{}); got != "" {
		t.Errorf("no Content-Type: %q", got)
	}
}
