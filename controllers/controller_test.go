package controllers

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
	"github.com/llmgw/llmgw/test/testutil"
)

var nsCounter atomic.Int32

// newNamespace gives each spec its own namespace and controller, so specs
// cannot see each other's objects or snapshot.
func newNamespace() string {
	ns := fmt.Sprintf("ctrl-%d", nsCounter.Add(1))
	Expect(k8sClient.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	return ns
}

func samplesYAML() string {
	paths, err := samplePaths()
	Expect(err).NotTo(HaveOccurred())
	Expect(paths).To(HaveLen(11))
	return filesYAML(paths...)
}

// published assembles the published snapshot from its head and parts, as a
// gateway does (empty, Version "", if there is no head).
func published(ns string) *snapshot.Snapshot {
	var cm corev1.ConfigMap
	if err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: snapshot.DefaultConfigMapName}, &cm); err != nil {
		return &snapshot.Snapshot{}
	}
	s, err := testutil.ReadSnapshot(func(name string) (*corev1.ConfigMap, error) {
		var cm corev1.ConfigMap
		return &cm, k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: name}, &cm)
	}, snapshot.DefaultConfigMapName)
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "the published snapshot must assemble to its head's version")
	return s
}

// snapshotConfigMaps lists the head and parts of the snapshot in ns.
func snapshotConfigMaps(ns string) []corev1.ConfigMap {
	var l corev1.ConfigMapList
	ExpectWithOffset(1, k8sClient.List(suiteCtx, &l, client.InNamespace(ns),
		client.MatchingLabels{snapshot.SnapshotLabel: snapshot.DefaultConfigMapName})).To(Succeed())
	return l.Items
}

// namesOf is name of each entry, in order (nil for none).
func namesOf[T any](entries []T, name func(*T) string) []string {
	var n []string
	for i := range entries {
		n = append(n, name(&entries[i]))
	}
	return n
}

func aliasNames(s *snapshot.Snapshot) []string {
	return namesOf(s.Aliases, func(a *snapshot.Alias) string { return a.Name })
}

func providerNames(s *snapshot.Snapshot) []string {
	return namesOf(s.Providers, func(p *snapshot.Provider) string { return p.Name })
}

func keyIDs(s *snapshot.Snapshot) []string {
	return namesOf(s.Keys, func(k *snapshot.Key) string { return k.ID })
}

// conditionOf reads obj and returns its condition typ as "Status/Reason",
// or why it cannot: missing, or describing an older generation.
func conditionOf(obj client.Object, conds func() []metav1.Condition, typ string) func() string {
	return func() string {
		if err := k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return "get: " + err.Error()
		}
		c := meta.FindStatusCondition(conds(), typ)
		if c == nil {
			return "no " + typ + " condition"
		}
		if c.ObservedGeneration != obj.GetGeneration() {
			return fmt.Sprintf("stale: observed %d, generation %d", c.ObservedGeneration, obj.GetGeneration())
		}
		return string(c.Status) + "/" + c.Reason
	}
}

func aliasCond(ns, name, typ string) func() string {
	o := &v1alpha1.ModelAlias{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	return conditionOf(o, func() []metav1.Condition { return o.Status.Conditions }, typ)
}

func providerCond(ns, name, typ string) func() string {
	o := &v1alpha1.ProviderEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	return conditionOf(o, func() []metav1.Condition { return o.Status.Conditions }, typ)
}

func keyCond(ns, name, typ string) func() string {
	o := &v1alpha1.GatewayKey{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	return conditionOf(o, func() []metav1.Condition { return o.Status.Conditions }, typ)
}

// The Ready condition. This suite runs no gateway (programmed_envtest_test.go
// plays gateway Pods): an object that is compiled into the snapshot is
// Ready=Unknown/NoGateways here, one that is not says why with False.
func aliasReady(ns, name string) func() string { return aliasCond(ns, name, v1alpha1.ConditionReady) }
func providerReady(ns, name string) func() string {
	return providerCond(ns, name, v1alpha1.ConditionReady)
}
func keyReady(ns, name string) func() string { return keyCond(ns, name, v1alpha1.ConditionReady) }

// inSnapshot is Ready for an object compiled into the snapshot while no
// gateway runs.
const inSnapshot = "Unknown/NoGateways"

const eventually = 20 * time.Second

var _ = Describe("snapshot controller", func() {
	var (
		ns   string
		r    *Reconciler
		stop func()
	)
	BeforeEach(func() {
		ns = newNamespace()
		r, stop = startManager(cfg, Options{Namespace: ns, Debounce: 50 * time.Millisecond, DebounceMax: 500 * time.Millisecond})
		DeferCleanup(func() { stop() })
	})

	It("publishes the samples, accepts every object and says no gateway serves them, with observedGeneration", func() {
		apply(k8sClient, samplesYAML(), ns)
		Eventually(func() []string { return aliasNames(published(ns)) }, eventually).
			Should(Equal([]string{"chat-alpha", "chat-beta", "chat-restricted", "embed-alpha"}))
		for _, n := range []string{"alpha", "beta"} {
			Eventually(providerReady(ns, n), eventually).Should(Equal(inSnapshot))
		}
		for _, n := range []string{"chat-alpha", "chat-beta", "chat-restricted", "embed-alpha"} {
			Eventually(aliasReady(ns, n), eventually).Should(Equal(inSnapshot))
		}
		for _, n := range []string{"team-a", "team-restricted"} {
			Eventually(keyReady(ns, n), eventually).Should(Equal(inSnapshot))
		}
		s := published(ns)
		Expect(s.Providers).To(HaveLen(2))
		Expect(s.Providers[0].BaseURL).To(Equal(fmt.Sprintf("http://mock-alpha.%s.svc:9001", ns)))
		Expect(s.Keys).To(HaveLen(2))

		var ma v1alpha1.ModelAlias
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "chat-alpha"}, &ma)).To(Succeed())
		Expect(ma.Status.Alias).To(Equal("chat-alpha"))
		Expect(ma.Status.Primary).To(Equal("alpha/alpha-large"))
		Expect(ma.Status.Fallback).To(Equal("beta/beta-large"))
		Expect(ma.Status.ObservedGeneration).To(Equal(ma.Generation))
		var gk v1alpha1.GatewayKey
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "team-a"}, &gk)).To(Succeed())
		Expect(gk.Status.Fingerprint).To(MatchRegexp(`^[0-9a-f]{12}$`))

		var cm corev1.ConfigMap
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: snapshot.DefaultConfigMapName}, &cm)).To(Succeed())
		Expect(cm.Labels).To(HaveKeyWithValue(ManagedByLabel, ManagedByValue))
		Expect(cm.Labels).To(HaveKeyWithValue(ComponentLabel, ComponentValue))
		Expect(cm.ManagedFields).To(ContainElement(HaveField("Manager", FieldOwner)))
	})

	It("shows alias, primary, fallback and the conditions in kubectl get of each kind, Ready and its reason in -o wide", func() {
		apply(k8sClient, samplesYAML(), ns)
		Eventually(aliasReady(ns, "chat-restricted"), eventually).Should(Equal(inSnapshot))
		Eventually(keyReady(ns, "team-restricted"), eventually).Should(Equal(inSnapshot))
		cs := kubernetes.NewForConfigOrDie(cfg)
		table := func(plural string) (cols, wide []string, rows [][]any) {
			raw, err := cs.RESTClient().Get().AbsPath("/apis/llmgw.dev/v1alpha1/namespaces", ns, plural).
				SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(suiteCtx)
			Expect(err).NotTo(HaveOccurred())
			var t metav1.Table
			Expect(json.Unmarshal(raw, &t)).To(Succeed())
			for _, c := range t.ColumnDefinitions {
				if c.Priority == 0 {
					cols = append(cols, c.Name)
				} else {
					wide = append(wide, c.Name)
				}
			}
			for _, r := range t.Rows {
				rows = append(rows, r.Cells)
			}
			return cols, wide, rows
		}
		cols, wide, rows := table("modelaliases")
		Expect(cols).To(Equal([]string{"Name", "Alias", "Primary", "Fallback", "Accepted", "ResolvedRefs", "Programmed", "Age"}))
		Expect(wide).To(Equal([]string{"Ready", "Reason"}))
		Expect(rows).To(HaveLen(4))
		// Cells are in column order, the wide ones (Ready, Reason) before Age.
		Expect(rows[0][:9]).To(Equal([]any{"chat-alpha", "chat-alpha", "alpha/alpha-large", "beta/beta-large", "True", "True", "Unknown", "Unknown", "NoGateways"}))
		Expect(rows[2][:9]).To(Equal([]any{"chat-restricted", "chat-restricted", "alpha/alpha-small", nil, "True", "True", "Unknown", "Unknown", "NoGateways"}))

		cols, wide, rows = table("gatewaykeys")
		Expect(cols).To(Equal([]string{"Name", "Prefix", "Fingerprint", "Disabled", "Expires", "Rotation", "GraceEnds", "Accepted", "ResolvedRefs", "Programmed", "Age"}))
		Expect(wide).To(Equal([]string{"Ready", "Reason", "ExpiringSoon", "Group", "TPM", "Budget"}))
		// Disabled is false, not blank: the schema defaults it.
		Expect(rows[0][3]).To(BeFalse())
		// Never rotated: no rotation to show.
		Expect(rows[0][5:7]).To(Equal([]any{nil, nil}))
		Expect(rows[0][7:10]).To(Equal([]any{"True", "True", "Unknown"}))

		cols, wide, _ = table("providerendpoints")
		Expect(cols).To(Equal([]string{"Name", "Protocol", "URL", "Accepted", "ResolvedRefs", "Programmed", "Age"}))
		Expect(wide).To(Equal([]string{"Ready", "Reason"}))

		cols, wide, rows = table("budgetgroups")
		Expect(cols).To(Equal([]string{"Name", "TPM", "Budget", "Currency", "Period", "Keys", "Accepted", "ResolvedRefs", "Programmed", "Age"}))
		Expect(wide).To(Equal([]string{"Ready", "Reason"}))
		Eventually(func() []any {
			_, _, rows = table("budgetgroups")
			return rows[0][:9]
		}, eventually).Should(Equal([]any{"platform", float64(200000), "500", "USD", "month", float64(1), "True", "True", "Unknown"}))
	})

	It("follows create, update and delete of each kind", func() {
		apply(k8sClient, samplesYAML(), ns)
		Eventually(func() []string { return aliasNames(published(ns)) }, eventually).Should(HaveLen(4))

		By("updating a ModelAlias: a new fallback")
		apply(k8sClient, `
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: chat-restricted}
spec:
  primary: {provider: alpha, model: alpha-small}
  fallbacks: [{provider: beta, model: beta-small}]
  maxFallbacks: 1`, ns)
		Eventually(func() []snapshot.Route {
			s := published(ns)
			for _, a := range s.Aliases {
				if a.Name == "chat-restricted" {
					return a.Fallbacks
				}
			}
			return nil
		}, eventually).Should(Equal([]snapshot.Route{{Provider: "beta", Model: "beta-small"}}))
		Eventually(aliasReady(ns, "chat-restricted"), eventually).Should(Equal(inSnapshot))

		By("creating a ModelAlias with an explicit public name")
		apply(k8sClient, `
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: upper}
spec:
  alias: "Org/Chat:v2"
  primary: {provider: beta, model: beta-large}`, ns)
		Eventually(func() []string { return aliasNames(published(ns)) }, eventually).Should(ContainElement("Org/Chat:v2"))

		By("updating a ProviderEndpoint: a new address")
		apply(k8sClient, `
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: beta}
spec: {protocol: anthropic, url: "http://127.0.0.1:9999"}`, ns)
		Eventually(func() string {
			for _, p := range published(ns).Providers {
				if p.Name == "beta" {
					return p.BaseURL
				}
			}
			return ""
		}, eventually).Should(Equal("http://127.0.0.1:9999"))

		By("updating a GatewayKey: disabled, new rate limit")
		var gk v1alpha1.GatewayKey
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "team-a"}, &gk)).To(Succeed())
		gk.Spec.Disabled = true
		gk.Spec.RateLimit = &v1alpha1.RateLimit{RequestsPerMinute: 5, Burst: 1}
		Expect(k8sClient.Update(suiteCtx, &gk)).To(Succeed())
		Eventually(func() snapshot.Key {
			for _, k := range published(ns).Keys {
				if k.ID == "team-a" {
					return k
				}
			}
			return snapshot.Key{}
		}, eventually).Should(And(HaveField("Disabled", true), HaveField("RateLimit", snapshot.RateLimit{RPM: 5, Burst: 1})))
		Eventually(keyCond(ns, "team-a", v1alpha1.ConditionAccepted), eventually).Should(Equal("True/Accepted"))

		By("deleting a ProviderEndpoint: aliases with another working route stay, degraded; an alias with none leaves")
		Expect(k8sClient.Delete(suiteCtx, &v1alpha1.ProviderEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "beta"}})).To(Succeed())
		Eventually(func() []string { return aliasNames(published(ns)) }, eventually).Should(Equal([]string{"chat-alpha", "chat-beta", "chat-restricted", "embed-alpha"}))
		for _, n := range []string{"chat-alpha", "chat-beta", "chat-restricted"} {
			Eventually(aliasCond(ns, n, v1alpha1.ConditionResolvedRefs), eventually).Should(Equal("False/ProviderNotFound"))
			Eventually(aliasCond(ns, n, v1alpha1.ConditionAccepted), eventually).Should(Equal("True/Accepted"))
			Eventually(aliasReady(ns, n), eventually).Should(Equal(inSnapshot))
		}
		Eventually(aliasReady(ns, "upper"), eventually).Should(Equal("False/ProviderNotFound"))
		Eventually(aliasCond(ns, "upper", v1alpha1.ConditionProgrammed), eventually).Should(Equal("False/RefsNotResolved"))
		for _, a := range published(ns).Aliases {
			if a.Name == "chat-beta" { // its primary was beta: alpha took over
				Expect(a.Primary).To(Equal(snapshot.Route{Provider: "alpha", Model: "alpha-large"}))
				Expect(a.Fallbacks).To(BeEmpty())
			}
		}
		var ma v1alpha1.ModelAlias
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "chat-beta"}, &ma)).To(Succeed())
		Expect(ma.Status.Routes).To(Equal([]v1alpha1.ResolvedRoute{{Provider: "alpha", Model: "alpha-large", BaseURL: fmt.Sprintf("http://mock-alpha.%s.svc:9001", ns)}}))
		// team-restricted lists only chat-restricted, which still serves.
		Eventually(keyReady(ns, "team-restricted"), eventually).Should(Equal(inSnapshot))
		Expect(published(ns).Providers).To(HaveLen(1))

		By("deleting a ModelAlias and a GatewayKey")
		apply(k8sClient, `
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: solo}
spec: {primary: {provider: alpha, model: alpha-large}}`, ns)
		Eventually(func() []string { return aliasNames(published(ns)) }, eventually).Should(ContainElement("solo"))
		Expect(k8sClient.Delete(suiteCtx, &v1alpha1.ModelAlias{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "solo"}})).To(Succeed())
		Expect(k8sClient.Delete(suiteCtx, &v1alpha1.GatewayKey{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team-a"}})).To(Succeed())
		Eventually(func() []string {
			s := published(ns)
			names := aliasNames(s)
			for _, k := range s.Keys {
				names = append(names, "key "+k.ID)
			}
			return names
		}, eventually).Should(Equal([]string{"chat-alpha", "chat-beta", "chat-restricted", "embed-alpha", "key team-restricted"}))
	})

	It("tracks credential Secrets without ever holding their values in the snapshot", func() {
		apply(k8sClient, `
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: vendor}
spec:
  protocol: openai
  url: https://api.vendor.example/v1
  credential: {secretRef: {name: vendor-key, key: apiKey}}
---
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: chat}
spec: {primary: {provider: vendor, model: big}}`, ns)
		Eventually(providerReady(ns, "vendor"), eventually).Should(Equal("False/SecretNotFound"))
		Eventually(aliasReady(ns, "chat"), eventually).Should(Equal("False/ProviderNotReady"))

		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vendor-key"}, StringData: map[string]string{"wrong": "sk-test-value-never-published"}}
		Expect(k8sClient.Create(suiteCtx, secret)).To(Succeed())
		Eventually(providerReady(ns, "vendor"), eventually).Should(Equal("False/SecretKeyNotFound"))

		secret.StringData = map[string]string{"apiKey": "sk-test-value-never-published"}
		Expect(k8sClient.Update(suiteCtx, secret)).To(Succeed())
		Eventually(providerReady(ns, "vendor"), eventually).Should(Equal(inSnapshot))
		Eventually(aliasReady(ns, "chat"), eventually).Should(Equal(inSnapshot))
		Expect(published(ns).Providers[0].Credential).To(Equal(&snapshot.Credential{SecretName: "vendor-key", SecretKey: "apiKey"}))
		body, err := snapshot.Encode(published(ns))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(body)).NotTo(ContainSubstring("sk-test-value"))

		Expect(k8sClient.Delete(suiteCtx, secret)).To(Succeed())
		Eventually(providerReady(ns, "vendor"), eventually).Should(Equal("False/SecretNotFound"))
		Eventually(func() []string { return aliasNames(published(ns)) }, eventually).Should(BeEmpty())
	})

	It("resolves an alias name conflict in favour of the older object, and recovers when it goes", func() {
		apply(k8sClient, samplesYAML(), ns)
		Eventually(aliasReady(ns, "chat-alpha"), eventually).Should(Equal(inSnapshot))
		time.Sleep(1100 * time.Millisecond) // creationTimestamp has one-second resolution
		apply(k8sClient, `
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: impostor}
spec: {alias: chat-alpha, primary: {provider: beta, model: beta-small}}`, ns)
		Eventually(aliasReady(ns, "impostor"), eventually).Should(Equal("False/AliasConflict"))
		Consistently(aliasReady(ns, "chat-alpha"), time.Second).Should(Equal(inSnapshot))
		Expect(k8sClient.Delete(suiteCtx, &v1alpha1.ModelAlias{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "chat-alpha"}})).To(Succeed())
		Eventually(aliasReady(ns, "impostor"), eventually).Should(Equal(inSnapshot))
		Eventually(func() string {
			for _, a := range published(ns).Aliases {
				if a.Name == "chat-alpha" {
					return a.Primary.Provider
				}
			}
			return ""
		}, eventually).Should(Equal("beta"))
	})

	It("leaves invalid objects out without breaking the rest", func() {
		apply(k8sClient, samplesYAML(), ns)
		apply(k8sClient, `
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: dangling}
spec: {primary: {provider: ghost, model: g}}
---
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: short}
spec:
  primary: {provider: alpha, model: a}
  timeouts: {total: 20ms, attempt: 20ms, firstChunk: 1h}`, ns)
		Eventually(aliasReady(ns, "dangling"), eventually).Should(Equal("False/ProviderNotFound"))
		Eventually(func() []string { return aliasNames(published(ns)) }, eventually).
			Should(Equal([]string{"chat-alpha", "chat-beta", "chat-restricted", "embed-alpha", "short"}))
	})

	It("writes the ConfigMap only when the version changes, and repairs it", func() {
		apply(k8sClient, samplesYAML(), ns)
		Eventually(func() []string { return aliasNames(published(ns)) }, eventually).Should(HaveLen(4))
		Eventually(keyReady(ns, "team-restricted"), eventually).Should(Equal(inSnapshot))
		time.Sleep(time.Second) // past any debounce still pending from the apply
		settled := r.Writes()
		version := published(ns).Version

		By("a spec change that compiles to the same snapshot (explicit defaults)")
		apply(k8sClient, `
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: chat-beta}
spec:
  primary: {provider: beta, model: beta-large}
  fallbacks: [{provider: alpha, model: alpha-large}]
  maxFallbacks: 1
  timeouts: {total: 60s, attempt: 20s, firstChunk: 10s, idle: 15s}`, ns)
		Eventually(aliasReady(ns, "chat-beta"), eventually).Should(Equal(inSnapshot)) // observedGeneration caught up
		By("a label change (no new generation)")
		var gk v1alpha1.GatewayKey
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "team-a"}, &gk)).To(Succeed())
		gk.Labels = map[string]string{"team": "a"}
		Expect(k8sClient.Update(suiteCtx, &gk)).To(Succeed())
		Consistently(r.Writes, 2*time.Second).Should(Equal(settled))
		Expect(published(ns).Version).To(Equal(version))

		By("someone edits the ConfigMap")
		var cm corev1.ConfigMap
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: snapshot.DefaultConfigMapName}, &cm)).To(Succeed())
		cm.Data[snapshot.HeadKey] = "{}"
		Expect(k8sClient.Update(suiteCtx, &cm)).To(Succeed())
		Eventually(func() string {
			var cm corev1.ConfigMap
			_ = k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: snapshot.DefaultConfigMapName}, &cm)
			h, err := snapshot.ParseHead([]byte(cm.Data[snapshot.HeadKey]))
			if err != nil {
				return err.Error()
			}
			return cm.Annotations[VersionAnnotation] + " " + h.Version
		}, eventually).Should(Equal(version + " " + version))
		Eventually(func() string { return published(ns).Version }, eventually).Should(Equal(version))

		By("someone deletes a part")
		for _, p := range snapshotConfigMaps(ns) {
			if p.Name != snapshot.DefaultConfigMapName {
				Expect(k8sClient.Delete(suiteCtx, &p)).To(Succeed())
				break
			}
		}
		Eventually(func() error {
			_, err := testutil.ReadSnapshot(func(name string) (*corev1.ConfigMap, error) {
				var cm corev1.ConfigMap
				return &cm, k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: name}, &cm)
			}, snapshot.DefaultConfigMapName)
			return err
		}, eventually).Should(Succeed())
		Expect(published(ns).Version).To(Equal(version))

		By("someone deletes the ConfigMap")
		Expect(k8sClient.Delete(suiteCtx, &cm)).To(Succeed())
		Eventually(func() string { return published(ns).Version }, eventually).ShouldNot(BeEmpty())
		Expect(published(ns).Version).To(Equal(version))
	})

	It("debounces: 100 applies at once make a handful of ConfigMap writes", func() {
		stop() // this spec wants the production debounce settings
		r, stop = startManager(cfg, Options{Namespace: ns, Debounce: 200 * time.Millisecond, DebounceMax: time.Second})
		apply(k8sClient, samplesYAML(), ns)
		Eventually(func() int { return len(published(ns).Keys) }, eventually).Should(Equal(2))
		time.Sleep(time.Second)

		// Count writes as the API server sees them: watch the one ConfigMap.
		w, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps(ns).Watch(suiteCtx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", snapshot.DefaultConfigMapName).String(),
		})
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		var modified atomic.Int32
		go func() {
			defer GinkgoRecover()
			for ev := range w.ResultChan() {
				if ev.Type == watch.Modified {
					modified.Add(1)
				}
			}
		}()
		before := r.Writes()

		// 100 objects applied at once, like kubectl apply -f dir/ (4 clients in parallel).
		start := time.Now()
		var wg sync.WaitGroup
		for p := range 4 {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				for i := p; i < 100; i += 4 {
					apply(k8sClient, fmt.Sprintf(`
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: bulk-%03d}
spec:
  keyHash: sha256:%064x
  keyPrefix: lgw_bulk%06d
  models: ["*"]`, i, i+1, i), ns)
				}
			}()
		}
		wg.Wait()
		applied := time.Since(start)
		Eventually(func() int { return len(published(ns).Keys) }, eventually).Should(Equal(102))
		time.Sleep(2 * time.Second) // any straggling write would show up now
		writes := r.Writes() - before
		GinkgoWriter.Printf("100 applies in %v → %d ConfigMap writes (%d watch events)\n", applied, writes, modified.Load())
		AddReportEntry("debounce", fmt.Sprintf("100 applies in %v -> %d ConfigMap writes", applied.Round(time.Millisecond), writes))
		Expect(writes).To(BeNumerically(">=", 1))
		// One write per DebounceMax window of the burst, plus the trailing one.
		Expect(writes).To(BeNumerically("<=", int64(applied/time.Second)+3))
		Expect(writes).To(BeNumerically("<=", 10))
		Expect(int64(modified.Load())).To(Equal(writes))
	})
})
