package controllers

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// Keys a platform team can run: rotation with a grace period, a warning
// before expiry, and owner labels on the usage records — against a real
// API server, with the CRDs' validation and a running controller.

var _ = Describe("GatewayKey rotation validation", func() {
	const ns = "validation"
	const hash = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	const oldHash = "sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
	// A syntactically valid key that authorizes nothing anywhere.
	const plaintext = "lgw_oldkey0000_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn"

	BeforeEach(func() {
		err := k8sClient.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
	})

	doc := func(name, previous string) string {
		return `
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: ` + name + `}
spec:
  keyHash: ` + hash + `
  keyPrefix: lgw_newkey0000
  models: ["*"]
  previous: ` + previous
	}

	DescribeTable("spec.previous", func(name, previous, want string) {
		err := create(doc(name, previous), ns)
		if want == "" {
			Expect(err).NotTo(HaveOccurred())
			return
		}
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(Equal(want), "full message:\n%s", err.Error())
		Expect(err.Error()).NotTo(ContainSubstring(plaintext[15:]), "the API server repeated the plaintext key")
	},
		Entry("valid", "rotated", `{keyHash: `+oldHash+`, keyPrefix: lgw_oldkey0000, acceptedUntil: "2030-01-01T00:00:00Z"}`, ""),
		Entry("a plaintext key as previous.keyHash, not repeated", "plaintext-previous",
			`{keyHash: `+plaintext+`, keyPrefix: lgw_oldkey0000, acceptedUntil: "2030-01-01T00:00:00Z"}`,
			`GatewayKey.llmgw.dev "plaintext-previous" is invalid: spec.previous.keyHash: Invalid value: previous.keyHash must be the sha256: hash of the previous key, never the plaintext key`),
		Entry("previous.keyPrefix is keyPrefix", "same-prefix",
			`{keyHash: `+oldHash+`, keyPrefix: lgw_newkey0000, acceptedUntil: "2030-01-01T00:00:00Z"}`,
			`GatewayKey.llmgw.dev "same-prefix" is invalid: spec.previous.keyPrefix: Invalid value: previous.keyPrefix must differ from keyPrefix: a rotated key has a new prefix`),
		Entry("an upper-case previous.keyHash", "upper-previous",
			`{keyHash: "sha256:FEDCBA9876543210fedcba9876543210fedcba9876543210fedcba9876543210", keyPrefix: lgw_oldkey0000, acceptedUntil: "2030-01-01T00:00:00Z"}`,
			`GatewayKey.llmgw.dev "upper-previous" is invalid: spec.previous.keyHash: Invalid value: "sha256:FEDCBA9876543210fedcba9876543210fedcba9876543210fedcba9876543210": previous.keyHash must be sha256: followed by 64 lowercase hex characters`),
		// Longer than any prefix: refused by its length, not its pattern, so
		// the value is not repeated either.
		Entry("a plaintext key as previous.keyPrefix, not repeated", "plaintext-prefix",
			`{keyHash: `+oldHash+`, keyPrefix: `+plaintext+`, acceptedUntil: "2030-01-01T00:00:00Z"}`,
			`GatewayKey.llmgw.dev "plaintext-prefix" is invalid: [spec.previous.keyPrefix: Too long: may not be more than 14 bytes, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`),
		Entry("no acceptedUntil", "no-until", `{keyHash: `+oldHash+`, keyPrefix: lgw_oldkey0000}`,
			`GatewayKey.llmgw.dev "no-until" is invalid: [spec.previous.acceptedUntil: Required value, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`),
	)

	It("refuses a plaintext key in previous.keyHash on update too, without repeating it", func() {
		Expect(create(doc("rotated-later", `{keyHash: `+oldHash+`, keyPrefix: lgw_oldkey0000, acceptedUntil: "2030-01-01T00:00:00Z"}`), ns)).To(Succeed())
		var gk v1alpha1.GatewayKey
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "rotated-later"}, &gk)).To(Succeed())
		Expect(gk.Spec.Previous).NotTo(BeNil())
		Expect(gk.Spec.Previous.AcceptedUntil.UTC()).To(Equal(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)))
		gk.Spec.Previous.KeyHash = plaintext
		err := k8sClient.Update(suiteCtx, &gk)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(Equal(`GatewayKey.llmgw.dev "rotated-later" is invalid: spec.previous.keyHash: Invalid value: previous.keyHash must be the sha256: hash of the previous key, never the plaintext key`))
	})
})

// rotationOf reads a key's status.rotation as "inGrace/previousFingerprint/graceEndsAt"
// ("none" without one).
func rotationOf(ns, name string) func() string {
	return func() string {
		var gk v1alpha1.GatewayKey
		if err := k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: name}, &gk); err != nil {
			return "get: " + err.Error()
		}
		r := gk.Status.Rotation
		if r == nil {
			return "none"
		}
		return fmt.Sprintf("%v/%s/%s", r.InGrace, r.PreviousFingerprint, r.GraceEndsAt.UTC().Format(time.RFC3339))
	}
}

// eventCount is how many times the controller recorded reason about one
// object (an Event recorded again shows as one with a series).
func eventCount(ns, kind, name, reason string) func() int {
	return func() int {
		var evs eventsv1.EventList
		Expect(k8sClient.List(suiteCtx, &evs, client.InNamespace(ns))).To(Succeed())
		n := 0
		for _, e := range evs.Items {
			if e.ReportingController == FieldOwner && e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason {
				n++
				if e.Series != nil {
					n += int(e.Series.Count) - 1
				}
			}
		}
		return n
	}
}

func gaugeValue(g prometheus.Gauge) func() float64 {
	return func() float64 {
		var m dto.Metric
		Expect(g.Write(&m)).To(Succeed())
		return m.GetGauge().GetValue()
	}
}

func publishedKey(ns, id string) func() *snapshot.Key {
	return func() *snapshot.Key {
		for _, k := range published(ns).Keys {
			if k.ID == id {
				return &k
			}
		}
		return nil
	}
}

func publishedGroupOwners(ns, name string) func() map[string]string {
	return func() map[string]string {
		for _, g := range published(ns).Groups {
			if g.Name == name {
				return g.Owners
			}
		}
		return map[string]string{"": "no such group"}
	}
}

// rfc3339 is t as a manifest writes it (whole seconds, UTC).
func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

var _ = Describe("key lifecycle", func() {
	var (
		ns string
		r  *Reconciler
	)
	BeforeEach(func() {
		ns = newNamespace()
		var stop func()
		r, stop = startManager(cfg, Options{Namespace: ns, Debounce: 50 * time.Millisecond, DebounceMax: 500 * time.Millisecond,
			KeyExpiryWarning: time.Hour, OwnerLabels: []string{"team", "example.com/cost-center"}})
		DeferCleanup(stop)
		apply(k8sClient, `
apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: alpha}
spec: {protocol: openai, url: "http://127.0.0.1:9001"}
---
apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata: {name: chat}
spec: {primary: {provider: alpha, model: a1}}`, ns)
	})

	It("serves a rotated key's previous key until acceptedUntil, says so in status, kubectl get and Events, and flips on time", func() {
		newHash, oldHash := keyformat.Hash("lifecycle-new"), keyformat.Hash("lifecycle-old")
		longUntil := time.Now().Add(time.Hour).Truncate(time.Second)
		// Short enough to wait for, long enough for the first status to
		// show the grace running on a busy machine.
		shortUntil := time.Now().Add(8 * time.Second).Truncate(time.Second)
		key := func(name, prefix, hash, oldPrefix, oldHash string, until time.Time) string {
			return `
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: ` + name + `}
spec:
  keyHash: ` + hash + `
  keyPrefix: ` + prefix + `
  models: [chat]
  previous: {keyHash: ` + oldHash + `, keyPrefix: ` + oldPrefix + `, acceptedUntil: "` + rfc3339(until) + `"}`
		}
		apply(k8sClient, key("long", "lgw_longnew000", newHash, "lgw_longold000", oldHash, longUntil)+"\n---"+
			key("short", "lgw_shortnew00", keyformat.Hash("short-new"), "lgw_shortold00", keyformat.Hash("short-old"), shortUntil), ns)

		By("the snapshot carries the previous key, for the gateways to accept it")
		Eventually(publishedKey(ns, "long"), eventually).Should(HaveField("Previous",
			HaveValue(Equal(snapshot.PreviousKey{Prefix: "lgw_longold000", Hash: oldHash, Until: longUntil.UTC()}))))
		Eventually(keyReady(ns, "long"), eventually).Should(Equal(inSnapshot))

		By("status.rotation, the Event and the gauge")
		oldFP, newFP := keyformat.Fingerprint(oldHash), keyformat.Fingerprint(newHash)
		Eventually(rotationOf(ns, "long"), eventually).Should(Equal(fmt.Sprintf("true/%s/%s", oldFP, rfc3339(longUntil))))
		Eventually(eventsOf(ns, "GatewayKey", "long"), eventually).Should(ContainElement("Normal/" + v1alpha1.EventKeyRotated))
		note := eventNote(ns, "GatewayKey", "long", v1alpha1.EventKeyRotated)
		for _, want := range []string{oldFP, newFP, rfc3339(longUntil)} {
			Expect(note).To(ContainSubstring(want))
		}

		By("kubectl get gk shows the rotation and when its grace ends")
		cols, row := gatewayKeyRow(ns, "long")
		Expect(cols).To(ContainElements("Rotation", "GraceEnds"))
		Expect(row["Rotation"]).To(BeTrue())
		Expect(row["GraceEnds"]).To(Equal(rfc3339(longUntil)))

		By("the short grace runs, then ends on time with nothing else changing")
		Eventually(rotationOf(ns, "short"), time.Until(shortUntil)).Should(HavePrefix("true/"))
		Eventually(gaugeValue(keysInRotationGrace), time.Until(shortUntil)).Should(Equal(2.0))
		Eventually(rotationOf(ns, "short"), eventually).Should(HavePrefix("false/"))
		Expect(time.Now()).To(BeTemporally(">=", shortUntil), "the grace was reported over before acceptedUntil")
		Eventually(eventsOf(ns, "GatewayKey", "short"), eventually).Should(ContainElement("Normal/" + v1alpha1.EventRotationGraceEnded))
		Eventually(gaugeValue(keysInRotationGrace), eventually).Should(Equal(1.0))
		// The previous key stays in the snapshot: the gateways answer it
		// 401 key_rotated, not invalid_api_key.
		Expect(publishedKey(ns, "short")()).To(HaveField("Previous.Prefix", "lgw_shortold00"))
		for _, reason := range []string{v1alpha1.EventKeyRotated, v1alpha1.EventRotationGraceEnded} {
			Consistently(eventCount(ns, "GatewayKey", "short", reason), 2*time.Second).Should(Equal(1), "%s recorded once", reason)
		}
		Expect(eventCount(ns, "GatewayKey", "long", v1alpha1.EventRotationGraceEnded)()).To(Equal(0))

		By("removing spec.previous ends the rotation")
		var gk v1alpha1.GatewayKey
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "long"}, &gk)).To(Succeed())
		gk.Spec.Previous = nil
		Expect(k8sClient.Update(suiteCtx, &gk)).To(Succeed())
		Eventually(rotationOf(ns, "long"), eventually).Should(Equal("none"))
		Eventually(publishedKey(ns, "long"), eventually).Should(HaveField("Previous", BeNil()))
		Eventually(gaugeValue(keysInRotationGrace), eventually).Should(Equal(0.0))
	})

	It("warns ahead of a key's expiry: the ExpiringSoon condition, a Warning Event and the gauge, on time", func() {
		soon := time.Now().Add(30 * time.Minute).Truncate(time.Second)
		// Its warning (an hour before) starts in a few seconds.
		later := time.Now().Add(time.Hour + 8*time.Second).Truncate(time.Second)
		key := func(name, prefix, expires string) string {
			return `
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: ` + name + `}
spec: {keyHash: ` + keyformat.Hash(name) + `, keyPrefix: ` + prefix + `, models: [chat]` + expires + `}`
		}
		apply(k8sClient, key("soon", "lgw_soon000000", `, expiresAt: "`+rfc3339(soon)+`"`)+"\n---"+
			key("later", "lgw_later00000", `, expiresAt: "`+rfc3339(later)+`"`)+"\n---"+key("never", "lgw_never00000", ""), ns)

		Eventually(keyCond(ns, "soon", v1alpha1.ConditionExpiringSoon), eventually).Should(Equal("True/" + v1alpha1.ReasonExpiresSoon))
		Expect(keyMessage(ns, "soon", v1alpha1.ConditionExpiringSoon)).To(ContainSubstring(rfc3339(soon)))
		Eventually(keyReady(ns, "soon"), eventually).Should(Equal(inSnapshot), "a key expiring soon is still served")
		Eventually(eventsOf(ns, "GatewayKey", "soon"), eventually).Should(ContainElement("Warning/" + v1alpha1.EventKeyExpiringSoon))
		Expect(eventNote(ns, "GatewayKey", "soon", v1alpha1.EventKeyExpiringSoon)).To(ContainSubstring(rfc3339(soon)))
		Eventually(keyCond(ns, "never", v1alpha1.ConditionExpiringSoon), eventually).Should(Equal("False/" + v1alpha1.ReasonNotExpiringSoon))

		By("a key whose warning starts later is not expiring soon yet, then is, on time")
		Eventually(keyCond(ns, "later", v1alpha1.ConditionExpiringSoon), time.Until(later.Add(-time.Hour))).Should(Equal("False/" + v1alpha1.ReasonNotExpiringSoon))
		Eventually(gaugeValue(keysExpiringSoon), time.Until(later.Add(-time.Hour))).Should(Equal(1.0))
		Eventually(keyCond(ns, "later", v1alpha1.ConditionExpiringSoon), eventually).Should(Equal("True/" + v1alpha1.ReasonExpiresSoon))
		Expect(time.Now()).To(BeTemporally(">=", later.Add(-time.Hour)), "ExpiringSoon before the warning window")
		Eventually(eventsOf(ns, "GatewayKey", "later"), eventually).Should(ContainElement("Warning/" + v1alpha1.EventKeyExpiringSoon))
		Eventually(gaugeValue(keysExpiringSoon), eventually).Should(Equal(2.0))
		Consistently(eventCount(ns, "GatewayKey", "soon", v1alpha1.EventKeyExpiringSoon), 2*time.Second).Should(Equal(1))
		Expect(eventCount(ns, "GatewayKey", "never", v1alpha1.EventKeyExpiringSoon)()).To(Equal(0))
	})

	It("copies the labels --owner-labels names, and only those, and recompiles when they change", func() {
		apply(k8sClient, `
apiVersion: llmgw.dev/v1alpha1
kind: BudgetGroup
metadata: {name: platform, labels: {team: platform, tier: gold}}
spec: {tokensPerMinute: 100000}
---
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: owned, labels: {team: a, example.com/cost-center: cc-1, app: web}}
spec: {keyHash: `+keyformat.Hash("owned")+`, keyPrefix: lgw_owned00000, models: [chat], group: platform}
---
apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata: {name: unowned, labels: {app: web}}
spec: {keyHash: `+keyformat.Hash("unowned")+`, keyPrefix: lgw_unowned000, models: [chat]}`, ns)
		Eventually(publishedKey(ns, "owned"), eventually).Should(HaveField("Owners", Equal(map[string]string{"team": "a", "example.com/cost-center": "cc-1"})))
		Expect(publishedKey(ns, "unowned")()).To(HaveField("Owners", BeNil()))
		Eventually(publishedGroupOwners(ns, "platform"), eventually).Should(Equal(map[string]string{"team": "platform"}))

		relabel := func(obj client.Object, k, v string) {
			GinkgoHelper()
			Expect(k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
			generation := obj.GetGeneration()
			labels := maps.Clone(obj.GetLabels())
			labels[k] = v
			obj.SetLabels(labels)
			Expect(k8sClient.Update(suiteCtx, obj)).To(Succeed())
			Expect(obj.GetGeneration()).To(Equal(generation), "a label change is no new generation")
		}
		By("a key's owner label changes")
		relabel(&v1alpha1.GatewayKey{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owned"}}, "team", "b")
		Eventually(publishedKey(ns, "owned"), eventually).Should(HaveField("Owners", Equal(map[string]string{"team": "b", "example.com/cost-center": "cc-1"})))
		By("a group's owner label changes")
		relabel(&v1alpha1.BudgetGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "platform"}}, "team", "platform-2")
		Eventually(publishedGroupOwners(ns, "platform"), eventually).Should(Equal(map[string]string{"team": "platform-2"}))

		By("a label that is no owner label changes nothing")
		version := published(ns).Version
		relabel(&v1alpha1.GatewayKey{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owned"}}, "app", "api")
		relabel(&v1alpha1.BudgetGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "platform"}}, "tier", "silver")
		Consistently(func() string { return published(ns).Version }, 2*time.Second).Should(Equal(version))
		Expect(r.Writes()).To(BeNumerically(">=", 3))
	})
})

// gatewayKeyRow is `kubectl get gk` of one key: the default columns, and
// that key's cells by column name.
func gatewayKeyRow(ns, name string) ([]string, map[string]any) {
	GinkgoHelper()
	raw, err := kubernetes.NewForConfigOrDie(cfg).RESTClient().Get().AbsPath("/apis/llmgw.dev/v1alpha1/namespaces", ns, "gatewaykeys", name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(suiteCtx)
	Expect(err).NotTo(HaveOccurred())
	var t metav1.Table
	Expect(json.Unmarshal(raw, &t)).To(Succeed())
	Expect(t.Rows).To(HaveLen(1))
	var cols []string
	row := map[string]any{}
	for i, c := range t.ColumnDefinitions {
		if c.Priority == 0 {
			cols = append(cols, c.Name)
		}
		row[c.Name] = t.Rows[0].Cells[i]
	}
	Expect(strings.Join(cols, " ")).NotTo(BeEmpty())
	return cols, row
}
