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
	// hdrAnthropicRequestID is where Anthropic's API and SDKs put a
	// request's id; an Anthropic client gets the gateway's there too.
	hdrAnthropicRequestID = "Request-Id"
	// hdrErrorCode carries the gateway's error code on an error in
	// Anthropic's shape, which has no member for it.
	hdrErrorCode = "X-Llmgw-Error-Code"
	hdrAPIKey    = "X-Api-Key"
	// hdrClaudeSession is the session id Claude Code sends with every
	// request, kept on the usage record.
	hdrClaudeSession = "X-Claude-Code-Session-Id"
	// hdrCodexSession is the session id Codex sends with every request.
	hdrCodexSession = "Session-Id"
)

// header is h.Get(key) for a key already canonical.
func header(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
