// Package provider holds the upstream adapters the gateway's router calls: one per
// configured provider endpoint, speaking HTTP to it in its wire protocol
// (OpenAI chat completions and embeddings, or Anthropic Messages). What the
// bodies say is gateway/translate's business; the adapter sends them and
// reads the answers and event streams back.
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

	"github.com/llmgw/llmgw/gateway/translate"
)

// Protocols understood by New.
const (
	ProtocolOpenAI    = translate.ProtocolOpenAI
	ProtocolAnthropic = translate.ProtocolAnthropic
)

// Operation is what a request asks of a provider: its endpoint.
type Operation int

// The operations; a protocol without an operation's endpoint never gets
// such a request (its translator refuses it first).
const (
	OpChat        Operation = iota // /v1/chat/completions or /v1/messages
	OpEmbeddings                   // /v1/embeddings
	OpCountTokens                  // /v1/messages/count_tokens (Anthropic only)
	OpResponses                    // /v1/responses (OpenAI only; a provider that serves it)
	numOps
)

// Call is one request to a provider: the operation, the body (segments
// sent one after the other, as translate writes them) and the caller's
// headers the gateway forwards.
type Call struct {
	Op   Operation
	Body [][]byte
	// Header holds the caller's headers forwarded to a provider of the
	// caller's own protocol (Anthropic's anthropic-version and
	// anthropic-beta); each replaces the adapter's header of that name. The
	// credential and the framing headers are the adapter's and are never
	// taken from here. nil: none.
	Header http.Header
}

// Buffered is implemented by a Stream that can tell whether its next chunk
// has already arrived, so a relay can write chunks that came together with
// one flush.
type Buffered interface {
	// TryNext is Next when the next chunk (or the end) is already in
	// memory, and ok=false, doing nothing, when it would have to wait for
	// the network. It must not be called after Close.
	TryNext() (c translate.Chunk, ok bool, err error)
}

// Stream is an established upstream stream, its events read by the
// translator given to Adapter.Stream.
type Stream interface {
	// Next returns the next chunk; io.EOF after the protocol's end of
	// stream; an *Error on an upstream error event, a cut or truncated
	// stream (KindStream), malformed data (KindProtocol) or cancellation of
	// the ctx given to Adapter.Stream (KindCanceled, or KindTimeout for a
	// deadline). Errors are sticky. A chunk's Data is valid until the next
	// call.
	Next() (translate.Chunk, error)
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

// Adapter calls one provider endpoint. It carries bodies already in the
// provider's protocol (gateway/translate writes and reads them) and owns
// the HTTP exchange: headers and credential, status codes, the event
// stream's framing, timeouts, and errors that never show the provider's
// URL or credential. Implementations are safe for concurrent use.
type Adapter interface {
	Name() string
	Protocol() string
	// Complete posts the call's body to its operation's endpoint and hands
	// the 2xx answer to read; an error read returns (a *translate.Failure)
	// becomes an *Error of KindProtocol. Any failure before is an *Error too.
	Complete(ctx context.Context, call Call, read func(raw []byte) error) error
	// Stream posts the call (a chat body asking for a stream) and returns
	// once the upstream answered 200 with an event stream, whose events dec
	// reads; any failure before that is an *Error. The stream lives as long
	// as ctx: cancel it to abandon the stream (first-chunk and idle
	// timeouts work that way).
	Stream(ctx context.Context, call Call, dec translate.ChatStream) (Stream, error)
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
	var paths [numOps]string
	var authHeader, authValue string
	var extra [][2]string
	switch cfg.Protocol {
	case ProtocolOpenAI:
		paths = [numOps]string{OpChat: "/chat/completions", OpEmbeddings: "/embeddings", OpResponses: "/responses"}
		authHeader, authValue = "Authorization", "Bearer "+cfg.Credential
	case ProtocolAnthropic:
		paths = [numOps]string{OpChat: "/messages", OpCountTokens: "/messages/count_tokens"}
		authHeader, authValue = "X-Api-Key", cfg.Credential
		extra = [][2]string{{"Anthropic-Version", anthropicVersion}}
	default:
		return nil, fmt.Errorf("provider %s: unknown protocol %q", cfg.Name, cfg.Protocol)
	}
	b := newBase(cfg, u)
	for op, path := range paths {
		if path == "" {
			continue
		}
		if b.targets[op], err = http.NewRequest(http.MethodPost, joinEndpoint(u, path), nil); err != nil {
			return nil, fmt.Errorf("provider %s: base URL must be an absolute http(s) URL", cfg.Name)
		}
	}
	if cfg.Credential != "" {
		extra = append(extra, [2]string{authHeader, authValue})
	}
	b.setHeaders(extra)
	b.protocol = cfg.Protocol
	return b, nil
}

// joinEndpoint appends /v1 unless the base already ends in it.
func joinEndpoint(u *url.URL, path string) string {
	base := strings.TrimRight(u.Scheme+"://"+u.Host+u.EscapedPath(), "/")
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	return base + path
}
