package source

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/server"
)

// KubeConfig is the snapshot ConfigMap the gateway watches in Kubernetes mode.
type KubeConfig struct {
	Namespace  string
	ConfigMap  string
	Kubeconfig string       // explicit path; empty: $KUBECONFIG, ~/.kube/config, then in-cluster
	RestConfig *rest.Config // when set, used as is (tests)
	// CredentialRefresh is how often provider Secrets are re-read, so that a
	// rotated credential is used without a restart (0: never).
	CredentialRefresh time.Duration
	Logger            *slog.Logger
	// PartWait is how long the head may name parts that are missing or
	// damaged before the gateway reports it (0: 30 s).
	PartWait time.Duration
	// StatusConfigMap and PodName: where this replica reports the snapshot
	// version it runs (report.go); either empty turns reporting off.
	StatusConfigMap string
	PodName         string
}

// Kube watches the snapshot ConfigMap through the API — not a mounted file,
// whose kubelet sync can take a minute — and reads provider credentials from
// Secrets in the same namespace.
type Kube struct {
	cfg    KubeConfig
	client kubernetes.Interface
	log    *slog.Logger
}

// NewKube connects to the API server (no request is made yet).
func NewKube(cfg KubeConfig) (*Kube, error) {
	cs, err := newClient(cfg.RestConfig, cfg.Kubeconfig)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Kube{cfg: cfg, client: cs, log: log}, nil
}

// NewClient is an API client from the kubeconfig at path (empty:
// $KUBECONFIG, ~/.kube/config, then in-cluster), as the gateway makes it.
func NewClient(path string) (kubernetes.Interface, error) { return newClient(nil, path) }

func newClient(rc *rest.Config, path string) (kubernetes.Interface, error) {
	if rc == nil {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = path
		var err error
		rc, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("kubernetes client config: %w", err)
		}
	}
	rc = rest.CopyConfig(rc)
	rc.UserAgent = "llmgw-gateway"
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return cs, nil
}

// Client is the API client the source reads through, for the gateway's
// other watches (peer discovery).
func (k *Kube) Client() kubernetes.Interface { return k.client }

// Credentials reads `credential.secretName/secretKey` references.
func (k *Kube) Credentials() server.CredentialSource {
	return SecretCredentials{Client: k.client, Namespace: k.cfg.Namespace}
}

// Start starts the ConfigMap informer and returns at once: the API server may
// be unreachable for a while, and the process must serve its liveness probe
// meanwhile. Until a valid snapshot applies, the sink answers 503 not_ready.
func (k *Kube) Start(ctx context.Context, sink Sink) error {
	sink = k.reporting(ctx, sink)
	go func() {
		if err := watchParts(ctx, k.client, k.cfg.Namespace, k.cfg.ConfigMap, func(s *snapshot.Snapshot) { _ = applySealed(ctx, sink, s) }, sink.ReportReloadError,
			k.log, k.cfg.PartWait); err != nil {
			return // ctx ended before the first sync
		}
		if sink.Version() == "" {
			k.log.Warn("no valid snapshot yet; serving 503 not_ready until one arrives", "namespace", k.cfg.Namespace, "configmap", k.cfg.ConfigMap)
		}
	}()
	go k.maintain(ctx, sink)
	return nil
}

// maintain re-reads the running snapshot's credentials every
// CredentialRefresh, so that a rotated Secret is used without a restart. A
// refused snapshot is not retried here: a refusal is the snapshot's own
// validation, which a retry cannot change, and a credential that cannot be
// read yet no longer refuses anything (the server marks that provider
// unavailable and retries it itself: server.RetryCredentials).
func (k *Kube) maintain(ctx context.Context, sink Sink) {
	if k.cfg.CredentialRefresh <= 0 {
		return
	}
	t := time.NewTicker(k.cfg.CredentialRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = sink.Refresh(ctx) // unreadable credentials are logged and reported; the last good ones stay
		}
	}
}
