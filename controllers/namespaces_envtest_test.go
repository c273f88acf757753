package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/llmgw/llmgw/api/v1alpha1"
)

var _ = Describe("watched namespaces", func() {
	It("compiles keys, aliases and groups of every watched namespace, writes their status and Events there, refuses a ProviderEndpoint outside its own namespace, and never touches an unwatched namespace", func(ctx SpecContext) {
		home, team, other := newNamespace(), newNamespace(), newNamespace()
		_, stop := startManager(cfg, Options{Namespace: home, WatchNamespaces: []string{team}, MetricsAddr: "0", ProbeAddr: "0", Debounce: 50 * time.Millisecond})
		defer stop()
		apply(k8sClient, `apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: alpha}
spec: {protocol: openai, url: "http://127.0.0.1:9001"}
---
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: chat}
spec: {primary: {provider: alpha, model: a1}}
---
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: ci}
spec:
  keyHash: "sha256:1111111111111111111111111111111111111111111111111111111111111111"
  keyPrefix: lgw_homeci0000
  models: ["chat"]`, home)
		teamObjects := `apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: own}
spec: {protocol: openai, url: "http://127.0.0.1:9002"}
---
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: team-chat}
spec: {primary: {provider: alpha, model: a2}}
---
apiVersion: llmgw.dev/v1alpha1
kind: BudgetGroup
metadata: {name: crew}
spec: {tokensPerMinute: 1000}
---
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: ci}
spec:
  keyHash: "sha256:2222222222222222222222222222222222222222222222222222222222222222"
  keyPrefix: lgw_teamci0000
  models: ["chat", "team-chat"]
  group: crew`
		apply(k8sClient, teamObjects, team)
		apply(k8sClient, teamObjects, other)

		Eventually(func() []string { return keyIDs(published(home)) }, eventually).Should(ConsistOf("ci", team+"/ci"))
		s := published(home)
		Expect(aliasNames(s)).To(ConsistOf("chat", "team-chat"))
		Expect(providerNames(s)).To(ConsistOf("alpha"))
		Expect(s.Groups).To(HaveLen(1))
		Expect(s.Groups[0].Name).To(Equal(team + "/crew"))
		for _, k := range s.Keys {
			if k.ID == team+"/ci" {
				Expect(k.Group).To(Equal(team+"/crew"), "a key's group is the one of its own namespace")
				Expect(k.Models).To(ConsistOf("chat", "team-chat"))
			}
		}

		By("writing the team objects' status and Events in their namespace")
		Eventually(keyReady(team, "ci"), eventually).Should(Equal(inSnapshot))
		Eventually(aliasReady(team, "team-chat"), eventually).Should(Equal(inSnapshot))
		Eventually(keyReady(home, "ci"), eventually).Should(Equal(inSnapshot), "two keys named ci, one per namespace")
		Eventually(providerCond(team, "own", v1alpha1.ConditionAccepted), eventually).Should(Equal("False/" + v1alpha1.ReasonNamespaceNotAllowed))
		Eventually(eventsOf(team, "ProviderEndpoint", "own"), eventually).Should(ContainElement("Warning/" + v1alpha1.ReasonNamespaceNotAllowed))

		By("leaving the unwatched namespace alone: no status, nothing compiled from it")
		Consistently(keyCond(other, "ci", v1alpha1.ConditionReady), 2*time.Second).Should(Equal("no " + v1alpha1.ConditionReady + " condition"))
		Expect(keyIDs(published(home))).NotTo(ContainElement(other + "/ci"))
		Expect(eventsOf(other, "GatewayKey", "ci")()).To(BeEmpty())
	})
})
