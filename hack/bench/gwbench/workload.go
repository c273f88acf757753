package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Workload is a request shape: which mock protocol ends up serving it and
// whether the answer streams.
type Workload struct {
	Proto string // "alpha" (OpenAI chat-completions) or "beta" (Anthropic Messages style)
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

// wire is the protocol a response is read in.
type wire int

const (
	wireOpenAI wire = iota
	wireAnthropic
)

// endpoint is one way to send one workload to one target.
type endpoint struct {
	url    string
	header http.Header
	body   []byte
	wire   wire
	stream bool
}

const (
	systemText = "You are terse"
	userText   = "Tell me something deterministic please"
)

// nativeEndpoint speaks the mock's own protocol at base (the mock itself or
// the reverse proxy in front of it), with the upstream credential.
func nativeEndpoint(base string, w Workload, upstreamKey, directive string) *endpoint {
	if w.Proto == "alpha" {
		return &endpoint{url: base + "/v1/chat/completions", wire: wireOpenAI, stream: w.SSE,
			header: http.Header{"Authorization": {"Bearer " + upstreamKey}, "Content-Type": {"application/json"}},
			body:   openAIBody(model(w.Proto), w.SSE, directive)}
	}
	m := map[string]any{"model": model(w.Proto), "max_tokens": 256, "system": systemText,
		"messages": []map[string]string{{"role": "user", "content": userText + directive}}}
	if w.SSE {
		m["stream"] = true
	}
	b, _ := json.Marshal(m)
	return &endpoint{url: base + "/v1/messages", wire: wireAnthropic, stream: w.SSE, body: b,
		header: http.Header{"X-Api-Key": {upstreamKey}, "Anthropic-Version": {"2023-06-01"}, "Content-Type": {"application/json"}}}
}

// gatewayEndpoint speaks OpenAI to a gateway, naming the alias that routes
// to w's protocol.
func gatewayEndpoint(base string, w Workload, gatewayKey, directive string) *endpoint {
	return &endpoint{url: base + "/v1/chat/completions", wire: wireOpenAI, stream: w.SSE,
		header: http.Header{"Authorization": {"Bearer " + gatewayKey}, "Content-Type": {"application/json"}},
		body:   openAIBody(model(w.Proto), w.SSE, directive)}
}

func openAIBody(model string, stream bool, directive string) []byte {
	m := map[string]any{"model": model, "messages": []map[string]string{
		{"role": "system", "content": systemText}, {"role": "user", "content": userText + directive}}}
	if stream {
		m["stream"] = true
		m["stream_options"] = map[string]bool{"include_usage": true}
	}
	b, _ := json.Marshal(m)
	return b
}

// slowDirective makes the mock stream chunks pieces delayMs apart: the
// streams phase's long-lived responses.
func slowDirective(chunks, delayMs int) string {
	return fmt.Sprintf("\n@mock *:chunks=%d *:chunk_delay_ms=%d", chunks, delayMs)
}
