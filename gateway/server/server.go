// Package server is the gateway's data plane: authentication, limits,
// validation, routing with fallback, SSE relay and the usage ledger, over an
// immutable config state that reloads swap atomically.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/quota"
	"github.com/llmgw/llmgw/gateway/ratelimit"
	"github.com/llmgw/llmgw/gateway/usage"
)

// Options configures a Server.
type Options struct {
	Ledger      *usage.Ledger
	Logger      *slog.Logger
	Credentials CredentialSource
	Metrics     *Metrics
	// Peers, when set, makes GET /v1/usage answer across gateway replicas.
	Peers Peers

	// ClientIPRPM and ClientIPBurst are the per-client-address token bucket
	// every /v1 request passes before authentication (429
	// client_ip_rate_limited); either ≤ 0 disables it. ClientIPMaxClients
	// caps the buckets held (0: ratelimit.DefaultMaxClients).
	ClientIPRPM, ClientIPBurst, ClientIPMaxClients int
	// TrustedProxies are the peers whose X-Forwarded-For is believed when
	// finding the client address; none: the TCP peer is the client.
	TrustedProxies []netip.Prefix
	// ReadRPM and ReadBurst are the per-key token bucket of GET /v1/usage
	// and GET /v1/models, separate from the key's chat bucket (429
	// read_rate_limit_exceeded): a floor under the key's own chat rate limit,
	// which sizes the bucket when it is larger.
	ReadRPM, ReadBurst int
	// Quota keeps the keys' request, token and budget counters (nil: a
	// quota.Memory of this process).
	Quota quota.Store
	// MaxBodyBytesInFlight bounds the request bodies all requests in flight
	// hold together (503 gateway_overloaded past it); 0: a quarter of the
	// Go memory limit (GOMEMLIMIT), or 256 MiB without one.
	MaxBodyBytesInFlight int64
	// LedgerFailOpen serves chat requests while the ledger cannot commit,
	// instead of refusing them with 503 usage_store_unavailable; the records
	// they lose are counted (usage.Stats.Unrecorded).
	LedgerFailOpen bool
	// Tracer makes a span of every model request and provider attempt
	// (tracing.go); nil or a no-op tracer: tracing off, at no cost per
	// request (a caller's traceparent still reaches the provider).
	Tracer trace.Tracer
}

// Server is the data plane. Create it with New, publish config with Apply.
type Server struct {
	ledger   *usage.Ledger
	log      *slog.Logger
	creds    CredentialSource
	metrics  *Metrics
	peers    Peers
	now      func() time.Time
	state    atomic.Pointer[state]
	quota    quota.Store // chat limits: requests and tokens per minute, budgets (quota.go)
	adapters adapterCache
	health   providerHealth
	breakers breakerSet
	inflight atomic.Int64
	bodies   *bodyBudget  // what in-flight request bodies may hold (bodybudget.go)
	tracer   trace.Tracer // nil: tracing off (tracing.go)

	// readLimiter is the per-key bucket of /v1/usage and /v1/models, apart
	// from the chat bucket (quota); abuse holds the flag-set limits.
	readLimiter ratelimit.Limiter
	abuse       atomic.Pointer[abuseLimits]
	gate        ledgerGate

	// seeds is what the ledger says was spent before the process started,
	// for a quota store that starts empty (quota.go).
	seeds atomic.Pointer[spendSeeds]

	// credKick wakes RetryCredentials when a state with unreadable
	// credentials is published.
	credKick chan struct{}

	reloadMu      sync.Mutex
	lastReloadErr string
	lastReloadAt  time.Time
}

// New returns a server with no config: every data-plane request answers 503
// until the first Apply succeeds.
func New(opts Options) (*Server, error) {
	if opts.Ledger == nil {
		return nil, errors.New("server: a usage ledger is required")
	}
	s := &Server{ledger: opts.Ledger, log: opts.Logger, creds: opts.Credentials, metrics: opts.Metrics, now: time.Now, peers: opts.Peers,
		credKick: make(chan struct{}, 1), tracer: tracerOf(opts.Tracer)}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.metrics == nil {
		s.metrics = NewMetrics(nil)
	}
	if s.quota = opts.Quota; s.quota == nil {
		s.quota = quota.NewMemory()
	}
	s.setAbuseLimits(opts)
	s.breakers.init(s.log, s.metrics, s.now)
	s.gate.failOpen.Store(opts.LedgerFailOpen)
	budget := opts.MaxBodyBytesInFlight
	if budget <= 0 {
		budget = defaultBodyBudget()
	}
	s.bodies = newBodyBudget(budget)
	return s, nil
}

// Apply validates and publishes a snapshot. On error the running config stays
// in place, and the failure is reported by /health and the reload metric.
func (s *Server) Apply(ctx context.Context, snap *snapshot.Snapshot) error {
	// Encoding a private copy normalizes (defaults), validates and computes the
	// version, so a snapshot built in code is held to the same rules as a file.
	snap = snap.Clone()
	_, err := snapshot.Encode(snap)
	return s.apply(ctx, snap, err)
}

// ApplySealed runs a snapshot that snapshot.SealAssembled has sealed (the
// Kubernetes source's parts, each checked as it was decoded): no copy and
// no second encoding, which at 50,000 keys were most of a reload's cost.
// The server takes snap over; the caller must not change it afterwards.
func (s *Server) ApplySealed(ctx context.Context, snap *snapshot.Snapshot) error {
	return s.apply(ctx, snap, nil)
}

// apply publishes snap, a private normalized and validated copy with its
// version set, unless sealing it failed (err).
func (s *Server) apply(ctx context.Context, snap *snapshot.Snapshot, err error) error {
	if cur := s.state.Load(); err == nil && cur != nil && cur.snap.Version == snap.Version {
		// The newest snapshot seen is the running one (a watcher's first
		// delivery, a resync, or a bad file put back): nothing to rebuild, but
		// an earlier rejection no longer describes the newest config.
		s.clearReloadError()
		return nil
	}
	if err != nil {
		s.ReportReloadError(err)
		return err
	}
	t0 := time.Now()
	st := s.buildState(ctx, snap, s.state.Load())
	s.breakers.sync(snap.Providers) // before the swap: every provider of st has its breaker
	old := s.state.Swap(st)
	s.clearReloadError()
	s.metrics.reload(true, snap.Version)
	s.metrics.applySeconds.Observe(time.Since(t0).Seconds())
	keep := make(map[string]bool, len(snap.Keys))
	for _, k := range snap.Keys {
		keep[k.ID] = true
	}
	s.readLimiter.Forget(func(id string) bool { return keep[id] })
	s.adapters.retain(st.adapters)
	s.seedQuotas(snap)
	if old == nil || old.snap.Version != snap.Version {
		s.log.Info("snapshot applied", "version", snap.Version, "providers", len(snap.Providers), "aliases", len(snap.Aliases), "keys", len(snap.Keys))
	}
	s.credentialsChanged(old, st)
	return nil
}

// Refresh rebuilds the running snapshot's state, re-resolving provider
// credentials: a rotated Secret reaches the gateway without a snapshot
// change. Adapters whose credential is unchanged are reused.
//
// It leaves the reload status alone: a rejected newer snapshot stays reported.
func (s *Server) Refresh(ctx context.Context) error {
	cur := s.state.Load()
	if cur == nil {
		return nil
	}
	st := s.buildState(ctx, cur.snap, cur)
	st.loadedAt = cur.loadedAt
	if s.state.CompareAndSwap(cur, st) {
		s.adapters.retain(st.adapters)
		s.credentialsChanged(cur, st)
	}
	if n := len(st.unavailable); n > 0 {
		return fmt.Errorf("%d provider credential(s) still cannot be read", n)
	}
	return nil
}

func (s *Server) clearReloadError() {
	s.reloadMu.Lock()
	s.lastReloadErr, s.lastReloadAt = "", s.now()
	s.reloadMu.Unlock()
	s.metrics.reloadFailing.Set(0)
}

// ReportReloadError records a rejected snapshot (for example one that failed
// to parse) without touching the running config.
func (s *Server) ReportReloadError(err error) {
	s.reloadMu.Lock()
	s.lastReloadErr, s.lastReloadAt = err.Error(), s.now()
	s.reloadMu.Unlock()
	s.metrics.reload(false, "")
	s.log.Error("snapshot rejected; keeping the running one", "err", err)
}

// Inflight is the number of model requests being served (their records
// not final yet).
func (s *Server) Inflight() int64 { return s.inflight.Load() }

// Version is the running snapshot's version ("" before the first Apply).
func (s *Server) Version() string {
	if st := s.state.Load(); st != nil {
		return st.snap.Version
	}
	return ""
}

// Handler is the data-plane HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("POST /v1/embeddings", s.handleEmbeddings)
	mux.HandleFunc("POST /v1/messages", s.handleMessages)
	mux.HandleFunc("POST /v1/messages/count_tokens", s.handleCountTokens)
	mux.HandleFunc("POST /v1/responses", s.handleResponses)
	mux.HandleFunc("GET /v1/responses/{id}", s.handleStoredResponse)
	mux.HandleFunc("DELETE /v1/responses/{id}", s.handleStoredResponse)
	mux.HandleFunc("POST /v1/responses/{id}/cancel", s.handleStoredResponse)
	mux.HandleFunc("GET /v1/responses/{id}/input_items", s.handleStoredResponse)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("GET /v1/models/{model...}", s.handleModel)
	mux.HandleFunc("GET /v1/usage", s.handleUsage)
	mux.HandleFunc("GET /v1/usage/summary", s.handleUsageSummary)
	mux.HandleFunc("GET /health", s.handleHealth)
	mux.HandleFunc("GET /healthz", s.handleLive)
	mux.HandleFunc("GET /readyz", s.handleReady)
	mux.HandleFunc("/", s.handleNotFound)
	return withRequestID(s.edges(mux))
}

// withRequestID gives every response, whatever the endpoint or outcome, a
// gateway-generated X-Request-Id; handlers read it back from the header.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()[hdrRequestID] = []string{usage.NewRequestID()}
		next.ServeHTTP(w, r)
	})
}

func requestID(w http.ResponseWriter) string { return header(w.Header(), hdrRequestID) }

// HTTPServer wraps the handler with the timeouts that protect the gateway
// from slow clients. WriteTimeout stays zero: streams are long-lived and are
// bounded by each alias's total deadline instead.
func HTTPServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		// The gateway's own header limit is enforced in the handler (JSON
		// 431, edges.go); net/http's plain-text 431 only beyond this.
		MaxHeaderBytes: serverMaxHeaderBytes,
		// "OPTIONS *" reaches the handler (404 in the API's shape) instead
		// of net/http's empty 200.
		DisableGeneralOptionsHandler: true,
	}
}

func (s *Server) handleNotFound(w http.ResponseWriter, r *http.Request) {
	apiOf(r).writeError(w, &apiError{status: http.StatusNotFound, typ: typeInvalidRequest, code: "unknown_endpoint",
		message: "no such endpoint: " + r.Method + " " + trimPath(r.URL.Path)}, requestID(w))
}

func trimPath(p string) string {
	if len(p) > 128 || !printable(p) {
		return "(path omitted)"
	}
	return p
}
