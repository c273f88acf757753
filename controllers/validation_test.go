package controllers

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
	"github.com/llmgw/llmgw/gateway/keys"
)

// CRUD and schema/CEL validation of each CRD against a real API server. Each
// rejection is asserted verbatim: the message is what a user sees from
// kubectl apply, so it is part of the API.
var _ = Describe("CRD validation", func() {
	const ns = "validation"

	BeforeEach(func() {
		err := k8sClient.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
	})

	type rejection struct{ doc, want string }
	check := func(r rejection) {
		err := create(r.doc, ns)
		if r.want == "" {
			Expect(err).NotTo(HaveOccurred())
			return
		}
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(Equal(r.want), "full message:\n%s", err.Error())
	}

	DescribeTable("ProviderEndpoint", check,
		Entry("valid url", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: ok-url}
spec: {protocol: openai, url: "https://api.example.com/v1", timeouts: {connect: 1500ms, responseHeader: 1m30s}}`}),
		Entry("valid service with credential", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: ok-svc}
spec:
  protocol: anthropic
  service: {name: mock-beta, port: 9002}
  credential: {secretRef: {name: beta-key, key: apiKey}}`}),
		Entry("url and service", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: both}
spec: {protocol: openai, url: "http://a", service: {name: a, port: 80}}`,
			want: `ProviderEndpoint.llmgw.dev "both" is invalid: spec: Invalid value: exactly one of url or service must be set`}),
		Entry("neither url nor service", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: neither}
spec: {protocol: openai}`,
			want: `ProviderEndpoint.llmgw.dev "neither" is invalid: spec: Invalid value: exactly one of url or service must be set`}),
		Entry("unknown protocol", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: grpc}
spec: {protocol: grpc, url: "http://a"}`,
			want: `ProviderEndpoint.llmgw.dev "grpc" is invalid: [spec.protocol: Unsupported value: "grpc": supported values: "openai", "anthropic", <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`}),
		Entry("credentials in the url", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: userinfo}
spec: {protocol: openai, url: "http://user:pass@api.example.com"}`,
			want: `ProviderEndpoint.llmgw.dev "userinfo" is invalid: spec.url: Invalid value: url must be http(s)://host[:port][/path], without credentials, query or fragment`}),
		Entry("non-http url", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: ftp}
spec: {protocol: openai, url: "ftp://api.example.com"}`,
			want: `ProviderEndpoint.llmgw.dev "ftp" is invalid: spec.url: Invalid value: url must be http(s)://host[:port][/path], without credentials, query or fragment`}),
		Entry("connect timeout out of bounds", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: slow}
spec: {protocol: openai, url: "http://a", timeouts: {connect: 10m}}`,
			want: `ProviderEndpoint.llmgw.dev "slow" is invalid: spec.timeouts.connect: Invalid value: "10m": connect must be between 1ms and 5m`}),
		Entry("duration that is not one", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: prose}
spec: {protocol: openai, url: "http://a", timeouts: {responseHeader: "2 seconds"}}`,
			want: `ProviderEndpoint.llmgw.dev "prose" is invalid: spec.timeouts.responseHeader: Invalid value: "2 seconds": spec.timeouts.responseHeader in body should match '^([0-9]{1,5}(h|m|s|ms)){1,4}$'`}),
		Entry("service port out of range", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: port0}
spec: {protocol: openai, service: {name: a, port: 0}}`,
			want: `ProviderEndpoint.llmgw.dev "port0" is invalid: spec.service.port: Invalid value: 0: spec.service.port in body should be greater than or equal to 1`}),
		Entry("circuit breaker turned off", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: breaker-off}
spec: {protocol: openai, url: "http://a", circuitBreaker: {consecutiveFailures: 0}}`}),
		Entry("circuit breaker at its bounds", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: breaker-bounds}
spec: {protocol: openai, url: "http://a", circuitBreaker: {consecutiveFailures: 1000, coolDown: 24h, halfOpenProbes: 100}}`}),
		Entry("circuit breaker failures negative", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: breaker-negative}
spec: {protocol: openai, url: "http://a", circuitBreaker: {consecutiveFailures: -1}}`,
			want: `ProviderEndpoint.llmgw.dev "breaker-negative" is invalid: spec.circuitBreaker.consecutiveFailures: Invalid value: -1: spec.circuitBreaker.consecutiveFailures in body should be greater than or equal to 0`}),
		Entry("circuit breaker cool-down out of bounds", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: breaker-cool-down}
spec: {protocol: openai, url: "http://a", circuitBreaker: {coolDown: 25h}}`,
			want: `ProviderEndpoint.llmgw.dev "breaker-cool-down" is invalid: spec.circuitBreaker.coolDown: Invalid value: "25h": coolDown must be between 1ms and 24h`}),
		Entry("circuit breaker without probes", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: breaker-probes}
spec: {protocol: openai, url: "http://a", circuitBreaker: {halfOpenProbes: 0}}`,
			want: `ProviderEndpoint.llmgw.dev "breaker-probes" is invalid: spec.circuitBreaker.halfOpenProbes: Invalid value: 0: spec.circuitBreaker.halfOpenProbes in body should be greater than or equal to 1`}),
	)

	It("fills a circuit breaker's unset fields with the snapshot's defaults", func() {
		Expect(create(`
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: breaker-defaults}
spec: {protocol: openai, url: "http://a", circuitBreaker: {coolDown: 5s}}`, ns)).To(Succeed())
		var pe v1alpha1.ProviderEndpoint
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "breaker-defaults"}, &pe)).To(Succeed())
		cb := pe.Spec.CircuitBreaker
		Expect(cb).NotTo(BeNil())
		Expect(cb.ConsecutiveFailures).To(HaveValue(BeEquivalentTo(snapshot.DefaultConsecutiveFailures)))
		Expect(cb.HalfOpenProbes).To(BeEquivalentTo(snapshot.DefaultHalfOpenProbes))
		Expect(cb.CoolDown).To(Equal(v1alpha1.Duration("5s")))
		Expect(create(`
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: breaker-default-cool-down}
spec: {protocol: openai, url: "http://a", circuitBreaker: {halfOpenProbes: 2}}`, ns)).To(Succeed())
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "breaker-default-cool-down"}, &pe)).To(Succeed())
		ms, err := pe.Spec.CircuitBreaker.CoolDown.Milliseconds()
		Expect(err).NotTo(HaveOccurred())
		Expect(ms).To(Equal(snapshot.DefaultCoolDownMs))
	})

	DescribeTable("ModelAlias", check,
		Entry("valid", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: ok}
spec:
  alias: "Org/Model:v1"
  primary: {provider: alpha, model: a}
  fallbacks: [{provider: beta, model: b}, {provider: alpha, model: a2}]
  maxFallbacks: 2
  timeouts: {total: 30s, attempt: 10s, firstChunk: 5s, idle: 5s}`}),
		Entry("missing primary", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: noprimary}
spec: {alias: x}`,
			want: `ModelAlias.llmgw.dev "noprimary" is invalid: [spec.primary: Required value, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`}),
		Entry("fallback equal to primary", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: selfloop}
spec:
  primary: {provider: alpha, model: a}
  fallbacks: [{provider: alpha, model: a}]`,
			want: `ModelAlias.llmgw.dev "selfloop" is invalid: spec: Invalid value: a fallback must differ from the primary route`}),
		Entry("duplicate fallbacks", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: dupfb}
spec:
  primary: {provider: alpha, model: a}
  fallbacks: [{provider: beta, model: b}, {provider: beta, model: b}]`,
			want: `ModelAlias.llmgw.dev "dupfb" is invalid: spec.fallbacks[1]: Duplicate value: {"model":"b","provider":"beta"}`}),
		Entry("too many fallbacks", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: manyfb}
spec:
  primary: {provider: alpha, model: a}
  fallbacks: [{provider: b, model: "1"}, {provider: b, model: "2"}, {provider: b, model: "3"}, {provider: b, model: "4"}]`,
			want: `ModelAlias.llmgw.dev "manyfb" is invalid: [spec.fallbacks: Too many: 4: must have at most 3 items, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`}),
		// maxFallbacks is a cap (the schema defaults it to 1 with or without
		// fallbacks), and every timeout is cut to total: both are accepted.
		Entry("maxFallbacks above the list", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: maxfb}
spec:
  primary: {provider: alpha, model: a}
  fallbacks: [{provider: beta, model: b}]
  maxFallbacks: 2`}),
		Entry("maxFallbacks above 3", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: maxfb4}
spec:
  primary: {provider: alpha, model: a}
  maxFallbacks: 4`,
			want: `ModelAlias.llmgw.dev "maxfb4" is invalid: spec.maxFallbacks: Invalid value: 4: spec.maxFallbacks in body should be less than or equal to 3`}),
		Entry("attempt longer than total", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: attempt}
spec:
  primary: {provider: alpha, model: a}
  timeouts: {total: 5s, attempt: 10s}`}),
		Entry("total out of bounds", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: total}
spec:
  primary: {provider: alpha, model: a}
  timeouts: {total: 2h}`,
			want: `ModelAlias.llmgw.dev "total" is invalid: spec.timeouts.total: Invalid value: "2h": total must be between 1ms and 1h`}),
		Entry("alias with whitespace", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: space}
spec:
  alias: "my model"
  primary: {provider: alpha, model: a}`,
			want: `ModelAlias.llmgw.dev "space" is invalid: spec.alias: Invalid value: "my model": spec.alias in body should match '^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$'`}),
	)

	const hash = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	DescribeTable("GatewayKey", check,
		Entry("valid", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: ok}
spec:
  keyHash: ` + hash + `
  keyPrefix: lgw_abcdefghij
  models: [chat-alpha, "Org/Model:v1"]
  rateLimit: {requestsPerMinute: 600, burst: 20}
  disabled: false
  expiresAt: "2030-01-01T00:00:00Z"`}),
		Entry("plaintext key as keyHash", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: plaintext}
spec:
  keyHash: lgw_abcdefghij_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn
  keyPrefix: lgw_abcdefghij
  models: ["*"]`,
			want: `GatewayKey.llmgw.dev "plaintext" is invalid: spec.keyHash: Invalid value: keyHash must be the sha256: hash of the key, never the plaintext key`}),
		Entry("upper-case hash", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: upper}
spec:
  keyHash: sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef
  keyPrefix: lgw_abcdefghij
  models: ["*"]`,
			want: `GatewayKey.llmgw.dev "upper" is invalid: spec.keyHash: Invalid value: "sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef": keyHash must be sha256: followed by 64 lowercase hex characters`}),
		Entry("bad prefix", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: prefix}
spec:
  keyHash: ` + hash + `
  keyPrefix: lgw_ABC
  models: ["*"]`,
			want: `GatewayKey.llmgw.dev "prefix" is invalid: spec.keyPrefix: Invalid value: "lgw_ABC": spec.keyPrefix in body should match '^lgw_[a-z0-9]{10}$'`}),
		Entry("star with other models", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: star}
spec:
  keyHash: ` + hash + `
  keyPrefix: lgw_abcdefghij
  models: ["*", chat]`,
			want: `GatewayKey.llmgw.dev "star" is invalid: spec.models: Invalid value: '*' must be the only entry when present`}),
		Entry("duplicate models", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: dup}
spec:
  keyHash: ` + hash + `
  keyPrefix: lgw_abcdefghij
  models: [chat, chat]`,
			want: `GatewayKey.llmgw.dev "dup" is invalid: spec.models[1]: Duplicate value: "chat"`}),
		Entry("no models", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: nomodels}
spec:
  keyHash: ` + hash + `
  keyPrefix: lgw_abcdefghij
  models: []`,
			want: `GatewayKey.llmgw.dev "nomodels" is invalid: spec.models: Invalid value: 0: spec.models in body should have at least 1 items`}),
		Entry("zero rate", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: zerorate}
spec:
  keyHash: ` + hash + `
  keyPrefix: lgw_abcdefghij
  models: ["*"]
  rateLimit: {requestsPerMinute: 0}`,
			want: `GatewayKey.llmgw.dev "zerorate" is invalid: spec.rateLimit.requestsPerMinute: Invalid value: 0: spec.rateLimit.requestsPerMinute in body should be greater than or equal to 1`}),
		Entry("expiresAt not a time", rejection{doc: `
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: when}
spec:
  keyHash: ` + hash + `
  keyPrefix: lgw_abcdefghij
  models: ["*"]
  expiresAt: tomorrow`,
			want: `GatewayKey.llmgw.dev "when" is invalid: [spec.expiresAt: Invalid value: "tomorrow": spec.expiresAt in body must be of type date-time: "tomorrow", <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`}),
	)

	It("reads, updates and deletes each kind, validating updates too", func() {
		apply(k8sClient, `
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: crud}
spec: {protocol: openai, url: "https://api.example.com/v1"}
---
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: crud}
spec:
  primary: {provider: alpha, model: a}
  fallbacks: [{provider: beta, model: b}, {provider: alpha, model: a2}]
  maxFallbacks: 2`, ns)
		apply(k8sClient, `
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: crud}
spec:
  keyHash: `+hash+`
  keyPrefix: lgw_crud000000
  models: ["*"]`, ns)
		apply(k8sClient, `
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: crud}
spec:
  keyHash: `+hash+`
  keyPrefix: lgw_crud000000
  models: [chat]
  disabled: true`, ns)
		var gk v1alpha1.GatewayKey
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "crud"}, &gk)).To(Succeed())
		Expect(gk.Spec.Models).To(Equal([]string{"chat"}))
		Expect(gk.Spec.Disabled).To(BeTrue())
		Expect(gk.Generation).To(Equal(int64(2)))

		gk.Spec.KeyHash = "lgw_crud000000_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn"
		err := k8sClient.Update(suiteCtx, &gk)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(Equal(`GatewayKey.llmgw.dev "crud" is invalid: spec.keyHash: Invalid value: keyHash must be the sha256: hash of the key, never the plaintext key`))

		var pe v1alpha1.ProviderEndpoint
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "crud"}, &pe)).To(Succeed())
		pe.Spec.Service = &v1alpha1.ServiceReference{Name: "x", Port: 80}
		err = k8sClient.Update(suiteCtx, &pe)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(Equal(`ProviderEndpoint.llmgw.dev "crud" is invalid: spec: Invalid value: exactly one of url or service must be set`))
		pe.Spec.URL = ""
		Expect(k8sClient.Update(suiteCtx, &pe)).To(Succeed())

		var ma v1alpha1.ModelAlias
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "crud"}, &ma)).To(Succeed())
		Expect(ma.Spec.Fallbacks).To(HaveLen(2))
		ma.Spec.Fallbacks = ma.Spec.Fallbacks[:1]
		ma.Spec.Primary.Model = "two words"
		err = k8sClient.Update(suiteCtx, &ma)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(Equal(`ModelAlias.llmgw.dev "crud" is invalid: spec.primary.model: Invalid value: "two words": spec.primary.model in body should match '^\S+$'`))

		for _, o := range []client.Object{&gk, &pe, &ma} {
			Expect(k8sClient.Delete(suiteCtx, o)).To(Succeed())
			Expect(apierrors.IsNotFound(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(o), o))).To(BeTrue())
		}
	})

	It("accepts the GatewayKey that `llmgw keys create --output yaml` prints, and refuses the ids it refuses", func() {
		exp := time.Now().Add(time.Hour).Truncate(time.Second)
		_, entry, err := keys.Create(keys.CreateOptions{ID: "printed.team-a", Models: []string{"chat", "embed"}, RPM: 90, Burst: 3, ExpiresAt: &exp})
		Expect(err).NotTo(HaveOccurred())
		doc, err := keys.GatewayKeyYAML(entry, ns)
		Expect(err).NotTo(HaveOccurred())
		Expect(create(string(doc), ns)).To(Succeed())
		var gk v1alpha1.GatewayKey
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: entry.ID}, &gk)).To(Succeed())
		Expect(gk.Spec.KeyHash).To(Equal(entry.Hash))
		Expect(gk.Spec.KeyPrefix).To(Equal(entry.Prefix))
		Expect(gk.Spec.Models).To(Equal([]string{"chat", "embed"}))
		Expect(gk.Spec.RateLimit).To(Equal(&v1alpha1.RateLimit{RequestsPerMinute: 90, Burst: 3}))
		Expect(gk.Spec.ExpiresAt.Time.Equal(exp)).To(BeTrue())
		Expect(k8sClient.Delete(suiteCtx, &gk)).To(Succeed())

		// Both sides apply the same name rule.
		for _, id := range []string{"a..b", "a-.b", "-a", "A", strings.Repeat("a", 254)} {
			_, _, err := keys.Create(keys.CreateOptions{ID: id, Models: []string{"*"}})
			Expect(err).To(HaveOccurred(), "llmgw keys accepts %q", id)
			apiErr := create(`
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: "`+id+`"}
spec: {keyHash: `+hash+`, keyPrefix: lgw_badname000, models: ["*"]}`, ns)
			Expect(apiErr).To(HaveOccurred(), "the API server accepts %q", id)
		}
	})

	It("shows the effective defaults in what it stores (kubectl get -o yaml), as the gateways apply them", func() {
		apply(k8sClient, `
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: defaults}
spec: {protocol: openai, url: "https://api.example.com/v1"}
---
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: defaults}
spec: {primary: {provider: defaults, model: m}}
---
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: defaults-partial}
spec: {primary: {provider: defaults, model: m}, timeouts: {total: 5s}}
---
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: defaults}
spec: {keyHash: `+hash+`, keyPrefix: lgw_defaults00, models: ["*"]}`, ns)
		var pe v1alpha1.ProviderEndpoint
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "defaults"}, &pe)).To(Succeed())
		Expect(pe.Spec.Timeouts).To(Equal(&v1alpha1.ProviderTimeouts{Connect: "2s", ResponseHeader: "10s"}))
		var ma v1alpha1.ModelAlias
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "defaults"}, &ma)).To(Succeed())
		Expect(ma.Spec.MaxFallbacks).To(Equal(ptr.To[int32](1)))
		Expect(ma.Spec.Timeouts).To(Equal(&v1alpha1.AliasTimeouts{Total: "60s", Attempt: "20s", FirstChunk: "10s", Idle: "15s"}))
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "defaults-partial"}, &ma)).To(Succeed())
		Expect(ma.Spec.Timeouts).To(Equal(&v1alpha1.AliasTimeouts{Total: "5s", Attempt: "20s", FirstChunk: "10s", Idle: "15s"}))
		var gk v1alpha1.GatewayKey
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "defaults"}, &gk)).To(Succeed())
		Expect(gk.Spec.RateLimit).To(Equal(&v1alpha1.RateLimit{RequestsPerMinute: 60, Burst: 10}))
		var raw map[string]any
		u := objectsFromYAML("apiVersion: llmgw.dev/v1alpha1\nkind: GatewayKey\nmetadata: {name: defaults}", ns)[0]
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "defaults"}, u)).To(Succeed())
		raw = u.Object["spec"].(map[string]any)
		Expect(raw).To(HaveKeyWithValue("disabled", false), "kubectl get -o yaml shows disabled: false")

		By("compiled, the stored defaults give the snapshot the gateways would build from the bare specs")
		in := Inputs{Namespace: ns, Now: time.Now(), Providers: []v1alpha1.ProviderEndpoint{pe}, Secrets: map[string][]string{}}
		bare := v1alpha1.ModelAlias{ObjectMeta: ma.ObjectMeta, Spec: v1alpha1.ModelAliasSpec{Primary: ma.Spec.Primary, Timeouts: &v1alpha1.AliasTimeouts{Total: "5s"}}}
		withDefaults, _ := Compile(Inputs{Namespace: in.Namespace, Now: in.Now, Providers: in.Providers, Secrets: in.Secrets, Aliases: []v1alpha1.ModelAlias{ma}, Keys: []v1alpha1.GatewayKey{gk}})
		bareKey := gk.DeepCopy()
		bareKey.Spec.RateLimit = nil
		without, _ := Compile(Inputs{Namespace: in.Namespace, Now: in.Now, Providers: []v1alpha1.ProviderEndpoint{{ObjectMeta: pe.ObjectMeta, Spec: v1alpha1.ProviderEndpointSpec{Protocol: "openai", URL: pe.Spec.URL}}},
			Secrets: in.Secrets, Aliases: []v1alpha1.ModelAlias{bare}, Keys: []v1alpha1.GatewayKey{*bareKey}})
		Expect(withDefaults.Version).NotTo(BeEmpty())
		Expect(withDefaults.Version).To(Equal(without.Version))
	})

	It("is listed under the llmgw category with short names", func() {
		for _, r := range []struct{ plural, short string }{
			{"providerendpoints", "pe"}, {"modelaliases", "ma"}, {"gatewaykeys", "gk"},
		} {
			var crd apiextensionsv1.CustomResourceDefinition
			Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: r.plural + ".llmgw.dev"}, &crd)).To(Succeed())
			Expect(crd.Spec.Names.Categories).To(Equal([]string{"llmgw"}))
			Expect(crd.Spec.Names.ShortNames).To(Equal([]string{r.short}))
			Expect(crd.Spec.Scope).To(Equal(apiextensionsv1.NamespaceScoped))
		}
	})
})
