package controllers

import (
	"context"
	"maps"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/llmgw/llmgw/gateway/peers"
)

// gatewayDiscoveryRBAC is a spec of "RBAC from config/rbac" (rbac_test.go,
// whose BeforeAll applies the Roles): the gateway's peer discovery
// (gateway/peers.Discovery) runs as the gateway's ServiceAccount. It
// watches its own StatefulSet by name and the namespace's claims, and marks
// its own claim handed off; reading any other StatefulSet, changing the
// StatefulSet or deleting a claim is denied.
func gatewayDiscoveryRBAC(ctx SpecContext) {
	{
		labels := map[string]string{"app.kubernetes.io/name": "llmgw-gateway"}
		sts := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: rbacNS, Name: "llmgw-gateway"},
			Spec: appsv1.StatefulSetSpec{
				Replicas:    ptr.To[int32](2),
				ServiceName: "llmgw-gateway-peers",
				Selector:    &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "gateway", Image: "llmgw:dev"}}},
				},
			},
		}
		Expect(k8sClient.Create(ctx, sts)).To(Succeed())
		other := sts.DeepCopy()
		other.ResourceVersion, other.Name = "", "another-app"
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		for _, name := range []string{"data-llmgw-gateway-0", "data-llmgw-gateway-1", "data-llmgw-gateway-2"} {
			Expect(k8sClient.Create(ctx, &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: rbacNS, Name: name},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
			})).To(Succeed())
		}
		DeferCleanup(func(ctx context.Context) {
			_ = k8sClient.Delete(ctx, sts)
			_ = k8sClient.Delete(ctx, other)
			for _, name := range []string{"data-llmgw-gateway-0", "data-llmgw-gateway-1", "data-llmgw-gateway-2"} {
				_ = k8sClient.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: rbacNS, Name: name}})
			}
		})

		cs, err := kubernetes.NewForConfig(impersonate("llmgw-gateway"))
		Expect(err).NotTo(HaveOccurred())
		d, err := peers.NewDiscovery(peers.DiscoveryConfig{Client: cs, Namespace: rbacNS, StatefulSet: "llmgw-gateway", ClaimTemplate: "data"})
		Expect(err).NotTo(HaveOccurred())
		startCtx, cancel := context.WithCancel(ctx)
		DeferCleanup(cancel)
		syncCtx, syncCancel := context.WithTimeout(startCtx, time.Minute)
		defer syncCancel()
		Expect(d.Start(syncCtx)).To(Succeed(), "the watches start as the gateway's ServiceAccount")
		Eventually(func(g Gomega) {
			m := d.Membership()
			g.Expect(m.Known).To(BeTrue())
			g.Expect(m.Members).To(Equal([]string{"llmgw-gateway-0", "llmgw-gateway-1"}))
			g.Expect(m.Stranded).To(Equal([]string{"data-llmgw-gateway-2"}))
		}, eventually).Should(Succeed())
		Expect(d.Replicas(ctx)).To(Equal(2))

		By("a scale to 3 as kubectl scale makes it: the stranded ledger is a member's again")
		Expect(k8sClient.Patch(ctx, sts.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":3}}`)))).To(Succeed())
		Eventually(func() []string { return d.Membership().Members }, eventually).Should(HaveLen(3))
		Expect(d.Membership().Stranded).To(BeEmpty())

		By("back to 2, and the claim marked handed off")
		Expect(k8sClient.Patch(ctx, sts.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":2}}`)))).To(Succeed())
		Eventually(func() []string { return d.Membership().Stranded }, eventually).Should(Equal([]string{"data-llmgw-gateway-2"}))
		Expect(d.MarkHandedOff(ctx, "data-llmgw-gateway-2", "http://llmgw-gateway-0.llmgw-gateway-peers:9090", 7)).To(Succeed())
		Eventually(func() []string { return d.Membership().Stranded }, eventually).Should(BeEmpty())
		Expect(d.ClearHandedOff(ctx, "data-llmgw-gateway-2")).To(Succeed())

		_, listAllErr := cs.AppsV1().StatefulSets(rbacNS).List(ctx, metav1.ListOptions{})
		_, getOtherErr := cs.AppsV1().StatefulSets(rbacNS).Get(ctx, "another-app", metav1.GetOptions{})
		_, scaleErr := cs.AppsV1().StatefulSets(rbacNS).Patch(ctx, "llmgw-gateway", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{})
		deleteClaimErr := cs.CoreV1().PersistentVolumeClaims(rbacNS).Delete(ctx, "data-llmgw-gateway-2", metav1.DeleteOptions{})
		_, getClaimErr := cs.CoreV1().PersistentVolumeClaims(rbacNS).Get(ctx, "data-llmgw-gateway-2", metav1.GetOptions{})
		_, claimsElsewhereErr := cs.CoreV1().PersistentVolumeClaims("elsewhere").List(ctx, metav1.ListOptions{})
		_, listPodsErr := cs.CoreV1().Pods(rbacNS).List(ctx, metav1.ListOptions{})
		denied := map[string]error{
			"list every StatefulSet":  listAllErr,
			"get another StatefulSet": getOtherErr,
			"scale its StatefulSet":   scaleErr,
			"delete a claim":          deleteClaimErr,
			"get a claim":             getClaimErr,
			"list claims elsewhere":   claimsElsewhereErr,
			"list Pods (not needed)":  listPodsErr,
		}
		for _, what := range slices.Sorted(maps.Keys(denied)) {
			Expect(forbidden(denied[what])).To(BeTrue(), "%s: want Forbidden, got %v", what, denied[what])
		}
	}
}
