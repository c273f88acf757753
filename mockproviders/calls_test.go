package mockproviders

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestCallsAndReset(t *testing.T) {
	for _, fl := range flavors {
		t.Run(string(fl), func(t *testing.T) {
			m := newMock(t, Options{Flavor: fl})
			get := func(path string) (int, string) {
				resp, err := m.Client().Get(m.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			if code, body := get("/healthz"); code != 200 || body != "ok" {
				t.Fatalf("healthz %d %q", code, body)
			}
			if c := m.calls(t); c.Total != 0 || c.ByPath == nil || c.ByFault == nil || c.ByStatus == nil {
				t.Fatalf("fresh mock: %+v", c)
			}
			m.call(t, reqSpec{user: "a"})
			m.call(t, reqSpec{user: "b\n@mock *:status=503"})
			m.call(t, reqSpec{user: "c\n@mock *:status=503 *:retry_after=1"})
			m.call(t, reqSpec{user: "d\n@mock *:chunks=2", stream: true})
			m.call(t, reqSpec{user: "e\n@mock *:bogus=1"})
			m.do(t, t.Context(), []byte("{"), nil)
			get(m.path()) // wrong method: still a protocol call
			if resp, err := m.Client().Post(m.URL+"/v1/other", "application/json", nil); err == nil {
				resp.Body.Close()
			}

			c := m.calls(t)
			want := Calls{
				Total:    8,
				ByPath:   map[string]int64{m.path(): 7, "/v1/other": 1},
				ByFault:  map[string]int64{"status=503": 2, "retry_after=1": 1, "chunks=2": 1, "invalid": 1},
				ByStatus: map[string]int64{"200": 2, "503": 2, "400": 2, "405": 1, "404": 1},
				Done:     8,
			}
			// Token counts have their own test (usage_test.go).
			want.Tokens, want.TokensByUser = c.Tokens, c.TokensByUser
			if fmt.Sprint(c) != fmt.Sprint(want) {
				t.Fatalf("calls\n got %+v\nwant %+v", c, want)
			}
			_, raw := get("/mock/calls")
			if !strings.HasPrefix(raw, `{"total":8,"by_path":{`) {
				t.Fatalf("wire form %s", raw)
			}

			if code, _ := get("/mock/reset"); code != 405 {
				t.Fatalf("GET /mock/reset: %d", code)
			}
			resp, err := m.Client().Post(m.URL+"/mock/reset", "", nil)
			if err != nil || resp.StatusCode != 204 {
				t.Fatalf("reset: %v %v", resp, err)
			}
			resp.Body.Close()
			if c := m.calls(t); c.Total != 0 || c.Done != 0 || c.Tokens != (Tokens{}) ||
				len(c.ByPath)+len(c.ByFault)+len(c.ByStatus)+len(c.TokensByUser) != 0 {
				t.Fatalf("after reset: %+v", c)
			}
		})
	}
}

// The mock is shared by parallel gateway tests; -race checks the counters and handler.
func TestConcurrentCalls(t *testing.T) {
	for _, fl := range flavors {
		m := newMock(t, Options{Flavor: fl})
		var wg sync.WaitGroup
		bodies := make([]string, 16)
		for i := range bodies {
			wg.Go(func() {
				stream := i%2 == 0
				r := m.call(t, reqSpec{user: "same question", stream: stream})
				if r.resp.StatusCode != 200 {
					t.Errorf("status %d", r.resp.StatusCode)
				}
				if !stream {
					bodies[i] = string(r.body)
				}
			})
		}
		wg.Wait()
		for i := 3; i < len(bodies); i += 2 {
			if bodies[i] != bodies[1] {
				t.Fatalf("%s: concurrent identical requests answered differently", fl)
			}
		}
		if c := m.calls(t); c.Total != 16 || c.ByStatus["200"] != 16 {
			t.Fatalf("%s: %+v", fl, c)
		}
	}
}

func TestNewHandlerOptions(t *testing.T) {
	for _, o := range []Options{
		{Flavor: "gamma"},
		{},
		{Flavor: Alpha, DefaultChunks: -1},
		{Flavor: Alpha, DefaultChunks: MaxChunks + 1},
		{Flavor: Beta, DefaultDelay: -1},
		{Flavor: Beta, DefaultChunkDelay: -1},
	} {
		if _, err := NewHandler(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	m := newMock(t, Options{Flavor: Beta, DefaultChunks: 6, DefaultChunkDelay: 1, DefaultDelay: 1})
	if n := len(contentPieces(t, Beta, parseSSE(t, m.call(t, reqSpec{user: "x", stream: true}).body))); n != 6 {
		t.Fatalf("default chunks 6 gave %d", n)
	}
	if n := len(contentPieces(t, Beta, parseSSE(t, m.call(t, reqSpec{user: "x\n@mock beta:chunks=2", stream: true}).body))); n != 2 {
		t.Fatalf("directive chunks=2 over default gave %d", n)
	}
}

// TestCallsRecordTraceParents: /mock/calls keeps the traceparent of each
// protocol call that carried one, oldest first, and only those.
func TestCallsRecordTraceParents(t *testing.T) {
	const (
		a = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		b = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	)
	for _, fl := range flavors {
		t.Run(string(fl), func(t *testing.T) {
			m := newMock(t, Options{Flavor: fl})
			for _, tp := range []string{a, "", b} {
				hdr := map[string]string{}
				if tp != "" {
					hdr["traceparent"] = tp
				}
				if r := m.do(t, context.Background(), reqSpec{}.body(fl), hdr); r.resp.StatusCode != http.StatusOK {
					t.Fatalf("call: %d %s", r.resp.StatusCode, r.body)
				}
			}
			if got := m.calls(t).TraceParents; !slices.Equal(got, []string{a, b}) {
				t.Fatalf("traceparents %q, want %q", got, []string{a, b})
			}
		})
	}
}
