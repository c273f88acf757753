package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/gateway/server"
)

// Request bodies held in flight are bounded (--max-body-bytes-in-flight):
// a request whose body does not fit while others hold theirs is refused
// with 503 gateway_overloaded before its body is read, and recorded; the
// room comes back when they are answered.
func TestBodiesInFlightAreBounded(t *testing.T) {
	release, arrived := make(chan struct{}), make(chan struct{}, 4)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		arrived <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(up.Close)
	body := `{"model":"chat","messages":[{"role":"user","content":"` + strings.Repeat("x", 10_000) + `"}]}`
	st := startDirect(t, up.URL, server.Options{MaxBodyBytesInFlight: int64(len(body)) + 100})
	plain, l, gwURL := st.key, st.ledger, st.url
	post := func() *http.Response {
		req, _ := http.NewRequest(http.MethodPost, gwURL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+plain)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return nil
		}
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp
	}
	first := make(chan *http.Response, 1)
	go func() { first <- post() }()
	// The first request holds its body while its provider thinks.
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the first request never reached the provider")
	}
	second := post()
	if second.StatusCode != http.StatusServiceUnavailable || second.Header.Get("Retry-After") == "" {
		t.Fatalf("second request while the first holds the budget: %d", second.StatusCode)
	}
	rec, err := l.Get(t.Context(), second.Header.Get("X-Request-Id"))
	if err != nil || rec.Status != "rejected" || rec.ErrorType != "overloaded_error" {
		t.Fatalf("record %+v %v", rec, err)
	}
	close(release)
	if r := <-first; r == nil || r.StatusCode != http.StatusOK {
		t.Fatalf("first request: %v", r)
	}
	if r := post(); r.StatusCode != http.StatusOK {
		t.Fatalf("after the first was answered: %d", r.StatusCode)
	}
}
