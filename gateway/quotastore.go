package gateway

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmgw/llmgw/gateway/peers"
	"github.com/llmgw/llmgw/gateway/quota"
)

// EnvQuotaStorePassword is read for the quota store's password when
// --quota-store-password-file is not given (a Kubernetes Secret as env).
const EnvQuotaStorePassword = "LLMGW_QUOTA_STORE_PASSWORD"

// QuotaStore is the shared store of quota counters (Redis/Valkey). With no
// URL each replica counts in its own memory.
type QuotaStore struct {
	URL string
	// Password is read from a file or the environment, never a flag.
	Password   string
	FailClosed bool
	Timeout    time.Duration
	// While the store is unreachable each replica enforces every limit
	// divided by ReadyReplicas, the StatefulSet's ready replicas
	// (discovery), or without discovery by Replicas, a fixed count.
	Replicas      int
	ReadyReplicas func(ctx context.Context) int
}

const defaultQuotaTimeout = 500 * time.Millisecond

type quotaStoreFlags struct {
	url, passwordFile string
	failClosed        bool
	timeout           time.Duration
}

func addQuotaStoreFlags(fs *flag.FlagSet) *quotaStoreFlags {
	q := &quotaStoreFlags{}
	fs.StringVar(&q.url, "quota-store", "", "redis://host:port[/db] (or rediss://) of the Redis/Valkey that all replicas share their per-key request, token and budget counters in; empty: each replica counts in its own memory. No password in the URL: see --quota-store-password-file")
	fs.StringVar(&q.passwordFile, "quota-store-password-file", "", "file holding the quota store's password (default: $"+EnvQuotaStorePassword+", else none)")
	fs.BoolVar(&q.failClosed, "quota-store-fail-closed", false, "while the quota store is unreachable, refuse requests of keys with limits (503 quota_store_unavailable) instead of counting locally with each limit divided by the ready replicas")
	fs.DurationVar(&q.timeout, "quota-store-timeout", defaultQuotaTimeout, "how long one quota store call may take before the store counts as unreachable")
	return q
}

// configure fills cfg.QuotaStore; the divisor while the store is away is
// the ready replicas of cfg.Elastic's discovery, else pc's fixed count.
func (q *quotaStoreFlags) configure(cfg *Config, pc peers.Config) error {
	if q.url == "" {
		if q.passwordFile != "" || q.failClosed {
			return errors.New("--quota-store-password-file and --quota-store-fail-closed need --quota-store")
		}
		return nil
	}
	if err := quota.CheckRedisURL(q.url); err != nil {
		return fmt.Errorf("--quota-store: %w", err)
	}
	if q.timeout <= 0 {
		return errors.New("--quota-store-timeout must be positive")
	}
	qs := QuotaStore{URL: q.url, FailClosed: q.failClosed, Timeout: q.timeout, Replicas: max(pc.Replicas, 1)}
	if q.passwordFile != "" {
		b, err := os.ReadFile(q.passwordFile)
		if err != nil {
			return fmt.Errorf("--quota-store-password-file: %w", err)
		}
		if qs.Password = strings.TrimRight(string(b), "\r\n"); qs.Password == "" {
			return fmt.Errorf("--quota-store-password-file %s is empty", q.passwordFile)
		}
	} else {
		qs.Password = os.Getenv(EnvQuotaStorePassword)
	}
	if cfg.Elastic != nil {
		qs.Replicas = 1 // until the StatefulSet is read, moments after start
		qs.ReadyReplicas = readyFromDiscovery(cfg.Elastic.Discovery)
	}
	cfg.QuotaStore = qs
	return nil
}

// openQuotaStore connects the shared store (lazily: an unreachable store at
// start is an outage like any other, not a reason to stay down) and
// registers its metrics; nil when none is configured.
func openQuotaStore(qs QuotaStore, log *slog.Logger, reg prometheus.Registerer) (*quota.Failover, func() error, error) {
	if qs.URL == "" {
		return nil, func() error { return nil }, nil
	}
	r, err := quota.NewRedis(quota.RedisOptions{URL: qs.URL, Password: qs.Password, Timeout: qs.Timeout})
	if err != nil {
		return nil, nil, fmt.Errorf("--quota-store: %w", err)
	}
	f := quota.NewFailover(quota.FailoverOptions{Shared: r, NewLocal: func() quota.Store { return quota.NewMemory() },
		ReadyReplicas: qs.ReadyReplicas, Replicas: qs.Replicas, FailClosed: qs.FailClosed, Logger: log,
		ProbeTimeout: max(qs.Timeout, time.Second)})
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "llmgw_quota_store_degraded",
			Help: "1 while the shared quota store is unreachable and this replica counts limits locally (each divided by llmgw_quota_store_divisor) or, fail-closed, refuses requests with limits; 0 while limits are shared."},
			func() float64 {
				if f.Health().Degraded {
					return 1
				}
				return 0
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "llmgw_quota_store_divisor",
			Help: "What each limit is divided by while the quota store is unreachable: the ready gateway replicas."},
			func() float64 { return float64(f.Health().Divisor) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "llmgw_quota_store_transitions_total",
			Help: "Changes between shared and degraded quota counting since the process started."},
			func() float64 { return float64(f.Health().Transitions) }),
	)
	log.Info("quota store configured: limits shared across replicas", "store", quota.RedactURL(qs.URL),
		"fail_closed", qs.FailClosed)
	return f, r.Close, nil
}

// quotaStore is the store the server counts in: the shared store's failover,
// or nil (the server's own memory store).
func (g *Gateway) quotaStore() quota.Store {
	if g.quota == nil {
		return nil // not a typed nil in the interface
	}
	return g.quota
}
