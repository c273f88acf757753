package controllers

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/llmgw/llmgw/api/gatewaystatus"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// This suite has no kubelet and no gateway process: the specs below play the
// gateway replicas through the same API objects real ones produce — Pods
// with the gateway labels whose status says ready or not, and entries in the
// status ConfigMap written with the merge patch gateway/source/report.go
// sends — and check what the controller makes of them.

// gatewayPod creates a gateway Pod and sets its status as the kubelet would.
func gatewayPod(ns, name string, ready bool, started time.Time) {
	GinkgoHelper()
	// No controller-manager creates the default ServiceAccount here, and
	// admission wants it.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}
	Expect(client.IgnoreAlreadyExists(k8sClient.Create(suiteCtx, sa))).To(Succeed())
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app.kubernetes.io/name": "llmgw", "app.kubernetes.io/component": "gateway"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "gateway", Image: "llmgw"}}},
	}
	Expect(k8sClient.Create(suiteCtx, pod)).To(Succeed())
	setGatewayPod(ns, name, ready, started)
}

func setGatewayPod(ns, name string, ready bool, started time.Time) {
	GinkgoHelper()
	var pod corev1.Pod
	Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: name}, &pod)).To(Succeed())
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod.Status = corev1.PodStatus{
		Phase:      corev1.PodRunning,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "gateway", Ready: ready, Image: "llmgw", ImageID: "llmgw",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}},
	}
	Expect(k8sClient.Status().Update(suiteCtx, &pod)).To(Succeed())
}

// report writes a replica's entry as the gateway's reporter does.
func report(ns, pod string, r gatewaystatus.Report) {
	GinkgoHelper()
	if r.At.IsZero() {
		r.At = time.Now()
	}
	value, err := r.Encode()
	Expect(err).NotTo(HaveOccurred())
	patch, err := gatewaystatus.MergePatch(pod, value)
	Expect(err).NotTo(HaveOccurred())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gatewaystatus.DefaultConfigMapName}}
	Eventually(func() error { // the controller creates it
		return k8sClient.Patch(suiteCtx, cm, client.RawPatch(types.MergePatchType, patch))
	}, eventually).Should(Succeed())
}

// conditionMessage is the message of obj's condition typ.
func conditionMessage(obj client.Object, conds func() []metav1.Condition, typ string) string {
	GinkgoHelper()
	Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	c := meta.FindStatusCondition(conds(), typ)
	Expect(c).NotTo(BeNil(), "no %s condition", typ)
	return c.Message
}

func aliasMessage(ns, name, typ string) string {
	o := &v1alpha1.ModelAlias{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	return conditionMessage(o, func() []metav1.Condition { return o.Status.Conditions }, typ)
}

func keyMessage(ns, name, typ string) string {
	o := &v1alpha1.GatewayKey{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	return conditionMessage(o, func() []metav1.Condition { return o.Status.Conditions }, typ)
}

// eventsOf lists "Type/Reason" of the controller's Events about one object,
// oldest first, as `kubectl describe` shows them.
func eventsOf(ns, kind, name string) func() []string {
	return func() []string {
		var evs eventsv1.EventList
		Expect(k8sClient.List(suiteCtx, &evs, client.InNamespace(ns))).To(Succeed())
		slices.SortStableFunc(evs.Items, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
		var out []string
		for _, e := range evs.Items {
			if e.ReportingController == FieldOwner && e.Regarding.Kind == kind && e.Regarding.Name == name {
				out = append(out, e.Type+"/"+e.Reason)
			}
		}
		return out
	}
}

func eventNote(ns, kind, name, reason string) string {
	var evs eventsv1.EventList
	Expect(k8sClient.List(suiteCtx, &evs, client.InNamespace(ns))).To(Succeed())
	for _, e := range evs.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason {
			return e.Note
		}
	}
	return ""
}

var _ = Describe("Programmed and Events", func() {
	It("says Programmed only once every ready gateway replica runs a snapshot with the object, and records each transition as an Event", func() {
		ns := newNamespace()
		_, stop := startManager(cfg, Options{Namespace: ns, Debounce: 50 * time.Millisecond, DebounceMax: 500 * time.Millisecond})
		DeferCleanup(stop)
		apply(k8sClient, samplesYAML(), ns)

		By("no gateway Pod: Unknown, and a Warning that says so")
		Eventually(aliasCond(ns, "chat-alpha", v1alpha1.ConditionProgrammed), eventually).Should(Equal("Unknown/NoGateways"))
		Expect(aliasMessage(ns, "chat-alpha", v1alpha1.ConditionProgrammed)).To(ContainSubstring("no gateway Pod matches " + DefaultGatewaySelector))
		// Objects reach the controller's cache in any order: an early compile
		// may see an alias before its providers and record that transition
		// too, so the Events are checked to contain these, not to equal them.
		Eventually(eventsOf(ns, "ModelAlias", "chat-alpha"), eventually).Should(ContainElement("Warning/NoGateways"))

		By("two ready replicas that have not reported yet: Pending")
		started := time.Now().Add(-time.Minute).Truncate(time.Second)
		gatewayPod(ns, "llmgw-gateway-0", true, started)
		gatewayPod(ns, "llmgw-gateway-1", true, started)
		Eventually(aliasCond(ns, "chat-alpha", v1alpha1.ConditionProgrammed), eventually).Should(Equal("False/Pending"))
		Eventually(func() string { return aliasMessage(ns, "chat-alpha", v1alpha1.ConditionProgrammed) }, eventually).
			Should(Equal("0 of 2 ready gateway replicas serve it; waiting for llmgw-gateway-0, llmgw-gateway-1"))
		Eventually(aliasReady(ns, "chat-alpha"), eventually).Should(Equal("False/Pending"))

		By("one replica runs the published version")
		v1 := published(ns).Version
		report(ns, "llmgw-gateway-0", gatewaystatus.Report{Version: v1})
		Eventually(func() string { return aliasMessage(ns, "chat-alpha", v1alpha1.ConditionProgrammed) }, eventually).
			Should(Equal("1 of 2 ready gateway replicas serve it; waiting for llmgw-gateway-1"))

		By("both do: Programmed, Ready, and an Event")
		report(ns, "llmgw-gateway-1", gatewaystatus.Report{Version: v1})
		for _, n := range []string{"chat-alpha", "chat-beta", "chat-restricted"} {
			Eventually(aliasCond(ns, n, v1alpha1.ConditionProgrammed), eventually).Should(Equal("True/Programmed"))
			Eventually(aliasReady(ns, n), eventually).Should(Equal("True/Serving"))
		}
		Eventually(keyReady(ns, "team-a"), eventually).Should(Equal("True/Serving"))
		Eventually(providerReady(ns, "beta"), eventually).Should(Equal("True/Serving"))
		Eventually(eventsOf(ns, "ModelAlias", "chat-alpha"), eventually).Should(ContainElements("Warning/NoGateways", "Normal/Pending", "Normal/Programmed"))
		var ma v1alpha1.ModelAlias
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "chat-alpha"}, &ma)).To(Succeed())
		Expect(ma.Status.ObservedGeneration).To(Equal(ma.Generation))

		By("a new key is Pending until the replicas run the version with it; the others stay Programmed")
		apply(k8sClient, `
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: newcomer}
spec: {keyHash: "sha256:5e2a8d4c6f05c9b2cb5d7d8e5e3b3f4a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e", keyPrefix: lgw_newcomer00, models: ["*"]}`, ns)
		Eventually(keyCond(ns, "newcomer", v1alpha1.ConditionProgrammed), eventually).Should(Equal("False/Pending"))
		v2 := published(ns).Version
		Expect(v2).NotTo(Equal(v1))
		Consistently(aliasCond(ns, "chat-alpha", v1alpha1.ConditionProgrammed), time.Second).Should(Equal("True/Programmed"))
		Expect(keyCond(ns, "team-a", v1alpha1.ConditionProgrammed)()).To(Equal("True/Programmed"))

		By("one replica refuses that version: the new key says why; the rest is still served")
		report(ns, "llmgw-gateway-0", gatewaystatus.Report{Version: v2})
		report(ns, "llmgw-gateway-1", gatewaystatus.Report{Version: v1, RefusedVersion: v2, RefusedReason: "provider vendor: reading Secret vendor-key: not found"})
		Eventually(keyCond(ns, "newcomer", v1alpha1.ConditionProgrammed), eventually).Should(Equal("False/SnapshotRefused"))
		Expect(keyMessage(ns, "newcomer", v1alpha1.ConditionProgrammed)).To(Equal(fmt.Sprintf(
			"gateway replica llmgw-gateway-1 refused snapshot %s and keeps serving its previous one: provider vendor: reading Secret vendor-key: not found", shortVersion(v2))))
		Expect(keyReady(ns, "newcomer")()).To(Equal("False/SnapshotRefused"))
		Expect(aliasCond(ns, "chat-alpha", v1alpha1.ConditionProgrammed)()).To(Equal("True/Programmed"))
		Eventually(eventsOf(ns, "GatewayKey", "newcomer"), eventually).Should(ContainElement("Warning/SnapshotRefused"))
		Expect(eventNote(ns, "GatewayKey", "newcomer", "SnapshotRefused")).To(ContainSubstring("reading Secret vendor-key: not found"))

		By("it applies the version after all")
		report(ns, "llmgw-gateway-1", gatewaystatus.Report{Version: v2})
		Eventually(keyCond(ns, "newcomer", v1alpha1.ConditionProgrammed), eventually).Should(Equal("True/Programmed"))

		By("a disabled key: Programmed (the gateways run it), Ready False/Disabled once they do")
		var gk v1alpha1.GatewayKey
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "newcomer"}, &gk)).To(Succeed())
		gk.Spec.Disabled = true
		Expect(k8sClient.Update(suiteCtx, &gk)).To(Succeed())
		Eventually(keyReady(ns, "newcomer"), eventually).Should(Equal("False/Pending"))
		v3 := published(ns).Version
		report(ns, "llmgw-gateway-0", gatewaystatus.Report{Version: v3})
		report(ns, "llmgw-gateway-1", gatewaystatus.Report{Version: v3})
		Eventually(keyReady(ns, "newcomer"), eventually).Should(Equal("False/Disabled"))
		Expect(keyCond(ns, "newcomer", v1alpha1.ConditionProgrammed)()).To(Equal("True/Programmed"))
		Eventually(eventsOf(ns, "GatewayKey", "newcomer"), eventually).Should(ContainElement("Normal/Disabled"))

		By("a replica restarted: what it reported before is not trusted until it reports again")
		setGatewayPod(ns, "llmgw-gateway-1", true, time.Now().Add(2*time.Second))
		Eventually(aliasCond(ns, "chat-alpha", v1alpha1.ConditionProgrammed), eventually).Should(Equal("False/Pending"))
		report(ns, "llmgw-gateway-1", gatewaystatus.Report{Version: v3, At: time.Now().Add(3 * time.Second)})
		Eventually(aliasCond(ns, "chat-alpha", v1alpha1.ConditionProgrammed), eventually).Should(Equal("True/Programmed"))

		By("a replica that is not ready is not waited for")
		setGatewayPod(ns, "llmgw-gateway-0", false, started)
		apply(k8sClient, `
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: late}
spec: {primary: {provider: alpha, model: alpha-small}}`, ns)
		Eventually(aliasCond(ns, "late", v1alpha1.ConditionProgrammed), eventually).Should(Equal("False/Pending"))
		report(ns, "llmgw-gateway-1", gatewaystatus.Report{Version: published(ns).Version, At: time.Now().Add(3 * time.Second)})
		Eventually(aliasCond(ns, "late", v1alpha1.ConditionProgrammed), eventually).Should(Equal("True/Programmed"))

		By("the gateways go away")
		for _, p := range []string{"llmgw-gateway-0", "llmgw-gateway-1"} {
			Expect(k8sClient.Delete(suiteCtx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p}}, client.GracePeriodSeconds(0))).To(Succeed())
		}
		Eventually(aliasCond(ns, "chat-alpha", v1alpha1.ConditionProgrammed), eventually).Should(Equal("Unknown/NoGateways"))
	})

	It("writes every object's status when the snapshot write is refused, and sets observedGeneration only once it succeeds", func() {
		ns := newNamespace()
		// The controller's own Role, without the right to create ConfigMaps:
		// the API server refuses the snapshot write, as it would one too large.
		roles := objectsFromYAML(filesYAML(filepath.Join("..", "config", "rbac", "role.yaml")), ns)
		Expect(roles).To(HaveLen(1))
		var role rbacv1.Role
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(roles[0].Object, &role)).To(Succeed())
		role.Name = "limited-controller"
		full := role.DeepCopy().Rules
		role.Rules = nil
		for _, r := range full {
			if slices.Equal(r.Resources, []string{"configmaps"}) && len(r.ResourceNames) == 0 {
				if r.Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == "create" }); len(r.Verbs) == 0 {
					continue
				}
			}
			role.Rules = append(role.Rules, r)
		}
		Expect(role.Rules).NotTo(Equal(full), "the Role has a rule to create ConfigMaps")
		Expect(k8sClient.Create(suiteCtx, &role)).To(Succeed())
		const user = "limited-controller"
		Expect(k8sClient.Create(suiteCtx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}})).To(Succeed())
		limited := rest.CopyConfig(cfg)
		limited.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
		_, stop := startManager(limited, Options{Namespace: ns, Debounce: 50 * time.Millisecond, DebounceMax: 500 * time.Millisecond})
		DeferCleanup(stop)

		apply(k8sClient, samplesYAML(), ns)
		for _, n := range []string{"chat-alpha", "chat-beta", "chat-restricted"} {
			Eventually(aliasCond(ns, n, v1alpha1.ConditionProgrammed), eventually).Should(Equal("False/SnapshotWriteFailed"))
			Expect(aliasCond(ns, n, v1alpha1.ConditionAccepted)()).To(Equal("True/Accepted"))
			Expect(aliasReady(ns, n)()).To(Equal("False/SnapshotWriteFailed"))
		}
		Eventually(keyCond(ns, "team-a", v1alpha1.ConditionProgrammed), eventually).Should(Equal("False/SnapshotWriteFailed"))
		Expect(aliasMessage(ns, "chat-alpha", v1alpha1.ConditionProgrammed)).To(ContainSubstring(`configmaps is forbidden: User "limited-controller" cannot create resource "configmaps"`))
		Expect(published(ns).Version).To(BeEmpty())
		// Objects reach the cache in any order, so an earlier compile may have
		// seen the alias before its providers: only the write failure is certain.
		Eventually(eventsOf(ns, "ModelAlias", "chat-alpha"), eventually).Should(ContainElement("Warning/SnapshotWriteFailed"))

		By("the conditions follow a new generation; observedGeneration does not")
		apply(k8sClient, `
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: chat-alpha}
spec:
  primary: {provider: alpha, model: alpha-large}
  fallbacks: [{provider: beta, model: beta-small}]`, ns)
		Eventually(aliasCond(ns, "chat-alpha", v1alpha1.ConditionProgrammed), eventually).Should(Equal("False/SnapshotWriteFailed")) // at generation 2
		var ma v1alpha1.ModelAlias
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "chat-alpha"}, &ma)).To(Succeed())
		Expect(ma.Generation).To(Equal(int64(2)))
		Expect(ma.Status.ObservedGeneration).To(BeZero())

		By("the write is allowed again: published, and observedGeneration catches up")
		Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(&role), &role)).To(Succeed())
		role.Rules = full
		Expect(k8sClient.Update(suiteCtx, &role)).To(Succeed())
		// Any change brings a round at once (the retry backoff may be longer).
		apply(k8sClient, `
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: nudge}
spec: {primary: {provider: alpha, model: alpha-small}}`, ns)
		Eventually(func() string { return published(ns).Version }, eventually).ShouldNot(BeEmpty())
		Eventually(aliasCond(ns, "chat-alpha", v1alpha1.ConditionProgrammed), eventually).Should(Equal("Unknown/NoGateways"))
		Eventually(func() int64 {
			Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "chat-alpha"}, &ma)).To(Succeed())
			return ma.Status.ObservedGeneration
		}, eventually).Should(Equal(int64(2)))
		Eventually(eventsOf(ns, "ModelAlias", "chat-alpha"), eventually).Should(ContainElements("Warning/SnapshotWriteFailed", "Warning/NoGateways"))
		Expect(strings.Join(eventsOf(ns, "ModelAlias", "nudge")(), " ")).NotTo(ContainSubstring("SnapshotWriteFailed"))
	})
})
