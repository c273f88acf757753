// Package provider holds the upstream adapters the gateway's router calls: one per
// configured provider endpoint, translating the gateway's protocol-neutral request
// to the provider's wire protocol (OpenAI chat completions or Anthropic Messages)
// and its answers, JSON or streamed, back to neutral completions and events.
//
// Every failure is an *Error whose Kind tells the router whether a fallback may
// help. No error, log line or returned value carries the provider's base URL or
// credential.
package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Protocols understood by New.
const (
	ProtocolOpenAI    = "openai"
	ProtocolAnthropic = "anthropic"
)

// Message is one chat message. Role is system, user or assistant; Content is
// already flattened to text by the caller.
type Message struct{ Role, Content string }

// Request is a protocol-neutral chat request.
type Request struct {
	Model       string // the provider's model name, not the public alias
	Messages    []Message
	MaxTokens   *int
	Temperature *float64
	TopP        *float64
	Stop        []string
	User        string
}

// Usage counts tokens as the provider reported them. CachedInputTokens are
// the part of InputTokens served from the provider's prompt cache and
// ReasoningTokens the part of OutputTokens spent on reasoning the caller
// does not see (OpenAI's semantics; the Messages protocol reports cache
// reads apart from input_tokens, and the adapter adds them back).
type Usage struct {
	InputTokens, OutputTokens          int
	CachedInputTokens, ReasoningTokens int
}

// Completion is a non-streamed answer.
type Completion struct {
	ID           string
	Text         string
	FinishReason string // OpenAI vocabulary: stop, length, content_filter
	Usage        Usage
	HasUsage     bool
}

// Event is one step of a stream. Each Event carries exactly one of: a content
// delta (Text != ""), a finish marker (FinishReason != ""), or usage
// (Usage != nil). Usage, when the provider reports it, follows the finish marker.
type Event struct {
	Text         string
	FinishReason string
	Usage        *Usage
}

// Buffered is implemented by a Stream that can tell whether its next event
// has already arrived, so a relay can write events that came together with
// one flush.
type Buffered interface {
	// TryNext is Next when the next event (or the end) is already in
	// memory, and ok=false, doing nothing, when it would have to wait for
	// the network. It must not be called after Close.
	TryNext() (ev Event, ok bool, err error)
}

// Stream is an established upstream stream.
type Stream interface {
	// Next returns the next event; io.EOF after a clean end; an *Error on an
	// upstream error event, a cut or truncated stream (KindStream), malformed data
	// (KindProtocol) or cancellation of the ctx given to Adapter.Stream
	// (KindCanceled, or KindTimeout for a deadline). Errors are sticky.
	Next() (Event, error)
	// Close releases the connection and may be called more than once, but not
	// concurrently with Next: cancel the ctx to unblock a waiting Next first.
	Close() error
}

// Config describes one provider endpoint.
type Config struct {
	Name     string
	Protocol string // "openai" | "anthropic"
	// BaseURL is the provider's root, e.g. http://mock-alpha:8080. A trailing /v1
	// is accepted too (https://api.openai.com/v1), so both conventions work.
	BaseURL string
	// Credential is the resolved secret; "" sends none.
	Credential     string
	ConnectTimeout time.Duration // 0: 10s
	// ResponseHeaderTimeout bounds the wait for response headers; 0 leaves it to
	// the caller's ctx. For non-streamed calls real providers send headers only
	// after generating the whole answer, so this bounds generation time too.
	ResponseHeaderTimeout time.Duration
	// Client, when set, is shared instead of a per-adapter transport; the two
	// timeouts above then belong to its transport. Redirects are never followed.
	Client *http.Client
}

// Adapter calls one provider endpoint. Implementations are safe for concurrent
// use.
type Adapter interface {
	Name() string
	Complete(ctx context.Context, req *Request) (*Completion, error)
	// Stream returns once the upstream answered 200 with an event stream; any
	// failure before that is an *Error. The stream lives as long as ctx: cancel it
	// to abandon the stream (first-chunk and idle timeouts work that way).
	Stream(ctx context.Context, req *Request) (Stream, error)
}

// IdleCloser is implemented by every adapter New returns. Call it when an adapter
// is replaced (snapshot reload) so its pooled connections do not linger.
type IdleCloser interface{ CloseIdleConnections() }

// New validates cfg and returns the adapter for its protocol. Errors name the
// provider but never its URL or credential.
func New(cfg Config) (Adapter, error) {
	if cfg.Name == "" {
		return nil, errors.New("provider: name is required")
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("provider %s: base URL must be an absolute http(s) URL", cfg.Name)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("provider %s: base URL must not carry user info, query or fragment", cfg.Name)
	}
	var path, authHeader, authValue string
	var extra [][2]string
	switch cfg.Protocol {
	case ProtocolOpenAI:
		path, authHeader, authValue = "/chat/completions", "Authorization", "Bearer "+cfg.Credential
	case ProtocolAnthropic:
		path, authHeader, authValue = "/messages", "X-Api-Key", cfg.Credential
		extra = [][2]string{{"Anthropic-Version", anthropicVersion}}
	default:
		return nil, fmt.Errorf("provider %s: unknown protocol %q", cfg.Name, cfg.Protocol)
	}
	b := newBase(cfg, u)
	b.endpoint = joinEndpoint(u, path)
	if b.target, err = http.NewRequest(http.MethodPost, b.endpoint, nil); err != nil {
		return nil, fmt.Errorf("provider %s: base URL must be an absolute http(s) URL", cfg.Name)
	}
	if cfg.Credential != "" {
		extra = append(extra, [2]string{authHeader, authValue})
	}
	b.setHeaders(extra)
	if cfg.Protocol == ProtocolOpenAI {
		return &openAI{base: b}, nil
	}
	return &anthropic{base: b}, nil
}

// joinEndpoint appends /v1 unless the base already ends in it.
func joinEndpoint(u *url.URL, path string) string {
	base := strings.TrimRight(u.Scheme+"://"+u.Host+u.EscapedPath(), "/")
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	return base + path
}
