package server

import "net/http"

// The request and response headers the gateway reads or sets on every
// request, in canonical form (TestHeaderKeysAreCanonical). Header.Get, Set
// and Values canonicalize their key on each call: ≈ 0.7 % of a stream
// request's instructions (callgrind) for keys that are constants.
const (
	hdrAuthorization   = "Authorization"
	hdrClientRequestID = "X-Client-Request-Id"
	hdrRequestID       = "X-Request-Id"
	hdrContentEncoding = "Content-Encoding"
	hdrProvider        = "X-Llmgw-Provider"
)

// header is h.Get(key) for a key already canonical.
func header(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
