package server_test

// Benchmarks of the gateway's added latency: the same chat request sent
// through the gateway (BenchmarkChat*) and straight to the mock it routes to
// (BenchmarkDirect*), over real loopback TCP with keep-alive clients and the
// real SQLite ledger. BenchmarkAdded* interleaves both paths in one loop and
// reports the difference, which is what survives a noisy machine best.
//
//	go test -run='^$' -bench=. -benchtime=5000x ./gateway/server/
//
// Besides ns/op they report p50-µs/p99-µs (per-request latency; for streams
// ttfc = time to the first content byte) and cpu-µs/op (this process's
// user+system CPU per request: client, gateway and mock together, so the
// gateway's own CPU is Chat − Direct). `make bench` is the fuller load
// test, each target its own process; docs/BENCHMARK.md has its method.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/localstack"
)

// benchModel is both the alias and the upstream model, so both paths get
// byte-identical bodies.
const benchModel = "alpha-large"

type benchStack struct {
	client          *http.Client
	direct, gateway benchTarget
}

type benchTarget struct{ url, auth string }

// newBenchStack starts the local stack (gateway/localstack: production
// server timeouts, warn-level JSON logs to io.Discard, ledger in a temp dir)
// with one more alias, named like the provider model, for key "bench".
func newBenchStack(b *testing.B) *benchStack {
	b.Helper()
	const upstreamKey = "bench-upstream-credential-0123456789"
	log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := localstack.Start(context.Background(), localstack.Options{Dir: b.TempDir(), AlphaKey: upstreamKey, Logger: log,
		Mutate: benchAlias(benchModel)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })

	tr := &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 256, DisableCompression: true}
	b.Cleanup(tr.CloseIdleConnections)
	return &benchStack{
		client:  &http.Client{Transport: tr, Timeout: 30 * time.Second},
		direct:  benchTarget{url: st.AlphaURL + "/v1/chat/completions", auth: "Bearer " + upstreamKey},
		gateway: benchTarget{url: st.URL + "/v1/chat/completions", auth: "Bearer " + st.KeyA},
	}
}

// benchAlias adds alias model, routed to mock alpha's model of the same
// name without fallback, so a request body is byte-for-byte the same sent to
// the mock or through the gateway, and puts every key's limiter out of reach.
func benchAlias(model string) func(*snapshot.Snapshot) {
	return func(s *snapshot.Snapshot) {
		zero := 0
		s.Aliases = append(s.Aliases, snapshot.Alias{Name: model,
			Primary: snapshot.Route{Provider: "alpha", Model: model}, MaxFallbacks: &zero})
		for i := range s.Keys {
			s.Keys[i].Models = append(s.Keys[i].Models, model)
			s.Keys[i].RateLimit = snapshot.RateLimit{RPM: 100_000_000, Burst: 1_000_000}
		}
	}
}

func benchBody(stream bool) []byte {
	if stream {
		return []byte(`{"model":"` + benchModel + `","messages":[{"role":"system","content":"You are terse"},` +
			`{"role":"user","content":"Tell me something deterministic please"}],"stream":true,"stream_options":{"include_usage":true}}`)
	}
	return []byte(`{"model":"` + benchModel + `","messages":[{"role":"system","content":"You are terse"},` +
		`{"role":"user","content":"Tell me something deterministic please"}]}`)
}

var (
	benchContent = []byte(`"content":"`)
	benchEmpty   = []byte(`"content":""`)
	benchDone    = []byte("data: [DONE]\n")
)

// benchDo sends one request and reads the whole answer; it returns the total
// time and, for a stream, the time to the first content byte.
func benchDo(c *http.Client, t benchTarget, body []byte, stream bool, br *bufio.Reader) (total, first time.Duration, err error) {
	req, err := http.NewRequest(http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Authorization", t.auth)
	req.Header.Set("Content-Type", "application/json")
	t0 := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, 0, fmt.Errorf("HTTP %d: %s", resp.StatusCode, msg)
	}
	if !stream {
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return 0, 0, err
		}
		return time.Since(t0), 0, nil
	}
	br.Reset(resp.Body)
	defer br.Reset(nil)
	dones := 0
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case bytes.Equal(line, benchDone):
			dones++
		case first == 0 && bytes.Contains(line, benchContent) && !bytes.Contains(line, benchEmpty):
			first = time.Since(t0)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, 0, err
		}
	}
	if dones != 1 || first == 0 {
		return 0, 0, fmt.Errorf("malformed stream: %d [DONE], content seen %v", dones, first != 0)
	}
	return time.Since(t0), first, nil
}

func benchCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchPct(v []time.Duration, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	i := min(max(int(float64(len(v))*p+0.999999)-1, 0), len(v)-1)
	return float64(v[i]) / float64(time.Microsecond)
}

// benchSequential is one client sending requests back to back (concurrency 1).
func benchSequential(b *testing.B, viaGateway, stream bool) {
	s := newBenchStack(b)
	t := s.direct
	if viaGateway {
		t = s.gateway
	}
	body, br := benchBody(stream), bufio.NewReaderSize(nil, 32<<10)
	for range 200 { // warm connections, pools and the ledger
		if _, _, err := benchDo(s.client, t, body, stream, br); err != nil {
			b.Fatal(err)
		}
	}
	var total, first []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := benchCPU()
	for b.Loop() {
		tt, ft, err := benchDo(s.client, t, body, stream, br)
		if err != nil {
			b.Fatal(err)
		}
		total = append(total, tt)
		if stream {
			first = append(first, ft)
		}
	}
	b.ReportMetric(float64(benchCPU()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	b.ReportMetric(benchPct(total, 0.50), "p50-µs")
	b.ReportMetric(benchPct(total, 0.99), "p99-µs")
	if stream {
		b.ReportMetric(benchPct(first, 0.50), "ttfc-p50-µs")
		b.ReportMetric(benchPct(first, 0.99), "ttfc-p99-µs")
	}
}

func BenchmarkDirectJSON(b *testing.B)   { benchSequential(b, false, false) }
func BenchmarkChatJSON(b *testing.B)     { benchSequential(b, true, false) }
func BenchmarkDirectStream(b *testing.B) { benchSequential(b, false, true) }
func BenchmarkChatStream(b *testing.B)   { benchSequential(b, true, true) }

// benchAdded alternates direct and gateway requests (order flipped every
// pair) and reports the gateway's added latency per percentile. ns/op is
// one pair.
func benchAdded(b *testing.B, stream bool) {
	s := newBenchStack(b)
	body, br := benchBody(stream), bufio.NewReaderSize(nil, 32<<10)
	for range 200 {
		for _, t := range []benchTarget{s.direct, s.gateway} {
			if _, _, err := benchDo(s.client, t, body, stream, br); err != nil {
				b.Fatal(err)
			}
		}
	}
	var d, g []time.Duration
	b.ResetTimer()
	i := 0
	for b.Loop() {
		order := [2]bool{false, true} // viaGateway
		if i%2 == 1 {
			order = [2]bool{true, false}
		}
		i++
		for _, via := range order {
			t := s.direct
			if via {
				t = s.gateway
			}
			tt, ft, err := benchDo(s.client, t, body, stream, br)
			if err != nil {
				b.Fatal(err)
			}
			if stream {
				tt = ft // the latency a caller feels: the first token
			}
			if via {
				g = append(g, tt)
			} else {
				d = append(d, tt)
			}
		}
	}
	for _, p := range []struct {
		name string
		q    float64
	}{{"p50", 0.50}, {"p99", 0.99}} {
		dp, gp := benchPct(d, p.q), benchPct(g, p.q)
		b.ReportMetric(dp, "direct-"+p.name+"-µs")
		b.ReportMetric(gp, "gw-"+p.name+"-µs")
		b.ReportMetric(gp-dp, "added-"+p.name+"-µs")
	}
}

// BenchmarkAddedJSON: time to the complete response.
func BenchmarkAddedJSON(b *testing.B) { benchAdded(b, false) }

// BenchmarkAddedStream: time to the first content byte.
func BenchmarkAddedStream(b *testing.B) { benchAdded(b, true) }

// benchParallel is throughput under load: 32 goroutines per GOMAXPROCS.
func benchParallel(b *testing.B, viaGateway, stream bool) {
	s := newBenchStack(b)
	t := s.direct
	if viaGateway {
		t = s.gateway
	}
	body := benchBody(stream)
	b.SetParallelism(32)
	b.ResetTimer()
	cpu0 := benchCPU()
	b.RunParallel(func(pb *testing.PB) {
		br := bufio.NewReaderSize(nil, 32<<10)
		for pb.Next() {
			if _, _, err := benchDo(s.client, t, body, stream, br); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(benchCPU()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

func BenchmarkDirectJSONParallel(b *testing.B) { benchParallel(b, false, false) }
func BenchmarkChatJSONParallel(b *testing.B)   { benchParallel(b, true, false) }
