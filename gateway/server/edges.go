package server

import (
	"net/http"
	"path"
	"strconv"
)

// The data port's edge: what it answers before routing, so that every answer
// a handler can give is in the API's error shape with a request id. What
// net/http answers itself, before any handler exists (a malformed request
// line, invalid header bytes, headers beyond serverMaxHeaderBytes, …), is
// listed in docs/protocol.md and pinned by edges_test.go.

const (
	// maxHeaderBytes is the gateway's limit on a request's line and header
	// fields together, answered 431 headers_too_large in the API's shape.
	maxHeaderBytes = 64 << 10
	// serverMaxHeaderBytes is net/http's own limit (http.Server
	// MaxHeaderBytes), four times the gateway's: headers between the two
	// get the JSON 431, only larger ones net/http's plain-text 431. Each
	// connection may buffer this much while its headers are read.
	serverMaxHeaderBytes = 4 * maxHeaderBytes

	chatPath       = "/v1/chat/completions"
	embeddingsPath = "/v1/embeddings"
	messagesPath   = "/v1/messages"
	responsesPath  = "/v1/responses"
)

// edges refuses what the mux must not see: a path that is not canonical
// would be redirected by http.ServeMux (307 to the cleaned path), and a
// percent-encoded one matched after decoding (/v1/%63hat/completions is the
// chat endpoint to the mux, but not to a proxy or WAF in front that matches
// paths as sent). Both are 404 unknown_endpoint, as for any unknown path.
// Headers over maxHeaderBytes are 431 here, except on the endpoints that
// keep a record (chat, embeddings, messages, responses), whose handler answers them itself so
// the request still gets its record.
func (s *Server) edges(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !canonicalPath(r) {
			apiOf(r).writeError(w, &apiError{status: http.StatusNotFound, typ: typeInvalidRequest, code: "unknown_endpoint",
				message: "no such endpoint: a path must be sent in canonical form (no empty, '.' or '..' segments, no percent-encoding)"},
				requestID(w))
			return
		}
		if !isRecorded(r) {
			if e := checkHeaderBytes(r); e != nil {
				apiOf(r).writeError(w, e, requestID(w))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// canonicalPath holds when the path was sent exactly as path.Clean would
// write it, without any percent-encoding. The empty path of a CONNECT or an
// asterisk-form target ("OPTIONS *") is not canonical either.
func canonicalPath(r *http.Request) bool {
	p := r.URL.Path
	return r.URL.RawPath == "" && len(p) > 0 && p[0] == '/' && path.Clean(p) == p && r.URL.EscapedPath() == p
}

// isRecorded: an endpoint whose every request gets a usage record.
func isRecorded(r *http.Request) bool {
	return r.Method == http.MethodPost && (r.URL.Path == chatPath || r.URL.Path == embeddingsPath ||
		r.URL.Path == messagesPath || r.URL.Path == responsesPath)
}

// checkHeaderBytes measures the request line and header fields as they were
// sent (net/http keeps the values, not the bytes; names and values have
// their sent lengths, the separators are counted as ": " and CRLF).
func checkHeaderBytes(r *http.Request) *apiError {
	n := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + 2
	if r.Host != "" {
		n += len("Host: ") + len(r.Host) + 2 // net/http moves Host out of r.Header
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + 2 + len(v) + 2
		}
	}
	if n <= maxHeaderBytes {
		return nil
	}
	return &apiError{status: http.StatusRequestHeaderFieldsTooLarge, typ: typeInvalidRequest, code: "headers_too_large",
		message: "the request line and header fields exceed the gateway's limit of " + strconv.Itoa(maxHeaderBytes>>10) + " KiB"}
}
