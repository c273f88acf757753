package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/llmgw/llmgw/api/snapshot"
)

var _ = Describe("snapshot limits in Kubernetes mode", func() {
	It("publishes the limits the controller is started with (--max-body-bytes and friends), defaults for the ones left at 0", func() {
		ns := newNamespace()
		_, stop := startManager(cfg, Options{Namespace: ns, MetricsAddr: "0", ProbeAddr: "0", Debounce: 50 * time.Millisecond,
			Limits: snapshot.Limits{MaxBodyBytes: 65536, MaxMessages: 7, MaxConcurrent: 3, DefaultMaxTokens: 2048}})
		defer stop()
		apply(k8sClient, samplesYAML(), ns)
		var defaults snapshot.Snapshot
		defaults.Normalize()
		Eventually(func() snapshot.Limits { return published(ns).Limits }, eventually).Should(Equal(snapshot.Limits{
			MaxBodyBytes: 65536, MaxMessages: 7, MaxConcurrent: 3, MaxContentChars: defaults.Limits.MaxContentChars, DefaultMaxTokens: 2048,
		}))
		Expect(defaults.Limits.MaxMessages).NotTo(Equal(7), "the test must set a value other than the default")
	})
})
