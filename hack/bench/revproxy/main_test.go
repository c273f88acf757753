package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// The proxy routes by path, passes the caller's credentials and body
// through, and streams: the first event reaches the caller while the
// upstream is still holding the response open.
func TestProxyRoutesAndStreams(t *testing.T) {
	release := make(chan struct{})
	upstream := func(name string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: "+name+" "+r.URL.Path+" "+r.Header.Get("X-Api-Key")+r.Header.Get("Authorization")+" "+string(body)+"\n\n")
			w.(http.Flusher).Flush()
			if r.URL.Query().Get("hold") != "" {
				<-release
			}
			_, _ = io.WriteString(w, "data: end\n\n")
		}))
	}
	alpha, beta := upstream("alpha"), upstream("beta")
	defer alpha.Close()
	defer beta.Close()
	au, _ := url.Parse(alpha.URL)
	bu, _ := url.Parse(beta.URL)
	proxy := httptest.NewServer(newProxy(au, bu))
	defer proxy.Close()

	for _, tc := range []struct {
		path, header, value, want string
	}{
		{"/v1/chat/completions", "Authorization", "Bearer k1", "data: alpha /v1/chat/completions Bearer k1 {\"x\":1}"},
		{"/v1/messages", "X-Api-Key", "k2", "data: beta /v1/messages k2 {\"x\":1}"},
	} {
		req, _ := http.NewRequest(http.MethodPost, proxy.URL+tc.path, strings.NewReader(`{"x":1}`))
		req.Header.Set(tc.header, tc.value)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.HasPrefix(string(b), tc.want) || !strings.Contains(string(b), "data: end") {
			t.Errorf("%s: got %q, want it to start with %q and end the stream", tc.path, b, tc.want)
		}
	}

	resp, err := http.Post(proxy.URL+"/v1/chat/completions?hold=1", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "data:" {
		t.Fatalf("first event not flushed while the upstream holds the stream: %q, %v", buf, err)
	}
	close(release)
	rest, _ := io.ReadAll(resp.Body)
	if !strings.HasSuffix(string(rest), "data: end\n\n") {
		t.Errorf("stream tail %q", rest)
	}
}
