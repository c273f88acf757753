package controllers

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/llmgw/llmgw/api/gatewaystatus"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// Options configure the controller; Main fills them from flags, tests directly.
type Options struct {
	// Namespace is the controller's own: the snapshot, the leader Lease and
	// the ProviderEndpoints live there.
	Namespace string
	// WatchNamespaces are more namespaces whose ModelAliases, GatewayKeys
	// and BudgetGroups are compiled (keys in team namespaces, say).
	WatchNamespaces  []string
	ConfigMapName    string
	LeaderElect      bool
	LeaderElectionID string
	MetricsAddr      string
	// MetricsInsecure serves /metrics as plain HTTP without authentication
	// (local runs only); by default it is HTTPS, and a caller needs a token
	// the API server authorizes for GET /metrics (TokenReview +
	// SubjectAccessReview, as kubebuilder scaffolds).
	MetricsInsecure bool
	// Limits go into every snapshot (zero fields: the snapshot's defaults).
	Limits             snapshot.Limits
	ProbeAddr          string
	Debounce           time.Duration
	DebounceMax        time.Duration
	LeaseDuration      time.Duration
	RenewDeadline      time.Duration
	RetryPeriod        time.Duration
	SkipNameValidation bool // tests start several managers in one process
	// GatewaySelector is the label selector of the gateway Pods whose
	// reports decide Programmed ("": DefaultGatewaySelector).
	GatewaySelector string
	// GatewayStatusConfigMap is where the gateways report ("":
	// gatewaystatus.DefaultConfigMapName).
	GatewayStatusConfigMap string
	// KubeAPIQPS and KubeAPIBurst bound the manager's client (reads and the
	// snapshot's writes); StatusQPS, StatusBurst and StatusWorkers bound the
	// status writer, which has a client of its own (statuswriter.go). 0
	// takes the Default* values.
	KubeAPIQPS    float64
	KubeAPIBurst  int
	StatusQPS     float64
	StatusBurst   int
	StatusWorkers int
	// ShardBytes is the uncompressed JSON one key shard of the snapshot
	// aims at (0: the snapshot package's default); tests make it small.
	ShardBytes int
	// KeyExpiryWarning is how long before its expiresAt a GatewayKey gets
	// the ExpiringSoon condition and a KeyExpiringSoon Event; 0 turns the
	// warning off. Main defaults it to DefaultKeyExpiryWarning.
	KeyExpiryWarning time.Duration
	// OwnerLabels are label keys copied from each GatewayKey's and
	// BudgetGroup's labels into the snapshot, and from there onto every
	// usage record of the key (owners.go).
	OwnerLabels []string
}

// Client rates: the status writer may use more than the manager because it
// is what grows with the number of objects (one patch per changed status),
// and it runs apart so that it never holds up a snapshot write.
const (
	DefaultKubeAPIQPS    = 50
	DefaultKubeAPIBurst  = 100
	DefaultStatusQPS     = 100
	DefaultStatusBurst   = 200
	DefaultStatusWorkers = 8
)

// DefaultLeaderElectionID is the Lease the role in config/rbac allows.
const DefaultLeaderElectionID = "llmgw-controller-leader"

// Main is `llmgw controller`: it runs until ctx is cancelled.
func Main(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("llmgw controller", flag.ContinueOnError)
	o := Options{}
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig `file` (default: in-cluster, or $KUBECONFIG)")
	fs.StringVar(&o.Namespace, "namespace", envOr("POD_NAMESPACE", snapshot.DefaultNamespace), "`namespace` whose objects are compiled and where the snapshot ConfigMap lives ($POD_NAMESPACE when set)")
	fs.Func("watch-namespaces", "comma-separated `namespaces` besides --namespace whose ModelAliases, GatewayKeys and BudgetGroups are compiled too (ProviderEndpoints only in --namespace); the controller needs a Role in each", func(v string) error {
		o.WatchNamespaces = append(o.WatchNamespaces, strings.Split(v, ",")...)
		return nil
	})
	fs.StringVar(&o.ConfigMapName, "configmap", snapshot.DefaultConfigMapName, "`name` of the snapshot ConfigMap")
	fs.BoolVar(&o.LeaderElect, "leader-elect", true, "hold a Lease so that only one replica writes")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", DefaultLeaderElectionID, "`name` of the leader-election Lease")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8443", "`address` of the Prometheus /metrics endpoint (0 disables)")
	fs.BoolVar(&o.MetricsInsecure, "metrics-insecure", false, "serve /metrics as plain HTTP without authentication (local runs only; default: HTTPS with Kubernetes authn/authz)")
	fs.Int64Var(&o.Limits.MaxBodyBytes, "max-body-bytes", 0, "gateways' limit on a chat request body, in `bytes` (0: the snapshot default)")
	fs.IntVar(&o.Limits.MaxMessages, "max-messages", 0, "gateways' limit on `messages` in one request (0: the snapshot default)")
	fs.IntVar(&o.Limits.MaxContentChars, "max-content-chars", 0, "gateways' limit on the `characters` of all message contents of one request (0: the snapshot default)")
	fs.IntVar(&o.Limits.MaxConcurrent, "max-concurrent", 0, "chat requests one gateway replica serves at once; more get 503 (`n`, 0: the snapshot default)")
	fs.IntVar(&o.Limits.DefaultMaxTokens, "default-max-tokens", 0, "output `tokens` a chat request without max_tokens reserves against token limits and budgets (0: the snapshot default, 4096)")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "`address` of /healthz and /readyz")
	fs.DurationVar(&o.Debounce, "debounce", 100*time.Millisecond, "quiet `period` after the last change before compiling")
	fs.DurationVar(&o.DebounceMax, "debounce-max", time.Second, "longest `wait` for a quiet period under a stream of changes")
	fs.StringVar(&o.GatewaySelector, "gateway-selector", DefaultGatewaySelector, "label `selector` of the gateway Pods whose reported snapshot version decides the Programmed condition")
	fs.StringVar(&o.GatewayStatusConfigMap, "gateway-status-configmap", gatewaystatus.DefaultConfigMapName, "`name` of the ConfigMap the gateways report the snapshot version they run into (the controller creates it)")
	fs.Float64Var(&o.KubeAPIQPS, "kube-api-qps", DefaultKubeAPIQPS, "sustained `requests per second` of the controller's API client (reads, snapshot writes)")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", DefaultKubeAPIBurst, "`requests` the controller's API client may send in a burst")
	fs.Float64Var(&o.StatusQPS, "status-qps", DefaultStatusQPS, "sustained status patches per `second` (a client of their own, so a backlog never delays a snapshot write)")
	fs.IntVar(&o.StatusBurst, "status-burst", DefaultStatusBurst, "status `patches` in a burst")
	fs.IntVar(&o.StatusWorkers, "status-workers", DefaultStatusWorkers, "status patches in flight at once (`n`; never two for one object)")
	fs.DurationVar(&o.KeyExpiryWarning, "key-expiry-warning", DefaultKeyExpiryWarning, "how long before its spec.expiresAt a GatewayKey gets the ExpiringSoon condition and a KeyExpiringSoon Event (`duration`; 0 turns the warning off)")
	fs.Func("owner-labels", "comma-separated label `keys` copied from each GatewayKey's and BudgetGroup's labels onto its usage records (owners), e.g. team,example.com/cost-center", func(v string) error {
		o.OwnerLabels = append(o.OwnerLabels, strings.Split(v, ",")...)
		return nil
	})
	logJSON := fs.Bool("log-json", false, "log JSON lines instead of text")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	// Checked before anything else, so a typo is reported as such and not
	// behind a cluster connection error (NewManager checks them again).
	if err := checkKeyOptions(&o); err != nil {
		return err
	}

	var h slog.Handler = slog.NewTextHandler(os.Stderr, nil)
	if *logJSON {
		h = slog.NewJSONHandler(os.Stderr, nil)
	}
	log := logr.FromSlogHandler(h)
	ctrl.SetLogger(log)
	klog.SetLogger(log)

	cfg, err := restConfig(*kubeconfig)
	if err != nil {
		return err
	}
	return Run(ctx, cfg, o, log)
}

// withRate is a copy of cfg whose client-side rate limit is qps/burst (or
// the defaults for 0).
func withRate(cfg *rest.Config, qps, defQPS float64, burst, defBurst int) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = float32(cmp.Or(qps, defQPS)), cmp.Or(burst, defBurst)
	return c
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func restConfig(path string) (*rest.Config, error) {
	if path != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
		}
		return cfg, nil
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("finding cluster config: %w", err)
	}
	return cfg, nil
}

// Scheme holds every kind the controller reads or writes.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("registering client-go types: %w", err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("registering llmgw.dev types: %w", err)
	}
	return s, nil
}

// NewManager builds the manager and registers the reconciler, without
// starting anything.
func NewManager(cfg *rest.Config, o Options, log logr.Logger) (ctrl.Manager, *Reconciler, error) {
	if o.Namespace == "" {
		return nil, nil, errors.New("a namespace is required")
	}
	watched, err := WatchedNamespaces(o.Namespace, o.WatchNamespaces)
	if err != nil {
		return nil, nil, err
	}
	if err := checkKeyOptions(&o); err != nil {
		return nil, nil, err
	}
	home := map[string]cache.Config{o.Namespace: {}}
	all := make(map[string]cache.Config, len(watched))
	for _, ns := range watched {
		all[ns] = cache.Config{}
	}
	if o.ConfigMapName == "" {
		o.ConfigMapName = snapshot.DefaultConfigMapName
	}
	if o.LeaderElectionID == "" {
		o.LeaderElectionID = DefaultLeaderElectionID
	}
	o.GatewaySelector = cmp.Or(o.GatewaySelector, DefaultGatewaySelector)
	o.GatewayStatusConfigMap = cmp.Or(o.GatewayStatusConfigMap, gatewaystatus.DefaultConfigMapName)
	gatewaySelector, err := labels.Parse(o.GatewaySelector)
	if err != nil {
		return nil, nil, fmt.Errorf("gateway selector %q: %w", o.GatewaySelector, err)
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, nil, err
	}
	mopts := ctrl.Options{
		Scheme: scheme,
		Logger: log,
		// Namespace-scoped everything: the Roles grant nothing cluster-wide.
		// The four kinds are watched in every watched namespace; what they
		// reference, and the gateways, only in the controller's own.
		Cache: cache.Options{
			DefaultNamespaces: all,
			DefaultTransform:  trimForCache,
			ByObject: map[client.Object]cache.ByObject{
				// The snapshot's head and parts (metadata only: the watch is
				// there to repair edits and deletions, publish reads uncached).
				&corev1.ConfigMap{}: {Namespaces: home, Label: snapshotSelector(o.ConfigMapName)},
				// Only names and data keys are kept: credential values (and the
				// last-applied annotation that would repeat them) never sit in
				// this process's memory.
				&corev1.Secret{}: {Namespaces: home, Transform: stripSecret},
				// Only names and port numbers: whether a ProviderEndpoint's
				// spec.service exists with its port (servicerefs.go).
				&corev1.Service{}: {Namespaces: home, Transform: stripService},
				// Only the gateway Pods: whether each is ready decides Programmed.
				&corev1.Pod{}: {Namespaces: home, Label: gatewaySelector},
			},
		},
		Metrics:                       metricsOptions(o),
		HealthProbeBindAddress:        o.ProbeAddr,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionNamespace:       o.Namespace,
		LeaderElectionReleaseOnCancel: true,
	}
	if o.LeaseDuration > 0 {
		mopts.LeaseDuration, mopts.RenewDeadline, mopts.RetryPeriod = &o.LeaseDuration, &o.RenewDeadline, &o.RetryPeriod
	}
	if o.SkipNameValidation {
		t := true
		mopts.Controller.SkipNameValidation = &t
	}
	mgr, err := ctrl.NewManager(withRate(cfg, o.KubeAPIQPS, DefaultKubeAPIQPS, o.KubeAPIBurst, DefaultKubeAPIBurst), mopts)
	if err != nil {
		return nil, nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, nil, fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, nil, fmt.Errorf("adding ready check: %w", err)
	}
	r := &Reconciler{
		Client:          mgr.GetClient(),
		APIReader:       mgr.GetAPIReader(),
		Namespace:       o.Namespace,
		WatchNamespaces: watched[1:],
		ConfigMapName:   o.ConfigMapName,
		Limits:          o.Limits,
		Debounce:        o.Debounce,
		DebounceMax:     max(o.DebounceMax, o.Debounce),
		Log:             log.WithName("snapshot"),
		Recorder:        mgr.GetEventRecorder(FieldOwner),
		ExpiryWarning:   o.KeyExpiryWarning,
		OwnerLabels:     o.OwnerLabels,
	}
	r.delivery.ShardBytes = o.ShardBytes
	statusClient, err := client.New(withRate(cfg, o.StatusQPS, DefaultStatusQPS, o.StatusBurst, DefaultStatusBurst), client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, fmt.Errorf("creating the status client: %w", err)
	}
	r.statuses = newStatusWriter(statusClient, cmp.Or(o.StatusWorkers, DefaultStatusWorkers), log.WithName("status"))
	if err := mgr.Add(r.statuses); err != nil {
		return nil, nil, fmt.Errorf("adding the status writer: %w", err)
	}
	if r.Gateways, err = newGatewayWatch(mgr, o.Namespace, o.GatewayStatusConfigMap, o.GatewaySelector, log.WithName("gateways")); err != nil {
		return nil, nil, err
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, nil, fmt.Errorf("setting up reconciler: %w", err)
	}
	return mgr, r, nil
}

// checkKeyOptions checks --owner-labels (normalizing o.OwnerLabels, as
// OwnerLabelKeys does) and --key-expiry-warning.
func checkKeyOptions(o *Options) error {
	labels, err := OwnerLabelKeys(o.OwnerLabels)
	if err != nil {
		return fmt.Errorf("--owner-labels: %w", err)
	}
	o.OwnerLabels = labels
	if o.KeyExpiryWarning < 0 {
		return fmt.Errorf("--key-expiry-warning: %s is negative (0 turns the warning off)", o.KeyExpiryWarning)
	}
	return nil
}

// Run starts the manager and blocks until ctx is cancelled.
func Run(ctx context.Context, cfg *rest.Config, o Options, log logr.Logger) error {
	mgr, _, err := NewManager(cfg, o, log)
	if err != nil {
		return err
	}
	log.Info("starting controller", "namespace", o.Namespace, "watchNamespaces", o.WatchNamespaces, "configMap", o.ConfigMapName, "leaderElect", o.LeaderElect,
		"keyExpiryWarning", o.KeyExpiryWarning.String(), "ownerLabels", o.OwnerLabels)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// metricsOptions serves /metrics over HTTPS (a self-signed certificate the
// scraper does not pin) behind the API server's authentication and
// authorization, as kubebuilder scaffolds: the pod network is not a trust
// boundary, and the metrics name every object the controller compiles.
func metricsOptions(o Options) metricsserver.Options {
	if o.MetricsInsecure {
		return metricsserver.Options{BindAddress: o.MetricsAddr}
	}
	return metricsserver.Options{
		BindAddress:    o.MetricsAddr,
		SecureServing:  true,
		FilterProvider: metricsAuthFilter,
	}
}

func stripSecret(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil // a tombstone on delete: nothing to strip
	}
	out := &corev1.Secret{
		TypeMeta:   s.TypeMeta,
		ObjectMeta: identityOnly(&s.ObjectMeta),
		Type:       s.Type,
		Data:       make(map[string][]byte, len(s.Data)),
	}
	for k, v := range s.Data {
		if len(v) > 0 {
			out.Data[k] = secretValuePresent
		} else {
			out.Data[k] = nil
		}
	}
	return out, nil
}

// secretValuePresent stands in for every non-empty value in the cache: the
// controller must tell an empty credential from a set one (ResolvedRefs, and
// a Secret fixed after the fact recompiles), never what it is.
var secretValuePresent = []byte{1}
