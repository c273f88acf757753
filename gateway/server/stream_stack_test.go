package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/llmgw/api/snapshot"
)

// TestOpenStreamCostsNoMoreStackThanAReverseProxy compares how much
// goroutine stack an open stream adds through the gateway and through a
// bare httputil.ReverseProxy in front of the same mock. A stream's handler
// goroutine lives as long as the stream; if anything it does before the
// relay (the checks, the response's first flush, or, on a kept-alive
// connection, the previous request's log line) runs deeper than 8 KiB, its
// stack doubles to 16 KiB and stays so: 8 KB per open stream more than the
// proxy. Both carry the same client, mock and upstream-connection
// goroutines, so the difference is the handlers'.
//
// A stack freed by an earlier run stays counted until its whole span is
// free and collected, so each reading is taken in a fresh process of this
// test binary (the child branch below); the targets alternate and medians
// are compared.
//
// It measures the build without the race detector (make test runs it so
// after the -race pass).
func TestOpenStreamCostsNoMoreStackThanAReverseProxy(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation changes stack frames; run without -race")
	}
	if probe := os.Getenv(stackProbeEnv); probe != "" {
		fmt.Printf("%s %.0f\n", stackProbeEnv, stackPerStream(t, probe == "gateway"))
		// The reading is all a child is for: skip the stack's drain, which
		// would wait seconds for the mock's sleeping streams.
		os.Exit(0)
	}
	var gws, pxs []float64
	for range 3 {
		pxs = append(pxs, stackProbe(t, "proxy"))
		gws = append(gws, stackProbe(t, "gateway"))
	}
	gw, px := medianFloat(gws), medianFloat(pxs)
	t.Logf("goroutine stack per open stream (medians of 3): gateway %.0f B %v, reverse proxy %.0f B %v", gw, gws, px, pxs)
	if gw > px+4096 {
		t.Errorf("an open stream through the gateway holds %.0f B of goroutine stack, the reverse proxy %.0f B: "+
			"a handler goroutine has grown past 8 KiB (see exchange.serve)", gw, px)
	}
}

const stackProbeEnv = "LLMGW_STACK_PROBE"

// stackProbe runs the test above in a child process that measures target
// ("gateway" or "proxy") alone, and returns its reading.
func stackProbe(t *testing.T, target string) float64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenStreamCostsNoMoreStackThanAReverseProxy$", "-test.count=1")
	cmd.Env = append(os.Environ(), stackProbeEnv+"="+target)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s probe: %v\n%s", target, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, stackProbeEnv+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s probe: %q: %v", target, line, err)
			}
			return f
		}
	}
	t.Fatalf("%s probe printed no reading:\n%s", target, out)
	return 0
}

// stackPerStream starts the local stack and a reverse proxy to its mock
// alpha, holds streams open through one of them and returns the goroutine
// stack this process gained per open stream.
func stackPerStream(t *testing.T, gateway bool) float64 {
	h := newHarness(t, func(s *snapshot.Snapshot) {
		for i := range s.Aliases { // the streams below stay quiet for seconds
			s.Aliases[i].Timeouts = snapshot.Timeouts{TotalMs: 60_000, AttemptMs: 60_000, FirstChunkMs: 10_000, IdleMs: 30_000}
		}
	})
	base, key := h.gw.URL, h.keyA
	if !gateway {
		target, _ := url.Parse(h.alpha.URL)
		rp := httputil.NewSingleHostReverseProxy(target)
		rp.FlushInterval = -1
		// Pooled upstream connections like the gateway's, so both keep
		// the same goroutines per stream.
		rp.Transport = &http.Transport{MaxIdleConnsPerHost: 256}
		proxy := httptest.NewServer(rp)
		defer proxy.Close()
		base, key = proxy.URL, alphaSecret
	}

	const streams = 128
	tr := &http.Transport{MaxIdleConnsPerHost: streams}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	send := func(ctx context.Context, body string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		return client.Do(req)
	}
	runtime.GC()
	before := stackInuse()
	// One short request per connection first: on a kept-alive connection
	// the stream's handler goroutine is the one that wrote that request's
	// record and log line.
	var wg sync.WaitGroup
	for range streams {
		wg.Go(func() {
			resp, err := send(context.Background(), chatBody("chat-alpha", true, ""))
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()
	// The role chunk comes at once, the content 20 s later: every stream
	// has had its first flush and sits in the relay when stacks are read.
	body := chatBody("chat-alpha", true, "*:chunks=1 *:chunk_delay_ms=20000")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan error, streams)
	for range streams {
		wg.Go(func() {
			resp, err := send(ctx, body)
			if err == nil {
				defer resp.Body.Close()
				_, err = resp.Body.Read(make([]byte, 1))
			}
			first <- err
			<-ctx.Done()
		})
	}
	for range streams {
		if err := <-first; err != nil {
			t.Fatalf("%s: %v", base, err)
		}
	}
	return float64(stackInuse()-before) / streams
}

func medianFloat(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func stackInuse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.StackInuse
}
