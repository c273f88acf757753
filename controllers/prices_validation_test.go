package controllers

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The schema of ProviderEndpoint prices against a real API server: decimal
// strings and currency codes by pattern, one price per model and
// effectiveFrom by CEL. Messages are asserted verbatim (users see them).
var _ = Describe("ProviderEndpoint prices validation", func() {
	const ns = "validation-prices"

	BeforeEach(func() {
		err := k8sClient.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
	})

	check := func(doc, want string) {
		err := create(doc, ns)
		if want == "" {
			Expect(err).NotTo(HaveOccurred())
			return
		}
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(Equal(want), "full message:\n%s", err.Error())
	}
	pe := func(name, prices string) string {
		return `
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: ` + name + `}
spec:
  protocol: openai
  url: "http://127.0.0.1:9001"
  prices:
` + prices
	}

	DescribeTable("prices", check,
		Entry("valid history", pe("ok", `
  - {model: large, inputPerMillion: "2.5", outputPerMillion: "10"}
  - {model: large, inputPerMillion: "2", cachedInputPerMillion: "0.5", outputPerMillion: "8", reasoningPerMillion: "12", effectiveFrom: "2026-03-01T00:00:00Z"}
  - {model: small, currency: EUR, inputPerMillion: "0.000001", outputPerMillion: "999999999.999999"}`), ""),
		Entry("exponent", pe("exp", `
  - {model: large, inputPerMillion: "1e3", outputPerMillion: "10"}`),
			`ProviderEndpoint.llmgw.dev "exp" is invalid: spec.prices[0].inputPerMillion: Invalid value: "1e3": spec.prices[0].inputPerMillion in body should match '^[0-9]{1,9}(\.[0-9]{1,6})?$'`),
		Entry("seven fractional digits", pe("frac", `
  - {model: large, inputPerMillion: "1", outputPerMillion: "0.0000001"}`),
			`ProviderEndpoint.llmgw.dev "frac" is invalid: spec.prices[0].outputPerMillion: Invalid value: "0.0000001": spec.prices[0].outputPerMillion in body should match '^[0-9]{1,9}(\.[0-9]{1,6})?$'`),
		Entry("lower-case currency", pe("cur", `
  - {model: large, currency: usd, inputPerMillion: "1", outputPerMillion: "1"}`),
			`ProviderEndpoint.llmgw.dev "cur" is invalid: spec.prices[0].currency: Invalid value: "usd": spec.prices[0].currency in body should match '^[A-Z]{3}$'`),
		Entry("same model twice without effectiveFrom", pe("dup", `
  - {model: large, inputPerMillion: "1", outputPerMillion: "1"}
  - {model: large, inputPerMillion: "2", outputPerMillion: "2"}`),
			`ProviderEndpoint.llmgw.dev "dup" is invalid: spec.prices: Invalid value: at most one price per model and effectiveFrom`),
		Entry("same model twice at the same time", pe("dup-time", `
  - {model: large, inputPerMillion: "1", outputPerMillion: "1", effectiveFrom: "2026-03-01T00:00:00Z"}
  - {model: large, inputPerMillion: "2", outputPerMillion: "2", effectiveFrom: "2026-03-01T00:00:00Z"}`),
			`ProviderEndpoint.llmgw.dev "dup-time" is invalid: spec.prices: Invalid value: at most one price per model and effectiveFrom`),
		Entry("missing output price", pe("no-out", `
  - {model: large, inputPerMillion: "1"}`),
			`ProviderEndpoint.llmgw.dev "no-out" is invalid: [spec.prices[0].outputPerMillion: Required value, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`),
	)
})
