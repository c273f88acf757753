package server

import (
	"net/http"
	"net/textproto"
	"testing"
)

// The keys are read straight from the map, so they must be spelled as
// net/http stores them; header then answers as Header.Get does.
func TestHeaderKeysAreCanonical(t *testing.T) {
	for _, k := range []string{hdrAuthorization, hdrClientRequestID, hdrRequestID, hdrContentEncoding, hdrProvider} {
		if c := textproto.CanonicalMIMEHeaderKey(k); c != k {
			t.Errorf("%q is not canonical (%q)", k, c)
		}
		h := http.Header{}
		if got := header(h, k); got != "" {
			t.Errorf("header(empty, %q) = %q", k, got)
		}
		h.Add(k, "one")
		h.Add(k, "two")
		if got, want := header(h, k), h.Get(k); got != want {
			t.Errorf("header(%q) = %q, Header.Get = %q", k, got, want)
		}
	}
}
