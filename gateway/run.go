// Package gateway wires the data plane (server), its snapshot source
// (source) and its usage ledger (usage) into one process: `llmgw gateway`.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/llmgw/llmgw/gateway/peers"
	"github.com/llmgw/llmgw/gateway/quota"
	"github.com/llmgw/llmgw/gateway/server"
	"github.com/llmgw/llmgw/gateway/source"
	"github.com/llmgw/llmgw/gateway/telemetry"
	"github.com/llmgw/llmgw/gateway/usage"
)

// Config is one gateway process.
type Config struct {
	Addr     string // data plane
	MgmtAddr string // metrics, profiles, peer usage; "" disables
	// Profiling configures /debug/pprof on the management port.
	Profiling Profiling
	// Source is where snapshots come from: a source.File or a *source.Kube.
	Source source.Source
	DBPath string
	// Retention bounds the usage ledger by age and size (zero: keep all).
	Retention    usage.Retention
	DrainTimeout time.Duration
	Logger       *slog.Logger
	// Peers, when set, makes GET /v1/usage merge the sibling replicas'
	// records; PeerToken is what siblings must present on the management
	// port's peer endpoint (which needs MgmtAddr).
	Peers     server.Peers
	PeerToken string
	// Elastic, in a StatefulSet, discovers the replica set and hands this
	// replica's records off when it is scaled away (nil: standalone).
	Elastic *Elastic
	// Abuse limits of the data port (server.Options): a per-client-address
	// bucket before authentication, trusted proxies for X-Forwarded-For,
	// and a per-key bucket of /v1/usage and /v1/models. Zero disables a
	// bucket; `llmgw gateway`'s flags have non-zero defaults.
	ClientIPRPM, ClientIPBurst int
	TrustedProxies             []netip.Prefix
	ReadRPM, ReadBurst         int
	MaxBodyBytesInFlight       int64
	// LedgerFailOpen serves chat requests while the ledger cannot commit
	// (default: refuse them with 503 and report not ready).
	LedgerFailOpen bool
	// QuotaStore shares the quota counters between replicas (empty URL:
	// each replica counts in its own memory).
	QuotaStore QuotaStore
}

// Gateway is a started gateway process: its ledger, its data plane and the
// listeners serving it.
type Gateway struct {
	Server *server.Server
	Ledger *usage.Ledger
	Addr   string // bound data-plane address
	// MgmtAddr is the bound management address ("" when disabled).
	MgmtAddr string

	cfg       Config
	log       *slog.Logger
	data      *http.Server
	mgmt      *http.Server // nil when disabled
	errc      chan error
	stopWatch context.CancelFunc
	// quota is the shared quota store's failover (nil without one).
	quota      *quota.Failover
	closeQuota func() error
	// handingOff is set while a hand-off interrupted by a crash is being
	// finished: the peer endpoint answers 503 meanwhile.
	handingOff atomic.Bool
	// stopTracing flushes and stops the span exporter (a no-op when
	// tracing is off).
	stopTracing func(context.Context) error
}

// Run serves until ctx is cancelled, then drains (see Gateway.Wait).
func Run(ctx context.Context, cfg Config) error {
	g, err := Start(ctx, cfg)
	if err != nil {
		return err
	}
	return g.Wait(ctx)
}

// Start opens the ledger, starts the snapshot source and binds the listeners.
// The caller must call Wait, which owns the shutdown.
func Start(ctx context.Context, cfg Config) (_ *Gateway, err error) {
	if cfg.Source == nil {
		return nil, errors.New("gateway: no snapshot source")
	}
	if cfg.PeerToken != "" && cfg.MgmtAddr == "" {
		return nil, errors.New("gateway: the peer endpoint needs a management address")
	}
	if err := cfg.Profiling.validate(cfg.MgmtAddr); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	// The cleanups below and the serving goroutines hold g, never the
	// named result, which an early error return sets to nil.
	g := &Gateway{cfg: cfg, log: log, errc: make(chan error, 2)}
	var undo []func()
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	}()
	journalLag := newJournalLagHistogram()
	g.Ledger, err = usage.Open(ctx, cfg.DBPath, usage.Options{Logger: log, Retention: cfg.Retention,
		JournalLag: func(d time.Duration) { journalLag.Observe(d.Seconds()) }})
	if err != nil {
		return nil, fmt.Errorf("opening usage ledger: %w", err)
	}
	undo = append(undo, func() { _ = g.Ledger.Close() })
	if n := g.Ledger.Recovered(); n > 0 {
		log.Warn("finalized requests left in progress by a previous run as interrupted", "count", n)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for reason, count := range map[string]func(usage.RetentionStats) uint64{
		"age":  func(s usage.RetentionStats) uint64 { return s.DroppedByAge },
		"size": func(s usage.RetentionStats) uint64 { return s.DroppedBySize },
	} {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "llmgw_usage_records_pruned_total",
			Help:        "Usage records the ledger's retention dropped (oldest first), by the bound that dropped them.",
			ConstLabels: prometheus.Labels{"reason": reason}},
			func() float64 { return float64(count(g.Ledger.RetentionStats())) }))
	}
	registerLedgerHealth(reg, g)
	reg.MustRegister(journalLag)
	var watchCtx context.Context
	watchCtx, g.stopWatch = context.WithCancel(ctx)
	undo = append(undo, g.stopWatch)
	tp, stopTracing, err := telemetry.Setup(ctx, log)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	g.stopTracing = stopTracing
	undo = append(undo, func() { _ = stopTracing(context.Background()) })
	if g.quota, g.closeQuota, err = openQuotaStore(cfg.QuotaStore, log, reg); err != nil {
		return nil, err
	}
	undo = append(undo, func() { _ = g.closeQuota() })
	if g.quota != nil {
		go g.quota.Run(watchCtx)
	}
	g.Server, err = server.New(server.Options{Ledger: g.Ledger, Logger: log, Metrics: server.NewMetrics(reg),
		Credentials: cfg.Source.Credentials(), Peers: cfg.Peers,
		ClientIPRPM: cfg.ClientIPRPM, ClientIPBurst: cfg.ClientIPBurst, TrustedProxies: cfg.TrustedProxies,
		ReadRPM: cfg.ReadRPM, ReadBurst: cfg.ReadBurst, LedgerFailOpen: cfg.LedgerFailOpen,
		MaxBodyBytesInFlight: cfg.MaxBodyBytesInFlight,
		Quota:                g.quotaStore(), Tracer: tp.Tracer(telemetry.TracerName)})
	if err != nil {
		return nil, err
	}
	// Before any request: interrupted requests hand back their quota
	// reservations, and budgets spent this period come back from the ledger.
	if err := g.Server.RecoverQuotas(ctx, g.Ledger.RecoveredIDs()); err != nil {
		log.Warn("quota recovery incomplete; reservations left are released by their ttl", "err", err)
	}
	if e := cfg.Elastic; e != nil {
		go func() {
			if err := e.Discovery.Start(watchCtx); err != nil && watchCtx.Err() == nil {
				log.Error("peer discovery did not start", "err", err)
			}
		}()
		g.resumeHandoff(watchCtx)
	}

	// Listeners first: /healthz answers while the source is still connecting
	// (liveness must not depend on the API server); /readyz and the API stay
	// 503 until a snapshot applies.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", cfg.Addr, err)
	}
	g.Addr = ln.Addr().String()
	g.data = server.HTTPServer(cfg.Addr, g.Server.Handler())
	if cfg.MgmtAddr != "" {
		mln, err := net.Listen("tcp", cfg.MgmtAddr)
		if err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("listening on %s: %w", cfg.MgmtAddr, err)
		}
		g.MgmtAddr = mln.Addr().String()
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.Handle("GET /health", g.Server.ManagementHealthHandler())
		if cfg.PeerToken != "" {
			mux.Handle("GET "+peers.Path, g.unlessHandingOff(g.Server.PeerUsageHandler(cfg.PeerToken)))
			mux.Handle("POST "+peers.RecordsPath, peers.ImportHandler(g.Ledger, cfg.PeerToken, log))
		}
		if !cfg.Profiling.Disabled {
			registerProfiles(mux)
			cfg.Profiling.apply()
		}
		g.mgmt = &http.Server{Addr: cfg.MgmtAddr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { g.errc <- g.mgmt.Serve(mln) }()
	}
	go func() { g.errc <- g.data.Serve(ln) }()
	undo = append(undo, func() {
		_ = g.data.Close()
		if g.mgmt != nil {
			_ = g.mgmt.Close()
		}
	})
	// Before the source: the first snapshot may name a credential that
	// cannot be read yet.
	go g.Server.RetryCredentials(watchCtx)
	if err := cfg.Source.Start(watchCtx, g.Server); err != nil {
		return nil, err
	}
	log.Info("gateway serving", "addr", g.Addr, "mgmt_addr", cfg.MgmtAddr, "snapshot", g.Server.Version())
	return g, nil
}

// Wait serves until ctx is cancelled, then drains in-flight requests (streams
// included) for up to DrainTimeout, hands the records off if this replica is
// being scaled away (Elastic), and closes the ledger after the last record
// is written.
func (g *Gateway) Wait(ctx context.Context) error {
	defer func() { // last: the spans of the last requests
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := g.stopTracing(fctx); err != nil {
			g.log.Warn("spans not all exported at shutdown", "err", err)
		}
	}()
	defer g.Ledger.Close()
	defer func() { _ = g.closeQuota() }() // after the drain: the last settles
	defer g.stopWatch()
	var serveErr error
	select {
	case <-ctx.Done():
	case err := <-g.errc:
		if !errors.Is(err, http.ErrServerClosed) {
			serveErr = fmt.Errorf("serving: %w", err)
		}
	}
	drainCtx, cancel := context.WithTimeout(context.Background(), g.cfg.DrainTimeout)
	defer cancel()
	g.log.Info("gateway draining", "timeout", g.cfg.DrainTimeout.String())
	err := g.data.Shutdown(drainCtx)
	if g.mgmt != nil {
		_ = g.mgmt.Shutdown(drainCtx)
	}
	if err != nil {
		// Streams still open after the drain window are cut; their handlers
		// still finalize their records before the ledger closes.
		_ = g.data.Close()
	}
	g.handOffIfLeaving()
	return serveErr
}
