// Package gateway wires the data plane into the `llmgw gateway` and
// `llmgw up` commands.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/llmgw/llmgw/gateway/server"
	"github.com/llmgw/llmgw/gateway/snapshot"
	"github.com/llmgw/llmgw/gateway/usage"
)

// Config is one gateway process. Exactly one snapshot source is used: the
// Kubernetes ConfigMap when Kube is set, else SnapshotFile.
type Config struct {
	Addr           string // data plane
	MgmtAddr       string // metrics; "" disables
	SnapshotFile   string
	ReloadInterval time.Duration
	Kube           *KubeSource
	DBPath         string
	DrainTimeout   time.Duration
	Logger         *slog.Logger
	// Ready, when set, receives the bound data-plane address once serving.
	Ready func(addr string)
}

// Run serves until ctx is cancelled, then drains in-flight requests (streams
// included) for up to DrainTimeout and closes the ledger after the last
// record is written.
func Run(ctx context.Context, cfg Config) error {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	ledger, err := usage.Open(ctx, cfg.DBPath, usage.Options{Logger: log})
	if err != nil {
		return fmt.Errorf("opening usage ledger: %w", err)
	}
	defer ledger.Close()
	if n := ledger.Recovered(); n > 0 {
		log.Warn("finalized requests left in progress by a previous run as interrupted", "count", n)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var srv *server.Server
	if cfg.Kube != nil {
		srv, err = startKube(watchCtx, cfg.Kube, ledger, log, reg)
	} else {
		srv, err = startFile(watchCtx, cfg, ledger, log, reg)
	}
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Addr, err)
	}
	hs := server.HTTPServer(cfg.Addr, srv.Handler())
	errc := make(chan error, 2)
	go func() { errc <- hs.Serve(ln) }()
	var ms *http.Server
	if cfg.MgmtAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		ms = &http.Server{Addr: cfg.MgmtAddr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		mln, err := net.Listen("tcp", cfg.MgmtAddr)
		if err != nil {
			_ = hs.Close()
			return fmt.Errorf("listening on %s: %w", cfg.MgmtAddr, err)
		}
		go func() { errc <- ms.Serve(mln) }()
	}
	log.Info("gateway serving", "addr", ln.Addr().String(), "mgmt_addr", cfg.MgmtAddr, "snapshot", srv.Version())
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr().String())
	}
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serving: %w", err)
		}
	}
	drainCtx, cancel := context.WithTimeout(context.Background(), cfg.DrainTimeout)
	defer cancel()
	log.Info("gateway draining", "timeout", cfg.DrainTimeout.String())
	err = hs.Shutdown(drainCtx)
	if ms != nil {
		_ = ms.Shutdown(drainCtx)
	}
	if err != nil {
		// Streams still open after the drain window are cut; their handlers
		// still finalize their records before the ledger closes.
		_ = hs.Close()
	}
	return nil
}

// startFile serves a snapshot file: it must be valid at start; later changes
// are polled, and an invalid change keeps the running snapshot.
func startFile(ctx context.Context, cfg Config, ledger *usage.Ledger, log *slog.Logger, reg *prometheus.Registry) (*server.Server, error) {
	srv, err := server.New(server.Options{Ledger: ledger, Logger: log, Metrics: server.NewMetrics(reg),
		Credentials: fileCredentials{baseDir: filepath.Dir(cfg.SnapshotFile)}})
	if err != nil {
		return nil, err
	}
	snap, err := snapshot.LoadFile(cfg.SnapshotFile)
	if err != nil {
		return nil, fmt.Errorf("loading snapshot: %w", err)
	}
	if err := srv.Apply(ctx, snap); err != nil {
		return nil, fmt.Errorf("applying snapshot: %w", err)
	}
	go snapshot.WatchFile(ctx, cfg.SnapshotFile, cfg.ReloadInterval,
		func(s *snapshot.Snapshot) { _ = srv.Apply(ctx, s) },
		func(err error) { srv.ReportReloadError(err) })
	return srv, nil
}
