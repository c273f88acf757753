package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const testCredential = "sk-test-Cr3dential-9f8e7d"

// captured is one request as the upstream saw it.
type captured struct {
	method, path string
	header       http.Header
	body         string
}

// upstream starts a server that records each request and answers with respond.
func upstream(t *testing.T, respond http.HandlerFunc) (*httptest.Server, <-chan captured) {
	t.Helper()
	ch := make(chan captured, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case ch <- captured{r.Method, r.URL.Path, r.Header.Clone(), string(b)}:
		default:
		}
		respond(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, ch
}

func reply(status int, contentType, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

func newAdapter(t *testing.T, protocol, baseURL string, mod ...func(*Config)) Adapter {
	t.Helper()
	cfg := Config{Name: "up-" + protocol, Protocol: protocol, BaseURL: baseURL, Credential: testCredential}
	for _, m := range mod {
		m(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := a.(IdleCloser); ok {
		t.Cleanup(c.CloseIdleConnections)
	}
	return a
}

func asError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not *provider.Error", err, err)
	}
	return e
}

// assertNoLeak checks every text reachable from err: its message, its fields and
// each error along its unwrap chain.
func assertNoLeak(t *testing.T, err error, secrets ...string) {
	t.Helper()
	var texts []string
	for e := err; e != nil; e = errors.Unwrap(e) {
		texts = append(texts, e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e))
		if pe, ok := e.(*Error); ok {
			texts = append(texts, pe.Message, pe.Type)
		}
	}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		for _, txt := range texts {
			if strings.Contains(txt, s) {
				t.Fatalf("error text leaks %q: %s", s, txt)
			}
		}
	}
}

func leakCandidates(srv *httptest.Server) []string {
	return []string{testCredential, srv.URL, strings.TrimPrefix(srv.URL, "http://")}
}

// drain reads a stream to its end.
func drain(s Stream) ([]Event, error) {
	var evs []Event
	for {
		ev, err := s.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func ptr[T any](v T) *T { return &v }
