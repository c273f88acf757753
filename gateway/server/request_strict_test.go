package server_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
)

// Issue 11 end to end: ambiguous or compressed bodies get the API error shape,
// and no caller-chosen name comes back verbatim.
func TestStrictRequestParsingHTTP(t *testing.T) {
	h := newHarness(t, func(s *snapshot.Snapshot) {
		for i := range s.Aliases {
			if s.Aliases[i].Name == "chat-beta" {
				s.Aliases[i].Fallbacks, s.Aliases[i].MaxFallbacks = nil, nil // only the Anthropic-protocol route
			}
		}
	})
	send := func(body []byte, encoding string) (int, http.Header, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, h.gw.URL+"/v1/chat/completions", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+h.keyB)
		req.Header.Set("Content-Type", "application/json")
		if encoding != "" {
			req.Header.Set("Content-Encoding", encoding)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header, b
	}
	type apiErr struct {
		Error struct {
			Message   string  `json:"message"`
			Type      string  `json:"type"`
			Code      string  `json:"code"`
			Param     *string `json:"param"`
			RequestID string  `json:"request_id"`
		}
	}
	decode := func(hdr http.Header, b []byte) apiErr {
		t.Helper()
		var e apiErr
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("not an API error: %v: %s", err, b)
		}
		if e.Error.Type != "invalid_request_error" || e.Error.RequestID != hdr.Get("X-Request-Id") {
			t.Fatalf("error shape: %s", b)
		}
		return e
	}

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(chatBody("chat-alpha", false, "")))
	_ = zw.Close()
	status, hdr, b := send(gz.Bytes(), "gzip")
	if e := decode(hdr, b); status != http.StatusUnsupportedMediaType || e.Error.Code != "unsupported_content_encoding" {
		t.Fatalf("gzip body: %d %s", status, b)
	}
	// A plain body that claims an encoding is refused too: the gateway and
	// anything in front of it must read the same bytes.
	status, hdr, b = send([]byte(chatBody("chat-alpha", false, "")), "gzip")
	if e := decode(hdr, b); status != http.StatusUnsupportedMediaType || e.Error.Code != "unsupported_content_encoding" {
		t.Fatalf("plain body declared gzip: %d %s", status, b)
	}

	// Key B may not use chat-restricted: a reader that matched names
	// case-insensitively or kept the first duplicate would route it there.
	msg := `"messages":[{"role":"user","content":"hi"}]`
	for body, code := range map[string]string{
		`{"Model":"chat-restricted","model":"chat-alpha",` + msg + `}`:                         "duplicate_field",
		`{"model":"chat-restricted","model":"chat-alpha",` + msg + `}`:                         "duplicate_field",
		`{"model":"chat-alpha",` + msg + `,"tools":[{"type":"function"}],"tools":null}`:        "duplicate_field",
		"{\"model\":\"chat-alpha\",\"messages\":[{\"role\":\"user\",\"content\":\"h\xffi\"}]}": "invalid_utf8",
	} {
		status, hdr, b := send([]byte(body), "")
		if e := decode(hdr, b); status != http.StatusBadRequest || e.Error.Code != code {
			t.Fatalf("%q: %d %s, want 400 %s", body, status, b, code)
		}
	}

	key, _, _, err := keyformat.Generate()
	if err != nil {
		t.Fatal(err)
	}
	// A member the gateway does not know goes to a route of the same
	// protocol as it is; one of another protocol cannot carry it, and the
	// refusal names it redacted.
	status, hdr, b = send([]byte(`{"model":"chat-beta",`+msg+`,"`+key+`":1}`), "")
	e := decode(hdr, b)
	if status != http.StatusBadRequest || e.Error.Code != "unsupported_parameter" || e.Error.Param == nil ||
		!strings.HasSuffix(*e.Error.Param, "<redacted>") || strings.Contains(string(b), key) || keyformat.LooksLikeKey(string(b)) {
		t.Fatalf("a key-shaped unknown field is echoed: %d %s", status, b)
	}
}
