package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/llmgw/llmgw/gateway/kube"
	"github.com/llmgw/llmgw/gateway/server"
	"github.com/llmgw/llmgw/gateway/snapshot"
	"github.com/llmgw/llmgw/gateway/usage"
)

// KubeSource is the snapshot ConfigMap the gateway watches in Kubernetes mode.
type KubeSource struct {
	Namespace  string
	ConfigMap  string
	Kubeconfig string       // explicit path; empty: $KUBECONFIG, ~/.kube/config, then in-cluster
	RestConfig *rest.Config // when set, used as is (tests)
	// CredentialRefresh is how often provider Secrets are re-read, so that a
	// rotated credential is used without a restart (0: never).
	CredentialRefresh time.Duration
}

func (k *KubeSource) restConfig() (*rest.Config, error) {
	if k.RestConfig != nil {
		return k.RestConfig, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.Kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes client config: %w", err)
	}
	return cfg, nil
}

// startKube serves snapshots from the ConfigMap. The gateway starts serving at
// once (liveness), but stays unready and answers 503 not_ready until the
// first valid snapshot arrives.
func startKube(ctx context.Context, k *KubeSource, ledger *usage.Ledger, log *slog.Logger, reg *prometheus.Registry) (*server.Server, error) {
	rc, err := k.restConfig()
	if err != nil {
		return nil, err
	}
	rc = rest.CopyConfig(rc)
	rc.UserAgent = "llmgw-gateway"
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	srv, err := server.New(server.Options{Ledger: ledger, Logger: log, Metrics: server.NewMetrics(reg),
		Credentials: kube.SecretCredentials{Client: cs, Namespace: k.Namespace}})
	if err != nil {
		return nil, err
	}
	apply := func(s *snapshot.Snapshot) {
		if s.Version == srv.Version() {
			return // a resync or an unrelated metadata change
		}
		_ = srv.Apply(ctx, s) // a rejection is logged and reported by Apply
	}
	if err := kube.Watch(ctx, cs, k.Namespace, k.ConfigMap, apply, srv.ReportReloadError); err != nil {
		return nil, err
	}
	if k.CredentialRefresh > 0 {
		go func() {
			t := time.NewTicker(k.CredentialRefresh)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					_ = srv.Refresh(ctx) // a failure is logged and reported; the old credentials stay
				}
			}
		}()
	}
	if srv.Version() == "" {
		log.Warn("no valid snapshot yet; serving 503 not_ready until one arrives", "namespace", k.Namespace, "configmap", k.ConfigMap)
	}
	return srv, nil
}
