package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/llmgw/llmgw/api/v1alpha1"
)

var _ = Describe("credential Secrets", func() {
	It("notices an empty credential value, and a fixed one, without any CR change and without caching the value", func(ctx SpecContext) {
		ns := newNamespace()
		_, stop := startManager(cfg, Options{Namespace: ns, MetricsAddr: "0", ProbeAddr: "0", Debounce: 50 * time.Millisecond})
		defer stop()
		apply(k8sClient, `apiVersion: llmgw.dev/v1alpha1
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
data: {apiKey: ""}`, ns)
		Eventually(providerCond(ns, "vendor", v1alpha1.ConditionResolvedRefs), eventually).
			Should(Equal("False/" + v1alpha1.ReasonSecretKeyNotFound))

		var sec corev1.Secret
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vendor-key"}, &sec)).To(Succeed())
		sec.Data = map[string][]byte{"apiKey": []byte("sk-now-set")}
		Expect(k8sClient.Update(ctx, &sec)).To(Succeed())
		Eventually(providerCond(ns, "vendor", v1alpha1.ConditionResolvedRefs), eventually).
			Should(Equal("True/" + v1alpha1.ReasonResolvedRefs))

		By("emptied again: back to SecretKeyNotFound")
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vendor-key"}, &sec)).To(Succeed())
		sec.Data = map[string][]byte{"apiKey": {}}
		Expect(k8sClient.Update(ctx, &sec)).To(Succeed())
		Eventually(providerCond(ns, "vendor", v1alpha1.ConditionResolvedRefs), eventually).
			Should(Equal("False/" + v1alpha1.ReasonSecretKeyNotFound))
	})
})
