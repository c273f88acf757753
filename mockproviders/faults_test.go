package mockproviders

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"
)

// streamEnd tells how a stream finished: "done" (alpha [DONE] / beta message_stop),
// "error" (the protocol's error event last), or "cut" (no terminal event).
func streamEnd(fl Flavor, evs []sseEvent) string {
	if len(evs) == 0 {
		return "cut"
	}
	last := evs[len(evs)-1]
	switch {
	case fl == Alpha && last.data == "[DONE]", fl == Beta && last.name == "message_stop":
		return "done"
	case fl == Alpha && strings.HasPrefix(last.data, `{"error":`), fl == Beta && last.name == "error":
		return "error"
	}
	return "cut"
}

func TestFaults(t *testing.T) {
	type check func(t *testing.T, fl Flavor, r result)
	wantStatus := func(code int) check {
		return func(t *testing.T, fl Flavor, r result) {
			if r.resp.StatusCode != code {
				t.Fatalf("status %d, want %d: %s", r.resp.StatusCode, code, r.body)
			}
		}
	}
	wantStream := func(pieces int, end string) check {
		return func(t *testing.T, fl Flavor, r result) {
			if r.resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", r.resp.StatusCode, r.body)
			}
			evs := parseSSE(t, r.body)
			if got := len(contentPieces(t, fl, evs)); got != pieces {
				t.Errorf("%d content pieces, want %d", got, pieces)
			}
			if got := streamEnd(fl, evs); got != end {
				t.Errorf("stream ended %q, want %q: %q", got, end, r.body)
			}
			if cut := r.readErr != nil; cut != (end == "cut") {
				t.Errorf("read error %v for end %q", r.readErr, end)
			}
			if strings.Count(string(r.body), "[DONE]") > 1 {
				t.Error("more than one [DONE]")
			}
		}
	}
	all := func(cs ...check) check {
		return func(t *testing.T, fl Flavor, r result) {
			for _, c := range cs {
				c(t, fl, r)
			}
		}
	}
	atLeast := func(d time.Duration) check {
		return func(t *testing.T, fl Flavor, r result) {
			if r.elapsed < d {
				t.Errorf("answered in %v, want at least %v", r.elapsed, d)
			}
		}
	}
	errType := func(alpha, beta string) check {
		return func(t *testing.T, fl Flavor, r result) {
			typ, _, msg := errorType(t, fl, r.body)
			if want := map[Flavor]string{Alpha: alpha, Beta: beta}[fl]; typ != want {
				t.Errorf("error type %q, want %q", typ, want)
			}
			if !strings.Contains(msg, "mock fault") {
				t.Errorf("message %q does not say it is a mock fault", msg)
			}
		}
	}
	errorEvent := func(t *testing.T, fl Flavor, r result) {
		evs := parseSSE(t, r.body)
		typ, _, _ := errorType(t, fl, []byte(evs[len(evs)-1].data))
		if want := map[Flavor]string{Alpha: "server_error", Beta: "overloaded_error"}[fl]; typ != want {
			t.Errorf("error event type %q, want %q", typ, want)
		}
	}
	noUsage := func(t *testing.T, fl Flavor, r result) {
		if strings.Contains(string(r.body), "usage") {
			t.Errorf("usage present: %s", r.body)
		}
	}
	truncatedJSON := func(t *testing.T, fl Flavor, r result) {
		want, _ := strconv.Atoi(r.resp.Header.Get("Content-Length"))
		if len(r.body) == 0 || len(r.body) >= want {
			t.Errorf("got %d of %d body bytes", len(r.body), want)
		}
	}

	tests := []struct {
		name      string
		directive string // {F}: this flavor, {O}: the other one
		stream    bool
		timeout   time.Duration // client gives up after this (stalls)
		check     check
	}{
		{"status 503", "{F}:status=503", false, 0, all(wantStatus(503), errType("server_error", "overloaded_error"))},
		{"status 503 on a stream is a plain error", "{F}:status=503", true, 0, all(wantStatus(503), errType("server_error", "overloaded_error"))},
		{"status 500", "*:status=500", false, 0, all(wantStatus(500), errType("server_error", "api_error"))},
		{"status 429 with retry_after", "{F}:status=429 {F}:retry_after=7", false, 0, all(wantStatus(429), errType("rate_limit_exceeded", "rate_limit_error"),
			func(t *testing.T, fl Flavor, r result) {
				if got := r.resp.Header.Get("Retry-After"); got != "7" {
					t.Errorf("Retry-After %q", got)
				}
			})},
		{"retry_after alone changes nothing", "{F}:retry_after=7", false, 0, func(t *testing.T, fl Flavor, r result) {
			if r.resp.StatusCode != 200 || r.resp.Header.Get("Retry-After") != "" {
				t.Errorf("%d %q", r.resp.StatusCode, r.resp.Header.Get("Retry-After"))
			}
		}},
		{"delay_ms", "{F}:delay_ms=200", false, 0, all(wantStatus(200), func(t *testing.T, fl Flavor, r result) {
			if r.headers < 200*time.Millisecond {
				t.Errorf("headers after %v", r.headers)
			}
		})},
		{"delay_ms then status", "{F}:delay_ms=150 {F}:status=502", false, 0, all(wantStatus(502), atLeast(150*time.Millisecond))},
		{"first_byte_delay_ms stream", "{F}:first_byte_delay_ms=250", true, 0, all(wantStream(4, "done"), func(t *testing.T, fl Flavor, r result) {
			if r.elapsed-r.headers < 150*time.Millisecond {
				t.Errorf("headers %v, body done %v", r.headers, r.elapsed)
			}
		})},
		{"first_byte_delay_ms json", "{F}:first_byte_delay_ms=250", false, 0, all(wantStatus(200), func(t *testing.T, fl Flavor, r result) {
			if r.elapsed-r.headers < 150*time.Millisecond {
				t.Errorf("headers %v, body done %v", r.headers, r.elapsed)
			}
		})},
		{"chunks", "{F}:chunks=7", true, 0, wantStream(7, "done")},
		{"chunks beyond words", "{F}:chunks=40", true, 0, wantStream(40, "done")},
		{"chunk_delay_ms stream", "{F}:chunk_delay_ms=60", true, 0, all(wantStream(4, "done"), atLeast(180*time.Millisecond))},
		{"chunk_delay_ms json", "{F}:chunk_delay_ms=60", false, 0, all(wantStatus(200), atLeast(180*time.Millisecond))},
		{"drop_after", "{F}:drop_after=2", true, 0, wantStream(2, "cut")},
		{"drop_after 0", "{F}:drop_after=0", true, 0, wantStream(0, "cut")},
		{"drop_after past the end", "{F}:drop_after=99", true, 0, wantStream(4, "cut")},
		{"drop_after json", "{F}:drop_after=1", false, 0, all(wantStatus(200), truncatedJSON, func(t *testing.T, fl Flavor, r result) {
			if !errors.Is(r.readErr, io.ErrUnexpectedEOF) {
				t.Errorf("read error %v", r.readErr)
			}
		})},
		{"error_after", "{F}:error_after=1", true, 0, all(wantStream(1, "error"), errorEvent)},
		{"error_after 0", "{F}:error_after=0", true, 0, all(wantStream(0, "error"), errorEvent)},
		{"error_after json", "{F}:error_after=1", false, 0, all(wantStatus(500), errType("server_error", "api_error"))},
		{"stall_after", "{F}:stall_after=1", true, time.Second, wantStream(1, "cut")},
		{"stall_after json", "{F}:stall_after=1", false, time.Second, all(wantStatus(200), truncatedJSON)},
		{"no_usage stream", "{F}:no_usage=1", true, 0, all(wantStream(4, "done"), noUsage)},
		{"no_usage json", "{F}:no_usage=1", false, 0, all(wantStatus(200), noUsage)},
		{"other flavor's items are ignored", "{O}:status=500 {O}:drop_after=0", true, 0, wantStream(4, "done")},
		{"specific overrides star", "*:status=503 {F}:status=429", false, 0, wantStatus(429)},
		{"star applies when only the other is specific", "*:status=503 {O}:status=429", false, 0, wantStatus(503)},
		{"specific chunks with star drop", "*:drop_after=2 {F}:chunks=6", true, 0, wantStream(2, "cut")},
	}
	for _, fl := range flavors {
		other := map[Flavor]Flavor{Alpha: Beta, Beta: Alpha}[fl]
		for _, tt := range tests {
			t.Run(string(fl)+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				m := newMock(t, Options{Flavor: fl})
				d := strings.NewReplacer("{F}", string(fl), "{O}", string(other)).Replace(tt.directive)
				spec := reqSpec{user: "question\n@mock " + d, stream: tt.stream, includeUsage: tt.stream}
				ctx := t.Context()
				if tt.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
					defer cancel()
				}
				r := m.do(t, ctx, spec.body(fl), nil)
				tt.check(t, fl, r)
				if tt.timeout > 0 {
					if !errors.Is(r.readErr, context.DeadlineExceeded) {
						t.Errorf("stall: read error %v", r.readErr)
					}
					// The handler must notice the client left, not hang until shutdown.
					select {
					case <-m.done:
					case <-time.After(5 * time.Second):
						t.Fatal("stalled handler did not return after the client went away")
					}
				}
			})
		}
	}
}

func TestStatusFaultErrorTypes(t *testing.T) {
	tests := []struct {
		status      int
		alpha, beta string
		alphaCode   string
	}{
		{400, "invalid_request_error", "invalid_request_error", ""},
		{401, "invalid_request_error", "authentication_error", "invalid_api_key"},
		{403, "permission_error", "permission_error", ""},
		{404, "invalid_request_error", "not_found_error", "not_found"},
		{408, "invalid_request_error", "invalid_request_error", ""},
		{413, "invalid_request_error", "request_too_large", "request_too_large"},
		{429, "rate_limit_exceeded", "rate_limit_error", "rate_limit_exceeded"},
		{500, "server_error", "api_error", "server_error"},
		{502, "server_error", "api_error", "server_error"},
		{503, "server_error", "overloaded_error", "server_error"},
		{529, "server_error", "overloaded_error", "server_error"},
	}
	for _, fl := range flavors {
		m := newMock(t, Options{Flavor: fl})
		for _, tt := range tests {
			r := m.call(t, reqSpec{user: "@mock *:status=" + strconv.Itoa(tt.status)})
			typ, code, _ := errorType(t, fl, r.body)
			want := map[Flavor]string{Alpha: tt.alpha, Beta: tt.beta}[fl]
			if r.resp.StatusCode != tt.status || typ != want || (fl == Alpha && code != tt.alphaCode) {
				t.Errorf("%s %d: got %d %q %q", fl, tt.status, r.resp.StatusCode, typ, code)
			}
		}
	}
}

// A delay must end as soon as the client gives up, or a slow fault would pin
// goroutines for its whole duration.
func TestDelayEndsOnCancel(t *testing.T) {
	for _, fl := range flavors {
		for _, d := range []string{"delay_ms=600000", "first_byte_delay_ms=600000", "chunk_delay_ms=600000"} {
			t.Run(string(fl)+"/"+d, func(t *testing.T) {
				t.Parallel()
				m := newMock(t, Options{Flavor: fl})
				ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
				defer cancel()
				req := reqSpec{user: "@mock *:" + d, stream: true}
				resp, err := m.Client().Do(mustRequest(t, ctx, m, req.body(fl)))
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				select {
				case <-m.done:
				case <-time.After(5 * time.Second):
					t.Fatal("handler still waiting after the client left")
				}
			})
		}
	}
}
