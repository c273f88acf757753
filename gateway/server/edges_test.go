package server_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// raw sends bytes on a new TCP connection to the gateway's data port and
// reads one HTTP response.
func (h *harness) raw(req string) response {
	h.t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.gw.URL, "http://"))
	if err != nil {
		h.t.Fatal(err)
	}
	defer c.Close()
	// A deadline, not a wait: a hung answer fails instead of blocking.
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		h.t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		h.t.Fatalf("reading the answer to %q: %v", truncate(req), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// rawReq assembles a request with the given request line and extra header
// lines; a body gets its Content-Length.
func rawReq(line string, headers []string, body string) string {
	var b strings.Builder
	b.WriteString(line + "\r\nHost: gw\r\n")
	for _, hd := range headers {
		b.WriteString(hd + "\r\n")
	}
	if body != "" {
		b.WriteString("Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n")
	}
	b.WriteString("Connection: close\r\n\r\n" + body)
	return b.String()
}

// Every answer a handler can give on the data port is in the API's error
// shape with the request id of X-Request-Id: unclean and percent-encoded
// paths are 404 unknown_endpoint (not a redirect, not the endpoint they
// decode to), headers over the gateway's 64 KiB are 431 headers_too_large.
// No provider is called for any of them.
func TestEdgeAnswersAreInTheAPIShape(t *testing.T) {
	h := newHarness(t)
	body := chatBody("chat-alpha", false, "")
	auth := "Authorization: Bearer " + h.keyA
	pad := func(n int) string { return "X-Pad: " + strings.Repeat("p", n) }
	cases := []struct {
		name, req string
		status    int
		code      string
	}{
		{"double slash", rawReq("POST //v1/chat/completions HTTP/1.1", []string{auth}, body), 404, "unknown_endpoint"},
		{"dot-dot segment", rawReq("POST /v1/../v1/chat/completions HTTP/1.1", []string{auth}, body), 404, "unknown_endpoint"},
		{"dot segment", rawReq("POST /v1/./chat/completions HTTP/1.1", []string{auth}, body), 404, "unknown_endpoint"},
		{"trailing slash", rawReq("POST /v1/chat/completions/ HTTP/1.1", []string{auth}, body), 404, "unknown_endpoint"},
		{"encoded slashes", rawReq("POST /v1%2Fchat%2Fcompletions HTTP/1.1", []string{auth}, body), 404, "unknown_endpoint"},
		{"encoded letter decodes to the chat path", rawReq("POST /v1/%63hat/completions HTTP/1.1", []string{auth}, body), 404, "unknown_endpoint"},
		{"double slash, GET", rawReq("GET //health HTTP/1.1", nil, ""), 404, "unknown_endpoint"},
		{"asterisk form", rawReq("OPTIONS * HTTP/1.1", nil, ""), 404, "unknown_endpoint"},
		{"CONNECT", rawReq("CONNECT gw:443 HTTP/1.1", nil, ""), 404, "unknown_endpoint"},
		{"HTTP/2 preface in cleartext", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 404, "unknown_endpoint"},
		{"wrong method", rawReq("GET /v1/chat/completions HTTP/1.1", []string{auth}, ""), 404, "unknown_endpoint"},
		{"headers over 64 KiB", rawReq("GET /v1/models HTTP/1.1", []string{auth, pad(100 << 10)}, ""), 431, "headers_too_large"},
		{"headers over 64 KiB, unknown path", rawReq("GET /nothing HTTP/1.1", []string{pad(100 << 10)}, ""), 431, "headers_too_large"},
		{"headers over 64 KiB, chat", rawReq("POST /v1/chat/completions HTTP/1.1", []string{auth, pad(100 << 10)}, body), 431, "headers_too_large"},
		{"request line over 64 KiB", rawReq("GET /v1/models?q="+strings.Repeat("q", 100<<10)+" HTTP/1.1", []string{auth}, ""), 431, "headers_too_large"},
		{"headers just under 64 KiB", rawReq("GET /health HTTP/1.1", []string{pad(60 << 10)}, ""), 200, ""},
	}
	calls := mockCalls(t, h.alpha).Total + mockCalls(t, h.beta).Total
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.raw(tc.req)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, truncate(string(r.body)))
			}
			if loc := r.header.Get("Location"); loc != "" {
				t.Fatalf("redirected to %q", loc)
			}
			if r.header.Get("X-Request-Id") == "" {
				t.Fatal("no X-Request-Id")
			}
			if tc.code == "" {
				return
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
			if e := r.errorBody(t); e.Error.Type != "invalid_request_error" || e.Error.Code != tc.code {
				t.Fatalf("error %s/%s, want invalid_request_error/%s", e.Error.Type, e.Error.Code, tc.code)
			}
			if strings.Contains(string(r.body), "ppppppppp") || strings.Contains(string(r.body), "qqqqqqqqq") {
				t.Fatal("the answer echoes the oversized input")
			}
		})
	}
	if got := mockCalls(t, h.alpha).Total + mockCalls(t, h.beta).Total; got != calls {
		t.Fatalf("a provider was called %d times", got-calls)
	}
}

// The chat endpoint's own 431 is a chat request's answer: it leaves its one
// rejected record.
func TestChatHeadersTooLargeLeaveARecord(t *testing.T) {
	h := newHarness(t)
	r := h.raw(rawReq("POST /v1/chat/completions HTTP/1.1",
		[]string{"Authorization: Bearer " + h.keyA, "X-Pad: " + strings.Repeat("p", 100<<10)}, chatBody("chat-alpha", false, "")))
	wantError(t, r, http.StatusRequestHeaderFieldsTooLarge, "invalid_request_error", "headers_too_large")
	rec := h.record(r.header.Get("X-Request-Id"))
	if rec.Status != "rejected" || rec.HTTPStatus != 431 || rec.KeyID != "" {
		t.Fatalf("record %+v", rec)
	}
}

// What net/http answers itself, before any handler of the gateway runs:
// the exact list of exceptions docs/protocol.md gives. Each is pinned here,
// so that a Go release that changes one fails this test instead of the docs
// silently going stale.
func TestNetHTTPAnswersBeforeTheGateway(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		name, req   string
		status      int
		contentType string // "" = no Content-Type and an empty body
	}{
		{"headers over net/http's 256 KiB", rawReq("GET /health HTTP/1.1", []string{"X-Pad: " + strings.Repeat("p", 300<<10)}, ""), 431, "text/plain; charset=utf-8"},
		{"control byte in a header value", rawReq("GET /health HTTP/1.1", []string{"X-Ctl: a\x01b"}, ""), 400, "text/plain; charset=utf-8"},
		{"DEL in a header value", rawReq("GET /health HTTP/1.1", []string{"X-Ctl: a\x7fb"}, ""), 400, "text/plain; charset=utf-8"},
		{"NUL in a header value", rawReq("GET /health HTTP/1.1", []string{"X-Ctl: a\x00b"}, ""), 400, "text/plain; charset=utf-8"},
		{"control byte in a header name", rawReq("GET /health HTTP/1.1", []string{"X\x01Ctl: ab"}, ""), 400, "text/plain; charset=utf-8"},
		{"space before the colon", rawReq("GET /health HTTP/1.1", []string{"X-Sp : ab"}, ""), 400, "text/plain; charset=utf-8"},
		{"obsolete line folding", rawReq("GET /health HTTP/1.1", []string{" folded"}, ""), 400, "text/plain; charset=utf-8"},
		{"malformed request line", "GARBAGE\r\n\r\n", 400, "text/plain; charset=utf-8"},
		{"method not a token", rawReq("GE(T /health HTTP/1.1", nil, ""), 400, "text/plain; charset=utf-8"},
		{"target not a path", rawReq("GET health HTTP/1.1", nil, ""), 400, "text/plain; charset=utf-8"},
		{"invalid percent-encoding", rawReq("GET /%zz HTTP/1.1", nil, ""), 400, "text/plain; charset=utf-8"},
		{"control byte in the query", rawReq("GET /health?a\x01 HTTP/1.1", nil, ""), 400, "text/plain; charset=utf-8"},
		{"HTTP/0.9 request line", "GET /health\r\n\r\n", 400, "text/plain; charset=utf-8"},
		{"unsupported HTTP version", rawReq("GET /health HTTP/3.0", nil, ""), 505, "text/plain; charset=utf-8"},
		{"no Host", "GET /health HTTP/1.1\r\n\r\n", 400, "text/plain; charset=utf-8"},
		{"two Host", rawReq("GET /health HTTP/1.1", []string{"Host: other"}, ""), 400, "text/plain; charset=utf-8"},
		{"malformed Host", "GET /health HTTP/1.1\r\nHost: a b\r\n\r\n", 400, "text/plain; charset=utf-8"},
		{"invalid Content-Length", rawReq("POST /v1/chat/completions HTTP/1.1", []string{"Content-Length: abc"}, ""), 400, "text/plain; charset=utf-8"},
		{"conflicting Content-Length", rawReq("POST /v1/chat/completions HTTP/1.1", []string{"Content-Length: 1", "Content-Length: 2"}, ""), 400, "text/plain; charset=utf-8"},
		{"unsupported Transfer-Encoding", rawReq("POST /v1/chat/completions HTTP/1.1", []string{"Transfer-Encoding: gzip"}, ""), 501, "text/plain; charset=utf-8"},
		{"Expect other than 100-continue", rawReq("POST /v1/chat/completions HTTP/1.1", []string{"Expect: 200-ok", "Content-Length: 0"}, ""), 417, ""},
	}
	calls := mockCalls(t, h.alpha).Total
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.raw(tc.req)
			if r.status != tc.status || r.header.Get("Content-Type") != tc.contentType {
				t.Fatalf("got %d %q, want %d %q: %q", r.status, r.header.Get("Content-Type"), tc.status, tc.contentType, truncate(string(r.body)))
			}
			// Before any handler: no request id, and nothing like the
			// gateway's JSON (if this starts failing, net/http now lets the
			// gateway answer: move the case to the table above).
			if r.header.Get("X-Request-Id") != "" || json.Valid(r.body) && len(r.body) > 0 {
				t.Fatalf("this answer came from the gateway, not net/http: %q", truncate(string(r.body)))
			}
			if tc.contentType == "" && len(r.body) != 0 {
				t.Fatalf("body %q", r.body)
			}
		})
	}
	if got := mockCalls(t, h.alpha).Total; got != calls {
		t.Fatalf("a provider was called %d times", got-calls)
	}
}
