package gateway

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/llmgw/api/gatewaystatus"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/peers"
	"github.com/llmgw/llmgw/gateway/source"
)

// Main is `llmgw gateway`.
func Main(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	cfg := Config{}
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "data-plane listen address (OpenAI-compatible API, /health)")
	fs.StringVar(&cfg.MgmtAddr, "mgmt-addr", "127.0.0.1:9090", "management listen address serving /metrics, /health and /debug/pprof; empty disables it (never expose it publicly)")
	pprofOn := fs.Bool("pprof", true, "serve Go runtime profiles under /debug/pprof on the management port")
	fs.IntVar(&cfg.Profiling.BlockRate, "profile-block-rate", 0, "turn on the block profile: sample one blocking event per this many nanoseconds blocked (1: every event); 0 leaves it off (it costs time on every blocking event)")
	fs.IntVar(&cfg.Profiling.MutexFraction, "profile-mutex-fraction", 0, "turn on the mutex profile: sample 1 in this many contended lock events; 0 leaves it off")
	file := source.File{}
	fs.StringVar(&file.Path, "snapshot", "", "config snapshot file (JSON); reloaded when it changes (required)")
	fs.DurationVar(&file.Interval, "reload-interval", time.Second, "how often to check the snapshot file for changes")
	fs.StringVar(&cfg.DBPath, "db", "llmgw-usage.db", "SQLite usage ledger file (created if missing)")
	fs.DurationVar(&cfg.Retention.MaxAge, "ledger-max-age", 90*24*time.Hour, "drop usage records older than this, oldest first, in the background; 0 keeps them")
	fs.Int64Var(&cfg.Retention.MaxBytes, "ledger-max-bytes", 512<<20, "drop the oldest usage records while the ledger's live data is larger than this many bytes; 0: no size bound")
	fs.BoolVar(&cfg.LedgerFailOpen, "ledger-fail-open", false, "serve chat requests while the usage ledger cannot commit (disk full, I/O error), counting each lost record in llmgw_usage_unrecorded_requests_total; default: refuse them with 503 usage_store_unavailable and turn /readyz false until a write succeeds")
	fs.StringVar(&file.CredentialsDir, "credentials-dir", "", "standalone: the only directory credential.file references are read from (default: the snapshot file's directory)")
	fs.DurationVar(&cfg.DrainTimeout, "drain-timeout", 30*time.Second, "on SIGTERM, how long in-flight requests and streams may finish")
	level := fs.String("log-level", "info", "log level: debug, info, warn or error")
	kubeMode := fs.Bool("kubernetes", false, "read the snapshot from a ConfigMap through the Kubernetes API (hot reload) instead of --snapshot")
	ks := source.KubeConfig{}
	fs.StringVar(&ks.Namespace, "namespace", envOr("POD_NAMESPACE", snapshot.DefaultNamespace), "with --kubernetes: namespace of the snapshot ConfigMap and provider Secrets (default $POD_NAMESPACE)")
	fs.StringVar(&ks.ConfigMap, "configmap", snapshot.DefaultConfigMapName, "with --kubernetes: name of the snapshot ConfigMap (data key "+snapshot.ConfigMapKey+")")
	fs.DurationVar(&ks.CredentialRefresh, "credential-refresh", 30*time.Second, "with --kubernetes: how often provider credential Secrets are re-read (rotation without restart)")
	fs.StringVar(&ks.Kubeconfig, "kubeconfig", "", "with --kubernetes: kubeconfig path (default $KUBECONFIG, ~/.kube/config, then in-cluster)")
	fs.StringVar(&ks.StatusConfigMap, "status-configmap", gatewaystatus.DefaultConfigMapName, "with --kubernetes: ConfigMap this replica reports the snapshot version it runs into, under its --pod-name (the controller creates it; empty: no report)")
	pc := peers.Config{}
	fs.StringVar(&pc.Service, "peers-service", "", "headless Service of the gateway StatefulSet: GET /v1/usage then merges every replica's records (empty: this replica's only)")
	fs.IntVar(&pc.Replicas, "replicas", 1, "with --peers-service and without --kubernetes (standalone runs): the fixed replica count, replicas 0..N-1 expected; with --kubernetes the replica set is discovered from the StatefulSet and this flag is refused")
	el := elasticFlags{}
	fs.StringVar(&el.statefulSet, "statefulset", "", "with --kubernetes and --peers-service: the gateway StatefulSet whose replicas are the peers, watched (default: --pod-name without its ordinal)")
	fs.StringVar(&el.claimTemplate, "ledger-claim-template", "data", "with --kubernetes and --peers-service: the StatefulSet's volumeClaimTemplate holding the ledger; its claims <template>-<pod> of scaled-away replicas are watched for stranded records")
	fs.DurationVar(&el.timeout, "handoff-timeout", time.Minute, "with --kubernetes and --peers-service: after the drain, how long a replica scaled away may take to hand its usage records to replica 0 (the termination grace period must cover --drain-timeout plus this)")
	fs.StringVar(&pc.Self, "pod-name", envOr("POD_NAME", ""), "this pod's name: with --kubernetes the key it reports under, with --peers-service <statefulset>-<ordinal> (default $POD_NAME, else the hostname)")
	peerTokenFile := fs.String("peer-token-file", "", "file holding the token gateways present to each other on the management port's "+peers.Path+" (required with --peers-service)")
	fs.IntVar(&cfg.ClientIPRPM, "ip-rpm", 600, "per-client-address limit on /v1/*, checked before authentication: requests per minute (token bucket refill); 0 disables")
	fs.IntVar(&cfg.ClientIPBurst, "ip-burst", 100, "per-client-address limit: burst (token bucket capacity); 0 disables")
	trusted := fs.String("trusted-proxies", "", "comma-separated CIDRs of reverse proxies whose X-Forwarded-For names the client (empty: the TCP peer is the client)")
	fs.IntVar(&cfg.ReadRPM, "read-rpm", 60, "per-key limit of GET /v1/usage and GET /v1/models together, a bucket apart from the key's chat bucket: requests per minute, or the key's own rate if larger")
	fs.IntVar(&cfg.ReadBurst, "read-burst", 20, "per-key limit of GET /v1/usage and GET /v1/models: burst, or the key's own burst if larger")
	fs.Int64Var(&cfg.MaxBodyBytesInFlight, "max-body-bytes-in-flight", 0, "request bodies all requests in flight may hold together, in `bytes`; past it 503 gateway_overloaded (0: a quarter of GOMEMLIMIT, or 256 MiB without one)")
	quotaFlags := addQuotaStoreFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: llmgw gateway --snapshot FILE [flags]\n       llmgw gateway --kubernetes [--namespace NS] [--configmap NAME] [flags]\n\nRuns the gateway data plane from a snapshot file (standalone mode) or from the\nsnapshot ConfigMap the controller writes (Kubernetes mode); both reload without a restart.\n\nFlags:")
		fs.PrintDefaults()
	}
	err := fs.Parse(args)
	if err != nil {
		return err
	}
	cfg.Profiling.Disabled = !*pprofOn
	if cfg.TrustedProxies, err = parseCIDRs(*trusted); err != nil {
		return fmt.Errorf("--trusted-proxies: %w", err)
	}
	if cfg.ClientIPRPM < 0 || cfg.ClientIPBurst < 0 || cfg.ReadRPM < 0 || cfg.ReadBurst < 0 || cfg.MaxBodyBytesInFlight < 0 {
		return errors.New("--ip-rpm, --ip-burst, --read-rpm, --read-burst and --max-body-bytes-in-flight must be ≥ 0")
	}
	log, err := NewLogger(*level)
	if err != nil {
		return err
	}
	cfg.Logger = log
	replicasSet := false
	fs.Visit(func(f *flag.Flag) { replicasSet = replicasSet || f.Name == "replicas" })
	var kube *source.Kube
	switch {
	case *kubeMode && file.Path != "":
		return fmt.Errorf("--snapshot and --kubernetes are mutually exclusive")
	case *kubeMode && replicasSet:
		return errors.New("--replicas: with --kubernetes the replica set is discovered from the StatefulSet; remove the flag")
	case *kubeMode:
		ks.Logger = log
		if ks.PodName = pc.Self; ks.PodName == "" {
			ks.PodName, _ = os.Hostname() // "" turns reporting off
		}
		if kube, err = source.NewKube(ks); err != nil {
			return err
		}
		cfg.Source = kube
	case file.Path == "":
		fs.Usage()
		return fmt.Errorf("--snapshot FILE or --kubernetes is required")
	default:
		cfg.Source = file
	}
	if kube != nil && pc.Service != "" {
		if err := el.discover(&cfg, &pc, kube, ks.Namespace); err != nil {
			return err
		}
	}
	if err := configurePeers(&cfg, pc, *peerTokenFile); err != nil {
		return err
	}
	if cfg.Elastic != nil {
		cfg.Elastic.Token = cfg.PeerToken
	}
	if err := quotaFlags.configure(&cfg, pc); err != nil {
		return err
	}
	return Run(ctx, cfg)
}

// parseCIDRs reads a comma-separated list of CIDRs; a bare address is its
// own /32 or /128.
func parseCIDRs(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil {
				return nil, fmt.Errorf("%q is not a CIDR or an address", f)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// NewLogger is the JSON logger on stderr of the gateway and the local stack,
// at level (debug, info, warn or error).
func NewLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

// configurePeers turns the --peers-* flags into cfg.Peers and cfg.PeerToken.
func configurePeers(cfg *Config, pc peers.Config, tokenFile string) error {
	if tokenFile != "" {
		var err error
		if cfg.PeerToken, err = readPeerToken(tokenFile); err != nil {
			return err
		}
	}
	if pc.Service == "" {
		return nil
	}
	if cfg.PeerToken == "" {
		return errors.New("--peers-service needs --peer-token-file")
	}
	_, port, err := net.SplitHostPort(cfg.MgmtAddr)
	if err != nil {
		return fmt.Errorf("--peers-service needs --mgmt-addr host:port: %w", err)
	}
	if pc.Port, err = strconv.Atoi(port); err != nil {
		return fmt.Errorf("--mgmt-addr port: %w", err)
	}
	if pc.Self == "" {
		if pc.Self, err = os.Hostname(); err != nil {
			return fmt.Errorf("--pod-name: %w", err)
		}
	}
	pc.Token = cfg.PeerToken
	set, err := peers.New(pc)
	if err != nil {
		return err
	}
	cfg.Peers = set
	return nil
}
