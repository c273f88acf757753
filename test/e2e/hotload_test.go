package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/llmgw/llmgw/api/gatewaystatus"
	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
	"github.com/llmgw/llmgw/controllers"
	"github.com/llmgw/llmgw/gateway"
	"github.com/llmgw/llmgw/gateway/source"
	"github.com/llmgw/llmgw/mockproviders"
	"github.com/llmgw/llmgw/test/e2e/specs"
	"github.com/llmgw/llmgw/test/testutil"
)

const ns = "llmgw-system"

// key is a generated gateway key: the plaintext for requests, the
// GatewayKey (hash only) for the API server.
type key struct {
	plaintext string
	obj       *v1alpha1.GatewayKey
}

func newKey(name string, models []string, rpm, burst int32) key {
	GinkgoHelper()
	plain, prefix, hash, err := keyformat.Generate()
	Expect(err).NotTo(HaveOccurred())
	return key{plain, &v1alpha1.GatewayKey{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.GatewayKeySpec{KeyHash: hash, KeyPrefix: prefix, Models: models,
			RateLimit: &v1alpha1.RateLimit{RequestsPerMinute: rpm, Burst: burst}}}}
}

// The system on envtest: API server + controller + one gateway in Kubernetes
// mode + both mocks (beta requiring an upstream key from a Secret).
var _ = Describe("llmgw on envtest", Ordered, func() {
	var (
		env       *envtest.Environment
		c         client.Client
		base      string
		logs      testutil.SyncBuffer
		target    *specs.Target
		keyAll    key
		keyLoad   key
		keyTog    key
		keyBudget key
		keys      []key
		aliases   = []string{"chat-alpha", "chat-beta", "e2e-fallback", "embed-alpha"}
		marker    = fmt.Sprintf("zqxprompt%d", time.Now().UnixNano()%1e6)
	)
	const betaUpstream = "beta-e2e-upstream-credential"

	create := func(ctx context.Context, obj client.Object) {
		GinkgoHelper()
		obj.SetNamespace(ns)
		Expect(c.Create(ctx, obj)).To(Succeed(), "create %T %s", obj, obj.GetName())
	}

	BeforeAll(func(ctx SpecContext) {
		By("starting the API server (envtest)")
		env = &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")},
			ErrorIfCRDPathMissing: true}
		cfg, err := env.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(env.Stop)
		scheme, err := controllers.Scheme()
		Expect(err).NotTo(HaveOccurred())
		c, err = client.New(cfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())

		By("starting the mock providers")
		alpha, err := mockproviders.NewHandler(mockproviders.Options{Flavor: mockproviders.Alpha})
		Expect(err).NotTo(HaveOccurred())
		beta, err := mockproviders.NewHandler(mockproviders.Options{Flavor: mockproviders.Beta, RequireKey: betaUpstream})
		Expect(err).NotTo(HaveOccurred())
		as, bs := httptest.NewServer(alpha), httptest.NewServer(beta)
		DeferCleanup(as.Close)
		DeferCleanup(bs.Close)

		By("creating providers, aliases and keys")
		create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "beta-cred"}, Data: map[string][]byte{"apiKey": []byte(betaUpstream)}})
		// Priced as config/samples prices them, so that a budget has
		// something to count (an unpriced route costs nothing).
		create(ctx, &v1alpha1.ProviderEndpoint{ObjectMeta: metav1.ObjectMeta{Name: "alpha"},
			Spec: v1alpha1.ProviderEndpointSpec{Protocol: "openai", URL: as.URL,
				Prices: []v1alpha1.ModelPrice{{Model: "alpha-large", InputPerMillion: "2.5", OutputPerMillion: "10"}}}})
		create(ctx, &v1alpha1.ProviderEndpoint{ObjectMeta: metav1.ObjectMeta{Name: "beta"},
			Spec: v1alpha1.ProviderEndpointSpec{Protocol: "anthropic", URL: bs.URL,
				Credential: &v1alpha1.Credential{SecretRef: v1alpha1.SecretKeyReference{Name: "beta-cred", Key: "apiKey"}},
				Prices:     []v1alpha1.ModelPrice{{Model: "beta-large", InputPerMillion: "3", OutputPerMillion: "15"}}}})
		alphaLarge, betaLarge := v1alpha1.Route{Provider: "alpha", Model: "alpha-large"}, v1alpha1.Route{Provider: "beta", Model: "beta-large"}
		create(ctx, &v1alpha1.ModelAlias{ObjectMeta: metav1.ObjectMeta{Name: "chat-alpha"},
			Spec: v1alpha1.ModelAliasSpec{Primary: alphaLarge, Fallbacks: []v1alpha1.Route{betaLarge}}})
		create(ctx, &v1alpha1.ModelAlias{ObjectMeta: metav1.ObjectMeta{Name: "chat-beta"},
			Spec: v1alpha1.ModelAliasSpec{Primary: betaLarge, Fallbacks: []v1alpha1.Route{alphaLarge}}})
		create(ctx, &v1alpha1.ModelAlias{ObjectMeta: metav1.ObjectMeta{Name: "e2e-fallback"},
			Spec: v1alpha1.ModelAliasSpec{Primary: alphaLarge, Fallbacks: []v1alpha1.Route{betaLarge}, MaxFallbacks: ptr.To[int32](1),
				Timeouts: &v1alpha1.AliasTimeouts{Total: "30s", Attempt: "2s", FirstChunk: "2s", Idle: "10s"}}})
		create(ctx, &v1alpha1.ModelAlias{ObjectMeta: metav1.ObjectMeta{Name: "embed-alpha"},
			Spec: v1alpha1.ModelAliasSpec{Primary: v1alpha1.Route{Provider: "alpha", Model: "alpha-embed"}, MaxFallbacks: ptr.To[int32](0)}})
		all := []string{"*"}
		keyAll = newKey("e2e-all", all, 100000, 10000)
		keyRestricted := newKey("e2e-restricted", []string{"e2e-fallback"}, 100000, 10000)
		keyLimited := newKey("e2e-limited", all, 1, 3)
		keyLoad = newKey("e2e-load", all, 100000, 10000)
		keyTog = newKey("e2e-toggle", all, 100000, 10000)
		// A budget smaller than any request on a priced route may cost.
		keyBudget = newKey("e2e-budget", all, 100000, 10000)
		keyBudget.obj.Spec.Budget = &v1alpha1.Budget{Amount: "0.000001", Currency: "USD", Period: v1alpha1.BudgetMonth}
		keys = []key{keyAll, keyRestricted, keyLimited, keyLoad, keyTog, keyBudget}
		for _, k := range keys {
			create(ctx, k.obj)
		}

		By("starting the controller and a gateway in Kubernetes mode")
		runCtx, cancel := context.WithCancel(context.Background())
		var bg sync.WaitGroup
		DeferCleanup(func() { cancel(); bg.Wait() })
		bg.Add(2)
		go func() {
			defer bg.Done()
			defer GinkgoRecover()
			err := controllers.Run(runCtx, env.Config, controllers.Options{Namespace: ns, MetricsAddr: "0", ProbeAddr: "0",
				Debounce: 200 * time.Millisecond, DebounceMax: time.Second, SkipNameValidation: true}, logr.Discard())
			Expect(err).NotTo(HaveOccurred(), "controller")
		}()
		log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		// The gateway reports the version it runs as the Pod below, which
		// stands for it: no kubelet runs here, so the test says it is ready.
		gatewayPod(ctx, c, gatewayPodName)
		src, err := source.NewKube(source.KubeConfig{Namespace: ns, ConfigMap: snapshot.DefaultConfigMapName, RestConfig: env.Config, Logger: log,
			StatusConfigMap: gatewaystatus.DefaultConfigMapName, PodName: gatewayPodName})
		Expect(err).NotTo(HaveOccurred())
		gw, err := gateway.Start(runCtx, gateway.Config{Addr: "127.0.0.1:0", DBPath: filepath.Join(GinkgoT().TempDir(), "usage.db"),
			DrainTimeout: 2 * time.Second, Source: src, Logger: log})
		Expect(err).NotTo(HaveOccurred())
		go func() {
			defer bg.Done()
			defer GinkgoRecover()
			Expect(gw.Wait(runCtx)).To(Succeed(), "gateway")
		}()
		base = "http://" + gw.Addr

		By("waiting until the gateway serves the initial CRs")
		Eventually(func() int { return specs.Status(ctx, base, keyLoad.plaintext, "chat-alpha", "hi") }).
			WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(20 * time.Millisecond).Should(Equal(http.StatusOK))

		By("every object says Programmed once the gateway has reported the version it runs")
		for _, o := range []client.Object{
			&v1alpha1.ProviderEndpoint{ObjectMeta: metav1.ObjectMeta{Name: "alpha"}}, &v1alpha1.ProviderEndpoint{ObjectMeta: metav1.ObjectMeta{Name: "beta"}},
			&v1alpha1.ModelAlias{ObjectMeta: metav1.ObjectMeta{Name: "chat-alpha"}}, &v1alpha1.ModelAlias{ObjectMeta: metav1.ObjectMeta{Name: "chat-beta"}},
			&v1alpha1.ModelAlias{ObjectMeta: metav1.ObjectMeta{Name: "e2e-fallback"}}, &v1alpha1.ModelAlias{ObjectMeta: metav1.ObjectMeta{Name: "embed-alpha"}},
			keyAll.obj, keyLimited.obj, keyTog.obj,
		} {
			Eventually(conditions(ctx, c, o)).WithTimeout(30*time.Second).WithPolling(50*time.Millisecond).
				Should(Equal("Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs Programmed=True/Programmed Ready=True/Serving"), "%T %s", o, o.GetName())
		}
		var cm corev1.ConfigMap
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: gatewaystatus.DefaultConfigMapName}, &cm)).To(Succeed())
		rep, err := gatewaystatus.Parse(cm.Data[gatewayPodName])
		Expect(err).NotTo(HaveOccurred(), "the gateway's report: %q", cm.Data[gatewayPodName])
		var snapCM corev1.ConfigMap
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: snapshot.DefaultConfigMapName}, &snapCM)).To(Succeed())
		Expect(rep.Version).To(Equal(snapCM.Annotations[controllers.VersionAnnotation]))
		Expect(rep.Refused()).To(BeFalse())

		target = &specs.Target{
			Gateway: base, Replicas: []string{base}, MockAlpha: as.URL, MockBeta: bs.URL,
			KeyAll: keyAll.plaintext, KeyRestricted: keyRestricted.plaintext, KeyLimited: keyLimited.plaintext, LimitedBurst: 3,
			Restricted: []string{"e2e-fallback"},
			AllAliases: func(context.Context) ([]string, error) { return slices.Clone(aliases), nil },
			Fallback:   "e2e-fallback", BetaAlias: "chat-beta", Marker: marker,
		}
	})

	Describe("client contract", Ordered, func() {
		specs.Contract(func() *specs.Target { return target })
	})

	// After the contract, whose usage check wants every record of the key '*' to be one of its requests.
	Describe("agents' traffic", Ordered, func() {
		specs.Agents(func() *specs.AgentsTarget {
			return &specs.AgentsTarget{Gateway: base, MockAlpha: target.MockAlpha, MockBeta: target.MockBeta, Key: keyAll.plaintext,
				AlphaAlias: "chat-alpha", BetaAlias: "chat-beta", EmbedAlias: "embed-alpha", Marker: marker}
		})
	})

	Describe("/v1/messages and /v1/responses through the official SDKs", Ordered, func() {
		specs.Endpoints(func() *specs.EndpointsTarget {
			return &specs.EndpointsTarget{AgentsTarget: specs.AgentsTarget{Gateway: base, MockAlpha: target.MockAlpha, MockBeta: target.MockBeta,
				Key: keyAll.plaintext, AlphaAlias: "chat-alpha", BetaAlias: "chat-beta", EmbedAlias: "embed-alpha", Marker: marker},
				BudgetKey: keyBudget.plaintext}
		})
	})

	Describe("key rotation", Ordered, func() {
		specs.Rotation(func() *specs.RotationTarget {
			return &specs.RotationTarget{Gateway: base, Alias: "chat-alpha", Marker: marker, KeyID: "e2e-rotated",
				CreateKey: func(ctx context.Context, id string) string {
					k := newKey(id, []string{"*"}, 100000, 10000)
					create(ctx, k.obj)
					return k.plaintext
				},
				// What `llmgw keys rotate --from` writes, through the API.
				RotateKey: func(ctx context.Context, id string, grace time.Duration) string {
					plain, prefix, hash, err := keyformat.Generate()
					Expect(err).NotTo(HaveOccurred())
					var gk v1alpha1.GatewayKey
					Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: id}, &gk)).To(Succeed())
					gk.Spec.Previous = &v1alpha1.PreviousKey{KeyHash: gk.Spec.KeyHash, KeyPrefix: gk.Spec.KeyPrefix,
						AcceptedUntil: metav1.NewTime(time.Now().Add(grace))}
					gk.Spec.KeyHash, gk.Spec.KeyPrefix = hash, prefix
					Expect(c.Update(ctx, &gk)).To(Succeed())
					return plain
				},
				RotationShown: func(ctx context.Context, id string) (bool, []string) {
					var gk v1alpha1.GatewayKey
					Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: id}, &gk)).To(Succeed())
					var evs eventsv1.EventList
					Expect(c.List(ctx, &evs, client.InNamespace(ns))).To(Succeed())
					var reasons []string
					for _, e := range evs.Items {
						if e.Regarding.Kind == "GatewayKey" && e.Regarding.Name == id {
							reasons = append(reasons, e.Reason)
						}
					}
					return gk.Status.Rotation != nil && gk.Status.Rotation.InGrace, reasons
				},
			}
		})
	})

	It("hot-loads 20 new ModelAliases and 4 GatewayKey disable/enable changes within 1 s p99, under a paced load that never fails", func(ctx SpecContext) {
		// Paced well below the load key's limit (100,000 rpm ≈ 1,667/s): every
		// request must succeed on any machine, fast or slow.
		load := specs.StartLoad(50, func() int {
			return specs.Status(ctx, base, keyLoad.plaintext, "chat-alpha", marker+" steady")
		})
		loadStopped := false
		defer func() {
			if !loadStopped {
				load.Stop()
			}
		}()
		opts := specs.HotLoadOptions{Replicas: []string{base}, Timeout: 15 * time.Second, Poll: 5 * time.Millisecond}

		var changes []specs.Change
		for i := range 20 {
			name := fmt.Sprintf("hot-%02d", i)
			changes = append(changes, specs.Change{Name: "new ModelAlias " + name,
				Apply: func() error {
					return c.Create(ctx, &v1alpha1.ModelAlias{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
						Spec: v1alpha1.ModelAliasSpec{Primary: v1alpha1.Route{Provider: "beta", Model: "beta-" + name}}})
				},
				Served: func(ctx context.Context, b string) bool { return specs.ServesModel(ctx, b, keyAll.plaintext, name) },
			})
		}
		for i := range 4 {
			disable := i%2 == 0
			want := map[bool]int{true: http.StatusUnauthorized, false: http.StatusOK}[disable]
			changes = append(changes, specs.Change{Name: fmt.Sprintf("GatewayKey e2e-toggle disabled=%v", disable),
				Apply: func() error {
					var k v1alpha1.GatewayKey
					if err := c.Get(ctx, client.ObjectKeyFromObject(keyTog.obj), &k); err != nil {
						return err
					}
					// A merge patch, as kubectl would send: the controller
					// writes statuses in the background, so an Update with
					// the resourceVersion just read could meet a conflict.
					orig := k.DeepCopy()
					k.Spec.Disabled = disable
					return c.Patch(ctx, &k, client.MergeFrom(orig))
				},
				Served: func(ctx context.Context, b string) bool { return specs.ModelsStatus(ctx, b, keyTog.plaintext) == want },
			})
		}
		hl, err := specs.MeasureHotLoad(ctx, changes, opts)
		Expect(err).NotTo(HaveOccurred())

		By("every new alias answers a chat, and a disabled key gets 401 key_disabled on chat")
		for i := range 20 {
			Expect(specs.Status(ctx, base, keyAll.plaintext, fmt.Sprintf("hot-%02d", i), marker+" new")).To(Equal(http.StatusOK))
		}
		var k v1alpha1.GatewayKey
		Expect(c.Get(ctx, client.ObjectKeyFromObject(keyTog.obj), &k)).To(Succeed())
		orig := k.DeepCopy()
		k.Spec.Disabled = true
		Expect(c.Patch(ctx, &k, client.MergeFrom(orig))).To(Succeed())
		Eventually(func() string {
			r, err := specs.RawChat(ctx, base, keyTog.plaintext, "chat-alpha", marker+" disabled", false)
			if err != nil {
				return err.Error()
			}
			return fmt.Sprintf("%d %s", r.Status, r.Err.Code)
		}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(10 * time.Millisecond).Should(Equal("401 key_disabled"))

		statuses := load.Stop()
		loadStopped = true

		By("every new alias and the toggled key say Programmed, reported by the gateway")
		for i := range 20 {
			o := &v1alpha1.ModelAlias{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("hot-%02d", i)}}
			Eventually(conditions(ctx, c, o)).WithTimeout(10*time.Second).WithPolling(50*time.Millisecond).
				Should(ContainSubstring("Programmed=True/Programmed Ready=True/Serving"), o.Name)
		}
		Eventually(conditions(ctx, c, keyTog.obj)).WithTimeout(10 * time.Second).WithPolling(50 * time.Millisecond).
			Should(ContainSubstring("Programmed=True/Programmed Ready=False/Disabled"))
		kubectlGet(env)
		AddReportEntry("hot-load latency (envtest)", hl.String())
		GinkgoWriter.Printf("hot-load on envtest: %s\n%s", hl, hl.Table())
		GinkgoWriter.Printf("steady load (50/s): %s\n", statuses)
		Expect(statuses.Only(http.StatusOK)).To(BeTrue(), "steady load across reloads: %s; want 200 only", statuses)
		Expect(hl.P99()).To(BeNumerically("<=", specs.HotLoadBound), "hot-load p99: %s", hl)
	})

	It("wrote no plaintext key and no prompt text into the gateway's logs", func() {
		out := logs.String()
		Expect(out).NotTo(BeEmpty())
		Expect(keyformat.LooksLikeKey(out)).To(BeFalse(), "a plaintext key in the gateway log")
		for _, k := range keys {
			Expect(strings.Contains(out, k.plaintext)).To(BeFalse(), "key %s in the gateway log", k.obj.Name)
		}
		Expect(out).NotTo(ContainSubstring(marker), "prompt text in the gateway log")
		Expect(out).NotTo(ContainSubstring(betaUpstream), "the upstream credential in the gateway log")
	})
})

const gatewayPodName = "llmgw-gateway-0"

// gatewayPod creates the Pod the in-process gateway reports as, labelled as
// the StatefulSet's are, and marks it ready as the kubelet would.
func gatewayPod(ctx context.Context, c client.Client, name string) {
	GinkgoHelper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}
	Expect(client.IgnoreAlreadyExists(c.Create(ctx, sa))).To(Succeed())
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{"app.kubernetes.io/name": "llmgw", "app.kubernetes.io/component": "gateway"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "gateway", Image: "llmgw"}}}}
	Expect(c.Create(ctx, pod)).To(Succeed())
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "gateway", Ready: true, Image: "llmgw", ImageID: "llmgw",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Now().Add(-time.Second).Truncate(time.Second))}}}}}
	Expect(c.Status().Update(ctx, pod)).To(Succeed())
}

// conditions reads o and lists its conditions, "Type=Status/Reason ...", or
// says that they describe an older generation.
func conditions(ctx context.Context, c client.Client, o client.Object) func() string {
	return func() string {
		o.SetNamespace(ns)
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			return err.Error()
		}
		var conds []metav1.Condition
		switch t := o.(type) {
		case *v1alpha1.ProviderEndpoint:
			conds = t.Status.Conditions
		case *v1alpha1.ModelAlias:
			conds = t.Status.Conditions
		case *v1alpha1.GatewayKey:
			conds = t.Status.Conditions
		}
		var out []string
		for _, cd := range conds {
			if cd.ObservedGeneration != o.GetGeneration() {
				return fmt.Sprintf("%s describes generation %d, not %d", cd.Type, cd.ObservedGeneration, o.GetGeneration())
			}
			out = append(out, fmt.Sprintf("%s=%s/%s", cd.Type, cd.Status, cd.Reason))
		}
		return strings.Join(out, " ")
	}
}

// kubectlGet logs what an operator sees (`kubectl get`), with the kubectl
// built next to the envtest binaries, as evidence for the docs.
func kubectlGet(env *envtest.Environment) {
	GinkgoHelper()
	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		GinkgoWriter.Printf("no kubectl next to the envtest binaries: %v\n", err)
		return
	}
	user, err := env.AddUser(envtest.User{Name: "e2e-admin", Groups: []string{"system:masters"}}, nil)
	Expect(err).NotTo(HaveOccurred())
	kc, err := user.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(os.WriteFile(path, kc, 0o600)).To(Succeed())
	for _, args := range [][]string{{"get", "providerendpoints"}, {"get", "modelaliases"}, {"get", "gatewaykeys", "-o", "wide"}} {
		out, err := exec.Command(kubectl, append(args, "-n", ns, "--kubeconfig", path)...).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "kubectl %v: %s", args, out)
		GinkgoWriter.Printf("kubectl %s -n %s\n%s", strings.Join(args, " "), ns, out)
	}
}
