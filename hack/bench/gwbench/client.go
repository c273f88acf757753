package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Workload is a request shape: which mock protocol ends up serving it and
// whether the answer streams.
type Workload struct {
	Proto string // "alpha" (OpenAI chat completions) or "beta" (Anthropic Messages style)
	SSE   bool
}

func (w Workload) String() string {
	if w.SSE {
		return w.Proto + "/sse"
	}
	return w.Proto + "/json"
}

func parseWorkloads(s string) ([]Workload, error) {
	var out []Workload
	for _, f := range strings.Split(s, ",") {
		proto, mode, ok := strings.Cut(strings.TrimSpace(f), "/")
		if !ok || (proto != "alpha" && proto != "beta") || (mode != "json" && mode != "sse") {
			return nil, fmt.Errorf("workload %q: want alpha|beta / json|sse, e.g. alpha/sse", f)
		}
		out = append(out, Workload{Proto: proto, SSE: mode == "sse"})
	}
	return out, nil
}

// model is the provider model of each protocol; the gateway's aliases have
// the same names, so an OpenAI body is byte for byte the same to the mock
// and to the gateway.
func model(proto string) string { return proto + "-large" }

// endpoint is one way to send one workload to one target.
type endpoint struct {
	url       string
	header    http.Header
	body      []byte
	anthropic bool // the answer is in the Anthropic protocol
	stream    bool
}

const (
	systemText = "You are terse"
	userText   = "Tell me something deterministic please"
)

// nativeEndpoint speaks the mock's own protocol at base (the mock itself or
// the reverse proxy in front of it), with the upstream credential.
func nativeEndpoint(base string, w Workload, upstreamKey, directive string) *endpoint {
	if w.Proto == "alpha" {
		return &endpoint{url: base + "/v1/chat/completions", stream: w.SSE, body: openAIBody(w, directive),
			header: http.Header{"Authorization": {"Bearer " + upstreamKey}, "Content-Type": {"application/json"}}}
	}
	m := map[string]any{"model": model(w.Proto), "max_tokens": 256, "system": systemText,
		"messages": []map[string]string{{"role": "user", "content": userText + directive}}}
	if w.SSE {
		m["stream"] = true
	}
	b, _ := json.Marshal(m)
	return &endpoint{url: base + "/v1/messages", anthropic: true, stream: w.SSE, body: b,
		header: http.Header{"X-Api-Key": {upstreamKey}, "Anthropic-Version": {"2023-06-01"}, "Content-Type": {"application/json"}}}
}

// gatewayEndpoint speaks OpenAI to a gateway, naming the alias that routes
// to w's protocol.
func gatewayEndpoint(base string, w Workload, gatewayKey, directive string) *endpoint {
	return &endpoint{url: base + "/v1/chat/completions", stream: w.SSE, body: openAIBody(w, directive),
		header: http.Header{"Authorization": {"Bearer " + gatewayKey}, "Content-Type": {"application/json"}}}
}

func openAIBody(w Workload, directive string) []byte {
	m := map[string]any{"model": model(w.Proto), "messages": []map[string]string{
		{"role": "system", "content": systemText}, {"role": "user", "content": userText + directive}}}
	if w.SSE {
		m["stream"] = true
		m["stream_options"] = map[string]bool{"include_usage": true}
	}
	b, _ := json.Marshal(m)
	return b
}

// slowDirective makes the mock stream chunks pieces delayMs apart: the
// streams phase's long-lived answers.
func slowDirective(chunks, delayMs int) string {
	return fmt.Sprintf("\n@mock *:chunks=%d *:chunk_delay_ms=%d", chunks, delayMs)
}

// newTransport is a keep-alive HTTP/1.1 client pool for one target.
func newTransport(idle int, keepAlive bool) *http.Transport {
	return &http.Transport{
		Proxy:               nil, // loopback only, whatever the environment says
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2 * idle,
		MaxIdleConnsPerHost: idle,
		IdleConnTimeout:     2 * time.Minute,
		DisableCompression:  true,
		DisableKeepAlives:   !keepAlive,
	}
}

// sample is one request's timing from its start (the scheduled send time in
// the open loop); first is to the first content event, streams only.
type sample struct{ total, first time.Duration }

// readers are the SSE line readers, reused: the client's own allocations
// stay out of the way of the targets' CPU.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}

var (
	dataPrefix = []byte("data: ")
	oaiContent = []byte(`"content":"`)
	oaiEmpty   = []byte(`"content":""`)
	oaiDone    = []byte("data: [DONE]\n")
	antDelta   = []byte(`"text_delta"`)
	antStop    = []byte("event: message_stop\n")
	antText    = []byte(`"text":"`)
)

// do sends one request and reads the whole answer; start is the time the
// latency counts from. Anything but a complete, well-formed answer is an
// error: a fast failure must never count as a fast request.
func do(ctx context.Context, c *http.Client, ep *endpoint, start time.Time) (sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.url, bytes.NewReader(ep.body))
	if err != nil {
		return sample{}, err
	}
	req.Header = ep.header.Clone()
	resp, err := c.Do(req)
	if err != nil {
		return sample{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return sample{}, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	if !ep.stream {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return sample{}, err
		}
		mark := oaiContent
		if ep.anthropic {
			mark = antText
		}
		if !bytes.Contains(b, mark) {
			return sample{}, fmt.Errorf("answer without content: %.200s", b)
		}
		return sample{total: time.Since(start)}, nil
	}
	br := readers.Get().(*bufio.Reader)
	br.Reset(resp.Body)
	defer func() { br.Reset(nil); readers.Put(br) }()
	var s sample
	ends := 0
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return sample{}, errors.New("SSE line over 32 KiB")
		}
		if s.first == 0 && bytes.HasPrefix(line, dataPrefix) && isContent(ep.anthropic, line) {
			s.first = time.Since(start)
		}
		if !ep.anthropic && bytes.Equal(line, oaiDone) || ep.anthropic && bytes.Equal(line, antStop) {
			ends++
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return sample{}, err
		}
	}
	s.total = time.Since(start)
	if ends != 1 || s.first == 0 {
		return sample{}, fmt.Errorf("malformed stream: %d end markers, content seen: %v", ends, s.first != 0)
	}
	return s, nil
}

func isContent(anthropic bool, line []byte) bool {
	if anthropic {
		return bytes.Contains(line, antDelta)
	}
	return bytes.Contains(line, oaiContent) && !bytes.Contains(line, oaiEmpty)
}

// errLog keeps a count of errors and the first few messages.
type errLog struct {
	mu      sync.Mutex
	n       int
	samples []string
}

func (e *errLog) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	if len(e.samples) < 5 {
		e.samples = append(e.samples, err.Error())
	}
}

func (e *errLog) count() (int, []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n, append([]string(nil), e.samples...)
}
