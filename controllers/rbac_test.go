package controllers

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/llmgw/llmgw/api/gatewaystatus"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// RBAC: the controller and the gateway run as their ServiceAccounts
// (impersonated) with exactly the Roles in config/rbac. Sufficient: the
// controller does its whole job, logging no "forbidden". Minimal: requests
// just outside the Roles are denied.

const rbacNS = "llmgw-system"

func impersonate(sa string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + rbacNS + ":" + sa,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + rbacNS, "system:authenticated"},
	}
	return c
}

// errorLog records every error the manager logs.
type errorLog struct {
	mu   sync.Mutex
	msgs []string
}

func (e *errorLog) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		GinkgoWriter.Println(prefix, args)
		e.mu.Lock()
		defer e.mu.Unlock()
		e.msgs = append(e.msgs, prefix+" "+args)
	}, funcr.Options{Verbosity: 1})
}

func (e *errorLog) matching(s string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, m := range e.msgs {
		if strings.Contains(strings.ToLower(m), s) {
			out = append(out, m)
		}
	}
	return out
}

func forbidden(err error) bool { return apierrors.IsForbidden(err) }

var _ = Describe("RBAC from config/rbac", Ordered, func() {
	var controllerClient, gatewayClient client.Client

	BeforeAll(func() {
		Expect(k8sClient.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rbacNS}})).To(Succeed())
		Expect(k8sClient.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}})).To(Succeed())
		paths, err := filepath.Glob(filepath.Join("..", "config", "rbac", "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		for _, p := range paths {
			if filepath.Base(p) == "kustomization.yaml" {
				continue
			}
			apply(k8sClient, filesYAML(p), "")
		}
		scheme, err := Scheme()
		Expect(err).NotTo(HaveOccurred())
		controllerClient, err = client.New(impersonate("llmgw-controller"), client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		gatewayClient, err = client.New(impersonate("llmgw-gateway"), client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		// Something for the denials below to be denied on.
		Expect(k8sClient.Create(suiteCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: rbacNS, Name: "unrelated"}})).To(Succeed())
	})

	It("lets the controller do its whole job as its ServiceAccount, with leader election", func() {
		var errs errorLog
		o := Options{
			Namespace: rbacNS, LeaderElect: true, MetricsAddr: "0",
			Debounce: 50 * time.Millisecond, DebounceMax: 500 * time.Millisecond,
			LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
			SkipNameValidation: true,
		}
		r, stop := startManagerLogging(impersonate("llmgw-controller"), o, errs.logger())
		defer stop()

		apply(k8sClient, samplesYAML()+`
---
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: vendor}
spec:
  protocol: openai
  url: https://api.vendor.example
  credential: {secretRef: {name: vendor-key, key: apiKey}}
---
apiVersion: v1
kind: Secret
metadata: {name: vendor-key}
stringData: {apiKey: sk-test}`, rbacNS)
		Eventually(func() []string { return aliasNames(published(rbacNS)) }, eventually).
			Should(Equal([]string{"chat-alpha", "chat-beta", "chat-restricted", "embed-alpha"}))
		Eventually(providerReady(rbacNS, "vendor"), eventually).Should(Equal(inSnapshot))
		for _, n := range []string{"chat-alpha", "chat-beta", "chat-restricted"} {
			Eventually(aliasReady(rbacNS, n), eventually).Should(Equal(inSnapshot))
		}
		Eventually(keyReady(rbacNS, "team-a"), eventually).Should(Equal(inSnapshot))
		Expect(r.Writes()).To(BeNumerically(">=", 1))

		var lease coordinationv1.Lease
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: rbacNS, Name: DefaultLeaderElectionID}, &lease)).To(Succeed())
		Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
		// Leader election announces itself with an Event: the reason the Role
		// may create events.
		Eventually(func() []string {
			var evs corev1.EventList
			Expect(k8sClient.List(suiteCtx, &evs, client.InNamespace(rbacNS))).To(Succeed())
			var reasons []string
			for _, e := range evs.Items {
				reasons = append(reasons, e.Reason)
			}
			return reasons
		}, eventually).Should(ContainElement("LeaderElection"))
		// Condition transitions are events.k8s.io Events: no gateway runs
		// here, so every object says NoGateways.
		Eventually(func() []string {
			var evs eventsv1.EventList
			Expect(k8sClient.List(suiteCtx, &evs, client.InNamespace(rbacNS))).To(Succeed())
			var reasons []string
			for _, e := range evs.Items {
				if e.ReportingController == FieldOwner {
					reasons = append(reasons, e.Regarding.Kind+"/"+e.Reason)
				}
			}
			return reasons
		}, eventually).Should(ContainElement("ModelAlias/NoGateways"))

		By("creating the ConfigMap the gateways report into")
		Eventually(func() error {
			return k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: rbacNS, Name: gatewaystatus.DefaultConfigMapName}, &corev1.ConfigMap{})
		}, eventually).Should(Succeed())

		By("repairing a deleted ConfigMap (create) and an edited one (update)")
		Expect(k8sClient.Delete(suiteCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: rbacNS, Name: snapshot.DefaultConfigMapName}})).To(Succeed())
		Eventually(func() bool { return published(rbacNS).Version != "" }, eventually).Should(BeTrue())

		Expect(errs.matching("forbidden")).To(BeEmpty())
	})

	It("denies the controller everything outside its Role", func() {
		c := controllerClient
		ctx := suiteCtx
		// Listing, watching and deleting the namespace's ConfigMaps is in the
		// Role: the snapshot's parts are found by label and named by their
		// content hash, which resourceNames cannot pin.
		denied := map[string]error{
			"get another ConfigMap":       c.Get(ctx, client.ObjectKey{Namespace: rbacNS, Name: "unrelated"}, &corev1.ConfigMap{}),
			"update another ConfigMap":    c.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: rbacNS, Name: "unrelated"}}),
			"get a Secret":                c.Get(ctx, client.ObjectKey{Namespace: rbacNS, Name: "vendor-key"}, &corev1.Secret{}),
			"create a Secret":             c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: rbacNS, Name: "x"}}),
			"update a CR spec":            c.Update(ctx, &v1alpha1.GatewayKey{ObjectMeta: metav1.ObjectMeta{Namespace: rbacNS, Name: "team-a"}}),
			"delete a CR":                 c.Delete(ctx, &v1alpha1.ModelAlias{ObjectMeta: metav1.ObjectMeta{Namespace: rbacNS, Name: "chat-alpha"}}),
			"create a CR":                 c.Create(ctx, &v1alpha1.ModelAlias{ObjectMeta: metav1.ObjectMeta{Namespace: rbacNS, Name: "new"}}),
			"list CRs in another ns":      c.List(ctx, &v1alpha1.ModelAliasList{}, client.InNamespace("elsewhere")),
			"list CRs cluster-wide":       c.List(ctx, &v1alpha1.ModelAliasList{}),
			"get a Pod":                   c.Get(ctx, client.ObjectKey{Namespace: rbacNS, Name: "x"}, &corev1.Pod{}),
			"get a Service":               c.Get(ctx, client.ObjectKey{Namespace: rbacNS, Name: "mock-alpha"}, &corev1.Service{}),
			"create a Service":            c.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: rbacNS, Name: "x"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}),
			"delete a Service":            c.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: rbacNS, Name: "mock-alpha"}}),
			"list Services elsewhere":     c.List(ctx, &corev1.ServiceList{}, client.InNamespace("elsewhere")),
			"list Pods elsewhere":         c.List(ctx, &corev1.PodList{}, client.InNamespace("elsewhere")),
			"update the gateway status":   c.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: rbacNS, Name: gatewaystatus.DefaultConfigMapName}}),
			"update another Lease":        c.Update(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: rbacNS, Name: "other"}}),
			"create a snapshot elsewhere": c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: snapshot.DefaultConfigMapName}}),
		}
		for what, err := range denied {
			Expect(forbidden(err)).To(BeTrue(), "%s: want Forbidden, got %v", what, err)
		}
	})

	It("lets the controller list and watch the namespace's Services, which its ProviderEndpoints may name", func(ctx SpecContext) {
		cs, err := kubernetes.NewForConfig(impersonate("llmgw-controller"))
		Expect(err).NotTo(HaveOccurred())
		var l corev1.ServiceList
		Expect(controllerClient.List(ctx, &l, client.InNamespace(rbacNS))).To(Succeed())
		Expect(l.Items).NotTo(BeEmpty(), "the samples' mock Services")
		w, err := cs.CoreV1().Services(rbacNS).Watch(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		w.Stop()
	})

	It("lets the gateway watch its one ConfigMap, get Secrets and report into its status ConfigMap, and nothing else", func() {
		cs, err := kubernetes.NewForConfig(impersonate("llmgw-gateway"))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() bool { return published(rbacNS).Version != "" }, eventually).Should(BeTrue())

		By("an informer on the snapshot's head and parts (label selector), as the gateway runs it")
		lw := cache.NewFilteredListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", rbacNS,
			func(o *metav1.ListOptions) { o.LabelSelector = snapshot.Selector(snapshot.DefaultConfigMapName) })
		got := make(chan string, 10)
		inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
		_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
			got <- obj.(*corev1.ConfigMap).Annotations[VersionAnnotation]
		}})
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithCancel(suiteCtx)
		defer cancel()
		go inf.Run(ctx.Done())
		Eventually(got, eventually).Should(Receive(HavePrefix("sha256:")))

		_, getSnapshotErr := cs.CoreV1().ConfigMaps(rbacNS).Get(suiteCtx, snapshot.DefaultConfigMapName, metav1.GetOptions{})
		_, err = cs.CoreV1().Secrets(rbacNS).Get(suiteCtx, "vendor-key", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("reporting its running version as the gateway does: a merge patch of its own key, and a GET")
		Eventually(func() error {
			return k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: rbacNS, Name: gatewaystatus.DefaultConfigMapName}, &corev1.ConfigMap{})
		}, eventually).Should(Succeed()) // created by the controller in the spec above
		patch, err := gatewaystatus.MergePatch("llmgw-gateway-0", `{"version":"","at":"2026-01-01T00:00:00Z"}`)
		Expect(err).NotTo(HaveOccurred())
		_, err = cs.CoreV1().ConfigMaps(rbacNS).Patch(suiteCtx, gatewaystatus.DefaultConfigMapName, types.MergePatchType, patch, metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = cs.CoreV1().ConfigMaps(rbacNS).Get(suiteCtx, gatewaystatus.DefaultConfigMapName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, patchSnapshotErr := cs.CoreV1().ConfigMaps(rbacNS).Patch(suiteCtx, snapshot.DefaultConfigMapName, types.MergePatchType, patch, metav1.PatchOptions{})
		_, patchOtherErr := cs.CoreV1().ConfigMaps(rbacNS).Patch(suiteCtx, "unrelated", types.MergePatchType, patch, metav1.PatchOptions{})

		c := gatewayClient
		in := client.InNamespace(rbacNS)
		_, watchSecretsErr := cs.CoreV1().Secrets(rbacNS).Watch(suiteCtx, metav1.ListOptions{})
		// Listing and watching the namespace's ConfigMaps is in the Role (a
		// label-selected informer cannot be pinned by resourceNames); a GET,
		// which the gateway never does, is not.
		denied := map[string]error{
			"get the snapshot":            getSnapshotErr,
			"get another ConfigMap":       c.Get(suiteCtx, client.ObjectKey{Namespace: rbacNS, Name: "unrelated"}, &corev1.ConfigMap{}),
			"update the snapshot":         c.Update(suiteCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: rbacNS, Name: snapshot.DefaultConfigMapName}}),
			"create a ConfigMap":          c.Create(suiteCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: rbacNS, Name: "x"}}),
			"update a Secret":             c.Update(suiteCtx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: rbacNS, Name: "vendor-key"}}),
			"list ModelAliases":           c.List(suiteCtx, &v1alpha1.ModelAliasList{}, in),
			"get a GatewayKey":            c.Get(suiteCtx, client.ObjectKey{Namespace: rbacNS, Name: "team-a"}, &v1alpha1.GatewayKey{}),
			"get the leader Lease":        c.Get(suiteCtx, client.ObjectKey{Namespace: rbacNS, Name: DefaultLeaderElectionID}, &coordinationv1.Lease{}),
			"read Secrets elsewhere":      c.List(suiteCtx, &corev1.SecretList{}, client.InNamespace("elsewhere")),
			"list Secrets":                c.List(suiteCtx, &corev1.SecretList{}, in),
			"watch Secrets":               watchSecretsErr,
			"list Pods":                   c.List(suiteCtx, &corev1.PodList{}, in),
			"patch the snapshot":          patchSnapshotErr,
			"patch another ConfigMap":     patchOtherErr,
			"update the status ConfigMap": c.Update(suiteCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: rbacNS, Name: gatewaystatus.DefaultConfigMapName}}),
			"delete the status ConfigMap": c.Delete(suiteCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: rbacNS, Name: gatewaystatus.DefaultConfigMapName}}),
		}
		for what, err := range denied {
			Expect(forbidden(err)).To(BeTrue(), "%s: want Forbidden, got %v", what, err)
		}
	})
	It("lets the gateway discover its replicas and stranded ledgers and mark its claim handed off, and nothing more", gatewayDiscoveryRBAC)
	It("lets the controller review tokens and access for its /metrics, and nothing else cluster-wide", func(ctx SpecContext) {
		ctrlCS, err := kubernetes.NewForConfig(impersonate("llmgw-controller"))
		Expect(err).NotTo(HaveOccurred())
		gwCS, err := kubernetes.NewForConfig(impersonate("llmgw-gateway"))
		Expect(err).NotTo(HaveOccurred())
		_, err = ctrlCS.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: "x"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = ctrlCS.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User: "someone", NonResourceAttributes: &authzv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, nsErr := ctrlCS.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		_, crErr := ctrlCS.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
		_, metricsErr := ctrlCS.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		_, gwReviewErr := gwCS.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: "x"}}, metav1.CreateOptions{})
		denied := map[string]error{
			"controller: list Namespaces":               nsErr,
			"controller: list ClusterRoles":             crErr,
			"controller: GET the API server's /metrics": metricsErr,
			"gateway: create a TokenReview":             gwReviewErr,
		}
		for what, err := range denied {
			Expect(forbidden(err)).To(BeTrue(), "%s: want Forbidden, got %v", what, err)
		}
	})

	It("lets the controller compile a watched namespace with config/rbac/watched_namespace there, and do nothing else in it", func(ctx SpecContext) {
		const team = "rbac-team"
		Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: team}})).To(Succeed())
		paths, err := filepath.Glob(filepath.Join("..", "config", "rbac", "watched_namespace", "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(paths).To(HaveLen(2))
		apply(k8sClient, filesYAML(paths...), team)
		apply(k8sClient, `apiVersion: v1
kind: Secret
metadata: {name: team-secret}
stringData: {apiKey: sk-test}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: team-config}
---
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: team-chat}
spec: {primary: {provider: alpha, model: a2}}
---
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: team-key}
spec:
  keyHash: "sha256:5555555555555555555555555555555555555555555555555555555555555555"
  keyPrefix: lgw_rbacteam00
  models: ["team-chat"]`, team)

		var errs errorLog
		o := Options{Namespace: rbacNS, WatchNamespaces: []string{team}, MetricsAddr: "0",
			Debounce: 50 * time.Millisecond, DebounceMax: 500 * time.Millisecond, SkipNameValidation: true}
		_, stop := startManagerLogging(impersonate("llmgw-controller"), o, errs.logger())
		defer stop()
		Eventually(keyReady(team, "team-key"), eventually).Should(Equal(inSnapshot))
		Eventually(aliasReady(team, "team-chat"), eventually).Should(Equal(inSnapshot))
		Eventually(eventsOf(team, "GatewayKey", "team-key"), eventually).ShouldNot(BeEmpty())
		Expect(errs.matching("forbidden")).To(BeEmpty())

		c := controllerClient
		denied := map[string]error{
			"get a Secret there":          c.Get(ctx, client.ObjectKey{Namespace: team, Name: "team-secret"}, &corev1.Secret{}),
			"list Secrets there":          c.List(ctx, &corev1.SecretList{}, client.InNamespace(team)),
			"list ConfigMaps there":       c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(team)),
			"create a ConfigMap there":    c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: snapshot.DefaultConfigMapName}}),
			"list Services there":         c.List(ctx, &corev1.ServiceList{}, client.InNamespace(team)),
			"list Pods there":             c.List(ctx, &corev1.PodList{}, client.InNamespace(team)),
			"update a CR spec there":      c.Update(ctx, &v1alpha1.GatewayKey{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "team-key"}}),
			"create a CR there":           c.Create(ctx, &v1alpha1.ModelAlias{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "new"}}),
			"create a Lease there":        c.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "x"}}),
			"list CRs in an unwatched ns": c.List(ctx, &v1alpha1.GatewayKeyList{}, client.InNamespace("elsewhere")),
		}
		for what, err := range denied {
			Expect(forbidden(err)).To(BeTrue(), "%s: want Forbidden, got %v", what, err)
		}
	})
})
