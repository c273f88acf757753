package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/llmgw/llmgw/api/v1alpha1"
)

var _ = Describe("in-cluster provider Services", func() {
	It("resolves a ProviderEndpoint's Service once it exists, and notices its ports change and its deletion, without any change to the ProviderEndpoint", func(ctx SpecContext) {
		ns := newNamespace()
		_, stop := startManager(cfg, Options{Namespace: ns, MetricsAddr: "0", ProbeAddr: "0", Debounce: 50 * time.Millisecond})
		defer stop()
		apply(k8sClient, `apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: in-cluster}
spec: {protocol: openai, service: {name: models, port: 8080, path: /v1}}
---
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: chat}
spec:
  primary: {provider: in-cluster, model: m1}`, ns)
		resolved := providerCond(ns, "in-cluster", v1alpha1.ConditionResolvedRefs)
		Eventually(resolved, eventually).Should(Equal("False/" + v1alpha1.ReasonServiceNotFound))
		// The status is written after the round's snapshot is published.
		Expect(providerNames(published(ns))).NotTo(ContainElement("in-cluster"))
		Expect(aliasNames(published(ns))).NotTo(ContainElement("chat"))
		var pe v1alpha1.ProviderEndpoint
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "in-cluster"}, &pe)).To(Succeed())
		generation := pe.Generation

		By("creating the Service")
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "models"},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}},
		}
		Expect(k8sClient.Create(ctx, svc)).To(Succeed())
		Eventually(resolved, eventually).Should(Equal("True/" + v1alpha1.ReasonResolvedRefs))
		Eventually(func() []string { return providerNames(published(ns)) }, eventually).Should(ContainElement("in-cluster"))
		Eventually(func() []string { return aliasNames(published(ns)) }, eventually).Should(ContainElement("chat"))

		By("moving the Service to another port")
		svc.Spec.Ports[0].Port = 9090
		Expect(k8sClient.Update(ctx, svc)).To(Succeed())
		Eventually(resolved, eventually).Should(Equal("False/" + v1alpha1.ReasonServicePortNotFound))
		Expect(providerNames(published(ns))).NotTo(ContainElement("in-cluster"))

		By("deleting the Service")
		Expect(k8sClient.Delete(ctx, svc)).To(Succeed())
		Eventually(resolved, eventually).Should(Equal("False/" + v1alpha1.ReasonServiceNotFound))

		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "in-cluster"}, &pe)).To(Succeed())
		Expect(pe.Generation).To(Equal(generation), "only the Service changed")
	})
})
