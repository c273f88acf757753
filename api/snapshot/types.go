package snapshot

import "time"

// Snapshot is one complete, versioned gateway configuration.
type Snapshot struct {
	// Version is "sha256:" + hex of the canonical encoding with Version empty, so
	// equal content always has an equal version, whoever produced it.
	Version   string     `json:"version"`
	Providers []Provider `json:"providers"`
	Aliases   []Alias    `json:"aliases"`
	Keys      []Key      `json:"keys"`
	Limits    Limits     `json:"limits"`
	// Groups are budget groups keys share (see Group); omitted when empty
	// so snapshots without them keep their bytes and version.
	Groups []Group `json:"groups,omitempty"`
}

// Protocols a provider can speak.
const (
	ProtocolOpenAI    = "openai"
	ProtocolAnthropic = "anthropic"
)

// Provider is an upstream model vendor endpoint.
type Provider struct {
	Name     string `json:"name"`
	Protocol string `json:"protocol"`
	// ResponsesAPI: the provider (protocol openai) also serves OpenAI's
	// Responses API, so Responses requests pass through to it instead of
	// being translated to chat completions. Omitted when false, so that
	// snapshots without it keep their bytes and version.
	ResponsesAPI bool `json:"responsesAPI,omitzero"`
	// BaseURL is scheme://host[:port][/path]; userinfo, query and fragment are
	// rejected because credentials belong in Credential, never in a URL that may be
	// logged.
	BaseURL string `json:"baseURL"`
	// Credential is nil for providers that need none (e.g. a local mock).
	Credential              *Credential `json:"credential"`
	ConnectTimeoutMs        int         `json:"connectTimeoutMs"`
	ResponseHeaderTimeoutMs int         `json:"responseHeaderTimeoutMs"`
	// CircuitBreaker takes the provider out of routing while it keeps failing.
	CircuitBreaker CircuitBreaker `json:"circuitBreaker"`
	// Prices are what the provider's models cost (see Price); a route
	// without one is unpriced and costs nothing. Omitted when empty so
	// snapshots without prices keep their bytes and version.
	Prices []Price `json:"prices,omitempty"`
}

// CircuitBreaker is a provider's circuit breaker: ConsecutiveFailures
// failures in a row that are the provider's fault open it; while open,
// routes skip the provider (an alias's last route excepted); after
// CoolDownMs it lets HalfOpenProbes requests through, and closes when all of
// them succeed or opens again when one fails.
type CircuitBreaker struct {
	// ConsecutiveFailures is a pointer because 0 ("never open": the breaker
	// is off) differs from unset (DefaultConsecutiveFailures).
	ConsecutiveFailures *int `json:"consecutiveFailures"`
	CoolDownMs          int  `json:"coolDownMs"`
	HalfOpenProbes      int  `json:"halfOpenProbes"`
}

// Enabled says whether the breaker can ever open.
func (c CircuitBreaker) Enabled() bool {
	return c.ConsecutiveFailures == nil || *c.ConsecutiveFailures > 0
}

// Credential references a provider API key; the snapshot never holds the secret
// itself. Exactly one of File or SecretName+SecretKey is set.
type Credential struct {
	File       string `json:"file,omitempty"`
	SecretName string `json:"secretName,omitempty"`
	SecretKey  string `json:"secretKey,omitempty"`
}

// Alias is a public model name and the routes that serve it.
type Alias struct {
	Name    string `json:"name"`
	Primary Route  `json:"primary"`
	// Fallbacks are tried in order, at most MaxFallbacks of them.
	Fallbacks []Route `json:"fallbacks"`
	// MaxFallbacks is a pointer because 0 ("never fall back") differs from unset
	// (default 1, capped to len(Fallbacks)).
	MaxFallbacks *int     `json:"maxFallbacks"`
	Timeouts     Timeouts `json:"timeouts"`
}

// Route is one provider and the provider's own model name.
type Route struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
}

// Timeouts bound one request to an alias.
type Timeouts struct {
	TotalMs      int `json:"totalMs"`
	AttemptMs    int `json:"attemptMs"`
	FirstChunkMs int `json:"firstChunkMs"`
	IdleMs       int `json:"idleMs"`
}

// Key is a gateway client key; only its hash is stored.
type Key struct {
	ID     string `json:"id"`
	Prefix string `json:"prefix"`
	Hash   string `json:"hash"`
	// Models lists the aliases the key may use; ["*"] means all of them.
	Models    []string   `json:"models"`
	RateLimit RateLimit  `json:"rateLimit"`
	Disabled  bool       `json:"disabled"`
	ExpiresAt *time.Time `json:"expiresAt"`
	// TokensPerMinute, Budget and Group are the key's quotas (quotas.go);
	// zero values mean none and are omitted, so keys without quotas keep
	// their bytes.
	TokensPerMinute int64   `json:"tokensPerMinute,omitzero"`
	Budget          *Budget `json:"budget,omitempty"`
	Group           string  `json:"group,omitempty"`
	// Previous is the key this one replaced (`llmgw keys rotate`): until
	// Previous.Until it authenticates as this key (same id, history, limits
	// and budgets); after it, it is refused as rotated. Omitted when the key
	// was never rotated.
	Previous *PreviousKey `json:"previous,omitempty"`
	// Owners are the labels (named by the controller's --owner-labels, or
	// written in a snapshot file) copied onto every usage record of the key.
	Owners map[string]string `json:"owners,omitempty"`
}

// PreviousKey is a rotated-out key: its prefix and hash (never the key), and
// when it stops being accepted.
type PreviousKey struct {
	Prefix string    `json:"prefix"`
	Hash   string    `json:"hash"`
	Until  time.Time `json:"until"`
}

// Accepts says whether the previous key still authenticates at now.
func (p *PreviousKey) Accepts(now time.Time) bool { return p != nil && now.Before(p.Until) }

// RateLimit is a token bucket: refilled at RPM per minute, holding at most Burst.
type RateLimit struct {
	RPM   int `json:"rpm"`
	Burst int `json:"burst"`
}

// Limits are per-gateway hard limits that protect it from oversized or abusive input.
type Limits struct {
	MaxBodyBytes    int64 `json:"maxBodyBytes"`
	MaxMessages     int   `json:"maxMessages"`
	MaxContentChars int   `json:"maxContentChars"`
	MaxConcurrent   int   `json:"maxConcurrent"`
	// DefaultMaxTokens is the output a request without max_tokens (or
	// max_completion_tokens) reserves against token limits and budgets.
	DefaultMaxTokens int `json:"defaultMaxTokens"`
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// Total bounds the whole request, all attempts included.
func (t Timeouts) Total() time.Duration { return ms(t.TotalMs) }

// Attempt bounds one provider attempt.
func (t Timeouts) Attempt() time.Duration { return ms(t.AttemptMs) }

// FirstChunk bounds the wait for the first content chunk of a stream.
func (t Timeouts) FirstChunk() time.Duration { return ms(t.FirstChunkMs) }

// Idle bounds the gap between two chunks of an established stream.
func (t Timeouts) Idle() time.Duration { return ms(t.IdleMs) }

// ConnectTimeout bounds dialing the provider.
func (p *Provider) ConnectTimeout() time.Duration { return ms(p.ConnectTimeoutMs) }

// ResponseHeaderTimeout bounds the wait for the provider's response headers.
func (p *Provider) ResponseHeaderTimeout() time.Duration { return ms(p.ResponseHeaderTimeoutMs) }

// CoolDown is how long an open breaker keeps the provider out of routing.
func (c CircuitBreaker) CoolDown() time.Duration { return ms(c.CoolDownMs) }
