package kind_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/test/e2e/specs"
)

// One Ordered container: every spec runs against the system BeforeSuite
// deployed, and ContinueOnFailure lets the later specs (the secrets scan
// above all) run after an earlier one failed.
var _ = Describe("llmgw on kind", Ordered, ContinueOnFailure, func() {
	var (
		root, tmp, llmgw string
		k                kube
		run              = fmt.Sprintf("%x", time.Now().Unix()&0xffffff) // names of this run's objects
		marker           = "zqxprompt" + run                             // in every prompt; must never be stored or logged
		fwGW             *forward                                        // svc/llmgw-gateway 80
		fwPod            [2]*forward                                     // pod/llmgw-gateway-N 8080
		fwAlpha, fwBeta  *forward                                        // svc/mock-alpha 9001, svc/mock-beta 9002
		keys             = map[string]gwKey{}
		target           *specs.Target
		evidence         []string // logs of pods captured before the suite deleted them, for the scan
		cleanup          []string // objects this run created, deleted in AfterAll
	)
	key := func(role string) string { return keys[role].plaintext }
	replicas := func() []string { return []string{fwPod[0].URL(), fwPod[1].URL()} }
	allForwards := func() []*forward { return []*forward{fwGW, fwPod[0], fwPod[1], fwAlpha, fwBeta} }

	BeforeAll(func(ctx SpecContext) {
		root = repoRoot()
		k = kube{root: root}
		tmp = GinkgoT().TempDir()

		By("building llmgw (for llmgw keys create)")
		llmgw = buildLLMGW(ctx, root, tmp)

		By("deleting what an earlier, interrupted run may have left (objects named e2e-*/hot-*, ledger readers)")
		deleteLeftovers(ctx, k)

		By("kubectl apply -f config/samples/")
		out2, err := k.run(ctx, nil, "apply", "-f", filepath.Join(root, "config", "samples")+"/")
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Print(out2)
		Expect(k.apply(ctx, fallbackAliasYAML)).To(Succeed())
		cleanup = append(cleanup, "modelalias/e2e-fallback")

		By("creating this run's keys: llmgw keys create ... --entry-out - | kubectl apply -f -")
		for _, kk := range []struct {
			role, models string
			rpm, burst   int
		}{
			{"all", "*", 100000, 10000},
			{"restricted", "e2e-fallback,chat-restricted", 100000, 10000},
			{"limited", "*", 1, 3},
			{"load", "*", 100000, 10000},
			{"toggle", "*", 100000, 10000},
			{"persist", "*", 100000, 10000},
			{"mockdel", "*", 100000, 10000},
		} {
			id := "e2e-" + kk.role + "-" + run
			keys[kk.role] = createKey(ctx, k, llmgw, tmp, id, kk.models, kk.rpm, kk.burst)
			cleanup = append(cleanup, "gatewaykey/"+id)
		}
		budgetID := "e2e-budget-" + run
		keys["budget"] = createBudgetKey(ctx, k, llmgw, tmp, budgetID, "0.000001")
		cleanup = append(cleanup, "gatewaykey/"+budgetID)
		objs := []string{"providerendpoint/alpha", "providerendpoint/beta", "modelalias/chat-alpha", "modelalias/chat-beta",
			"modelalias/chat-restricted", "modelalias/embed-alpha", "modelalias/e2e-fallback"}
		for _, kk := range keys {
			objs = append(objs, "gatewaykey/"+kk.id)
		}
		waitReady(ctx, k, 2*time.Minute, objs...)

		By("port-forwards: svc/llmgw-gateway, each gateway pod, svc/mock-alpha, svc/mock-beta")
		fwGW = startForward(k, "svc/llmgw-gateway", 80, time.Minute)
		fwPod[0] = startForward(k, "pod/llmgw-gateway-0", 8080, time.Minute)
		fwPod[1] = startForward(k, "pod/llmgw-gateway-1", 8080, time.Minute)
		fwAlpha = startForward(k, "svc/mock-alpha", 9001, time.Minute)
		fwBeta = startForward(k, "svc/mock-beta", 9002, time.Minute)
		for _, f := range allForwards() {
			GinkgoWriter.Printf("%s → %s\n", f, f.URL())
		}

		By("waiting until every gateway pod serves this run's keys")
		for _, base := range append(replicas(), fwGW.URL()) {
			for role := range keys {
				Eventually(func() int { return specs.ModelsStatus(ctx, base, key(role)) }).WithContext(ctx).
					WithTimeout(90*time.Second).WithPolling(250*time.Millisecond).Should(Equal(http.StatusOK), "key %s through %s", role, base)
			}
		}

		target = &specs.Target{
			Gateway: fwGW.URL(), Replicas: replicas(), MockAlpha: fwAlpha.URL(), MockBeta: fwBeta.URL(),
			KeyAll: key("all"), KeyRestricted: key("restricted"), KeyLimited: key("limited"), LimitedBurst: 3,
			Restricted: []string{"e2e-fallback", "chat-restricted"},
			AllAliases: func(ctx context.Context) ([]string, error) { return servedAliases(ctx, k) },
			Fallback:   "e2e-fallback", BetaAlias: "chat-beta", Marker: marker,
		}
	}, NodeTimeout(30*time.Minute))

	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			dumpDiagnostics(k, allForwards())
		}
	})

	AfterAll(func(ctx SpecContext) {
		for _, f := range allForwards() {
			if f != nil {
				f.Stop()
			}
		}
		if len(cleanup) > 0 {
			By("deleting this run's objects")
			out, err := k.run(ctx, nil, append([]string{"-n", ns, "delete", "--ignore-not-found", "--wait=false"}, cleanup...)...)
			GinkgoWriter.Print(out)
			if err != nil {
				GinkgoWriter.Printf("cleanup: %v\n", err)
			}
		}
	}, NodeTimeout(2*time.Minute))

	Describe("client contract through the Service (port-forward svc/llmgw-gateway), mocks counted through theirs", func() {
		specs.Contract(func() *specs.Target { return target })
	})

	// After the contract, whose usage check wants every record of the key "all" to be one of its requests.
	Describe("agents' traffic through the Service: tools, images, json_schema, embeddings (embed-alpha of config/samples)", func() {
		specs.Agents(func() *specs.AgentsTarget {
			return &specs.AgentsTarget{Gateway: fwGW.URL(), MockAlpha: fwAlpha.URL(), MockBeta: fwBeta.URL(), Key: key("all"),
				AlphaAlias: "chat-alpha", BetaAlias: "chat-beta", EmbedAlias: "embed-alpha", Marker: marker}
		})
	})

	// After the contract, as the agents' specs: new requests of the key "all", found by request id.
	Describe("/v1/messages and /v1/responses through the Service with the official SDKs (alpha with responsesAPI: passed through)", func() {
		specs.Endpoints(func() *specs.EndpointsTarget {
			return &specs.EndpointsTarget{AgentsTarget: specs.AgentsTarget{Gateway: fwGW.URL(), MockAlpha: fwAlpha.URL(), MockBeta: fwBeta.URL(),
				Key: key("all"), AlphaAlias: "chat-alpha", BetaAlias: "chat-beta", EmbedAlias: "embed-alpha", Marker: marker},
				BudgetKey: key("budget")}
		})
	})

	Describe("key rotation with llmgw keys rotate and kubectl, through the Service and each gateway pod", func() {
		specs.Rotation(func() *specs.RotationTarget {
			id := "e2e-rotated-" + run
			cleanup = append(cleanup, "gatewaykey/"+id)
			return &specs.RotationTarget{Gateway: fwGW.URL(), Replicas: replicas(), Alias: "chat-alpha", Marker: marker, KeyID: id,
				CreateKey: func(ctx context.Context, id string) string {
					return createKey(ctx, k, llmgw, tmp, id, "*", 100000, 10000).plaintext
				},
				RotateKey: func(ctx context.Context, id string, grace time.Duration) string {
					return rotateKey(ctx, k, llmgw, tmp, id, grace)
				},
				RotationShown: func(ctx context.Context, id string) (bool, []string) {
					return rotationShown(ctx, k, id)
				},
			}
		})
	})

	Describe("kubectl", func() {
		It("rejects at apply a GatewayKey whose keyHash is a plaintext key, with a clear message that does not echo the key", func(ctx SpecContext) {
			plain, prefix, _, err := keyformat.Generate()
			Expect(err).NotTo(HaveOccurred())
			name := "e2e-plaintext-" + run
			stdout, err := k.run(ctx, []byte(plaintextGatewayKeyYAML(name, plain, prefix)), "apply", "-f", "-")
			Expect(err).To(HaveOccurred(), "kubectl apply accepted a plaintext key: %s", redact(stdout))
			msg := err.Error() + stdout
			GinkgoWriter.Printf("kubectl apply said: %s\n", keyformat.Redact(msg))
			Expect(msg).To(ContainSubstring("keyHash must be the sha256: hash of the key, never the plaintext key"))
			Expect(keyformat.LooksLikeKey(msg)).To(BeFalse(), "the API server's error echoes the plaintext key")
			Expect(msg).NotTo(ContainSubstring(plain[len(prefix):]), "the API server's error echoes the key's secret part")
			_, err = k.run(ctx, nil, "-n", ns, "get", "gatewaykey", name)
			Expect(err).To(MatchError(ContainSubstring("NotFound")), "the rejected GatewayKey was stored")

			By("a malformed hash gets its own message")
			_, err = k.run(ctx, []byte(plaintextGatewayKeyYAML(name, "sha256:NOT-HEX", prefix)), "apply", "-f", "-")
			Expect(err).To(MatchError(ContainSubstring("keyHash must be sha256: followed by 64 lowercase hex characters")))
		})

		It("shows each object's status in the printer columns of kubectl get", func(ctx SpecContext) {
			out := k.must(ctx, "get", "gatewaykeys,modelaliases,providerendpoints")
			GinkgoWriter.Printf("kubectl get gatewaykeys,modelaliases,providerendpoints -n %s\n%s", ns, redact(out))
			tables := parseTables(out)
			// Accepted, ResolvedRefs and Programmed of every kind; Programmed
			// is True once both gateway pods reported running the snapshot.
			served := func(row map[string]string, what string) {
				GinkgoHelper()
				for _, col := range []string{"ACCEPTED", "RESOLVEDREFS", "PROGRAMMED"} {
					Expect(row).To(HaveKeyWithValue(col, "True"), "%s row %v", what, row)
				}
				Expect(row).NotTo(HaveKey("READY"), "READY is in -o wide only")
			}
			gk := tables.row("gatewaykey.llmgw.dev/" + keys["all"].id)
			served(gk, "GatewayKey")
			// spec.disabled defaults to false in the schema, so the column says so.
			Expect(gk).To(HaveKeyWithValue("DISABLED", "false"))
			Expect(gk["PREFIX"]).To(HavePrefix("lgw_"))
			Expect(gk["FINGERPRINT"]).To(MatchRegexp(`^[0-9a-f]{12}$`))
			ma := tables.row("modelalias.llmgw.dev/chat-alpha")
			served(ma, "ModelAlias")
			Expect(ma).To(HaveKeyWithValue("PRIMARY", "alpha/alpha-large"))
			Expect(ma).To(HaveKeyWithValue("FALLBACK", "beta/beta-large"))
			pe := tables.row("providerendpoint.llmgw.dev/beta")
			served(pe, "ProviderEndpoint")
			Expect(pe).To(HaveKeyWithValue("PROTOCOL", "anthropic"))
			Expect(pe["URL"]).To(ContainSubstring("mock-beta"))

			By("-o wide adds Ready and its reason to every kind")
			wide := parseTables(k.must(ctx, "get", "gatewaykeys,modelaliases,providerendpoints", "-o", "wide"))
			for _, row := range []string{"gatewaykey.llmgw.dev/" + keys["all"].id, "modelalias.llmgw.dev/chat-alpha", "providerendpoint.llmgw.dev/beta"} {
				Expect(wide.row(row)).To(HaveKeyWithValue("READY", "True"), row)
				Expect(wide.row(row)).To(HaveKeyWithValue("REASON", "Serving"), row)
			}

			By("kubectl get -o yaml shows the defaults in effect")
			var gkObj struct {
				Spec struct {
					Disabled  *bool
					RateLimit map[string]int
				}
			}
			Expect(k.getJSON(ctx, &gkObj, "gatewaykey", keys["all"].id)).To(Succeed())
			Expect(gkObj.Spec.Disabled).To(HaveValue(BeFalse()))
			var fb struct{ Spec map[string]any }
			Expect(k.getJSON(ctx, &fb, "modelalias", "chat-alpha")).To(Succeed())
			Expect(fb.Spec).To(HaveKeyWithValue("maxFallbacks", BeNumerically("==", 1)))
			Expect(fb.Spec).To(HaveKeyWithValue("timeouts", HaveKeyWithValue("total", "60s")))
		})

		It("gives a ModelAlias with a dangling provider reference a Ready=False condition that says why, and serves everything else", func(ctx SpecContext) {
			name, missing := "e2e-dangling-"+run, "e2e-missing-"+run
			cleanup = append(cleanup, "modelalias/"+name)
			Expect(k.apply(ctx, aliasYAML(name, missing, "whatever", ""))).To(Succeed())
			DeferCleanup(func(ctx SpecContext) {
				_, _ = k.run(ctx, nil, "-n", ns, "delete", "modelalias", name, "--ignore-not-found")
			})
			var ready condition
			Eventually(func(g Gomega) {
				var o object
				g.Expect(k.getJSON(ctx, &o, "modelalias", name)).To(Succeed())
				c, ok := o.ready()
				g.Expect(ok).To(BeTrue(), "no Ready condition yet")
				ready = c
				g.Expect(c.Status).To(Equal("False"))
			}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
			GinkgoWriter.Printf("Ready condition: %+v\n", ready)
			Expect(ready.Reason).To(Equal("ProviderNotFound"))
			Expect(ready.Message).To(ContainSubstring(missing), "the message does not name the missing provider")
			row := parseTables(k.must(ctx, "get", "modelalias", name, "-o", "wide")).row(name)
			Expect(row).To(HaveKeyWithValue("ACCEPTED", "True"), "%v", row)
			Expect(row).To(HaveKeyWithValue("RESOLVEDREFS", "False"), "%v", row)
			Expect(row).To(HaveKeyWithValue("PROGRAMMED", "False"), "%v", row)
			Expect(row).To(HaveKeyWithValue("READY", "False"), "%v", row)
			Expect(row).To(HaveKeyWithValue("REASON", "ProviderNotFound"), "%v", row)
			By("kubectl describe shows a Warning Event that says why")
			Eventually(func() string {
				return k.must(ctx, "get", "events", "--field-selector", "involvedObject.kind=ModelAlias,involvedObject.name="+name)
			}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(And(ContainSubstring("Warning"), ContainSubstring("ProviderNotFound"), ContainSubstring(missing)))
			describe := k.must(ctx, "describe", "modelalias", name)
			GinkgoWriter.Printf("kubectl describe modelalias %s:\n%s", name, describe)
			Expect(describe).To(ContainSubstring("ProviderNotFound"))
			for _, base := range replicas() {
				ids, status, _, err := specs.Models(ctx, base, key("all"))
				Expect(err).NotTo(HaveOccurred())
				Expect(status).To(Equal(http.StatusOK))
				Expect(ids).NotTo(ContainElement(name), "a dangling alias is served by %s", base)
				Expect(ids).To(ContainElements("chat-alpha", "chat-beta", "e2e-fallback"), "one bad alias degraded the others on %s", base)
				Expect(specs.Status(ctx, base, key("all"), "e2e-fallback", marker+" still")).To(Equal(http.StatusOK))
			}
		})

		It("serves an alias whose fallback is broken through its primary, says Degraded, and keeps serving the key that lists only it", func(ctx SpecContext) {
			name, missing := "e2e-degraded-"+run, "e2e-missing-"+run
			cleanup = append(cleanup, "modelalias/"+name)
			Expect(k.apply(ctx, aliasYAML(name, "alpha", "alpha-large", "  fallbacks:\n  - provider: "+missing+"\n    model: whatever\n"))).To(Succeed())
			id := "e2e-degraded-" + run
			only := createKey(ctx, k, llmgw, tmp, id, name, 100000, 10000)
			cleanup = append(cleanup, "gatewaykey/"+id)
			DeferCleanup(func(ctx SpecContext) {
				_, _ = k.run(ctx, nil, "-n", ns, "delete", "modelalias/"+name, "gatewaykey/"+id, "--ignore-not-found")
			})
			By("Ready (served by every gateway pod), with ResolvedRefs False")
			waitReady(ctx, k, time.Minute, "modelalias/"+name, "gatewaykey/"+id)
			row := parseTables(k.must(ctx, "get", "modelalias", name, "-o", "wide")).row(name)
			Expect(row).To(HaveKeyWithValue("RESOLVEDREFS", "False"), "%v", row)
			Expect(row).To(HaveKeyWithValue("PROGRAMMED", "True"), "%v", row)
			Expect(row).To(HaveKeyWithValue("REASON", "Degraded"), "%v", row)
			By("the key that may use only this alias is not refused as unknown: it chats through the primary")
			for _, base := range replicas() {
				Expect(specs.Status(ctx, base, only.plaintext, name, marker+" degraded")).To(Equal(http.StatusOK), "through %s", base)
			}
		})
	})

	It("refuses a ModelAlias outside the controller's namespace at kubectl apply, naming the namespace to use", func(ctx SpecContext) {
		name := "e2e-elsewhere-" + run
		doc := strings.Replace(aliasYAML(name, "alpha", "alpha-small", ""), "namespace: "+ns, "namespace: default", 1)
		Expect(doc).To(ContainSubstring("namespace: default"))
		// The policy is in place once make deploy returned, but an API server
		// may take a moment to load a new policy: poll, with a deadline.
		var err error
		Eventually(func() error {
			err = k.apply(ctx, doc)
			if err == nil {
				_, _ = k.run(ctx, nil, "-n", "default", "delete", "modelalias", name, "--ignore-not-found")
			}
			return err
		}).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(time.Second).Should(HaveOccurred(), "a ModelAlias in namespace default was accepted")
		GinkgoWriter.Printf("kubectl apply in namespace default: %v\n", err)
		Expect(err.Error()).To(And(ContainSubstring("does not watch namespace default"), ContainSubstring("create it in namespace "+ns)))
		out, _ := k.run(ctx, nil, "-n", "default", "get", "modelaliases", "-o", "name")
		Expect(out).NotTo(ContainSubstring(name))
	})

	It("serves a GatewayKey from a watched team namespace (--watch-namespaces, its Role, the policy) under namespace/name, and refuses a ProviderEndpoint there", func(ctx SpecContext) {
		teamNamespaceSpec(ctx, k, root, llmgw, tmp, run, append(replicas(), fwGW.URL()), func(logs string) { evidence = append(evidence, logs) })
	}, NodeTimeout(8*time.Minute))

	It("hot-loads 20 new ModelAliases and 6 GatewayKey disable/enable changes in every gateway pod within 1 s p99, under a paced load with zero failures and no restarts", func(ctx SpecContext) {
		// Restarts are compared with the counts at the start of this spec, not
		// with zero: a kind node that was itself restarted (dockerd restarted
		// between two runs on one machine) restarts every pod once, before any
		// of this suite ran.
		before, err := pods(ctx, k)
		Expect(err).NotTo(HaveOccurred())

		By("a paced load (20/s, far below the load key's 100,000 rpm) alternating between the two gateway pods")
		var n atomic.Int64
		load := specs.StartLoad(20, func() int {
			base := replicas()[n.Add(1)%2]
			return specs.Status(ctx, base, key("load"), "chat-alpha", marker+" steady")
		})
		stopped := false
		defer func() {
			if !stopped {
				load.Stop()
			}
		}()

		var changes []specs.Change
		var names []string
		for i := range 20 {
			name := fmt.Sprintf("hot-%s-%02d", run, i)
			names = append(names, name)
			cleanup = append(cleanup, "modelalias/"+name)
			changes = append(changes, specs.Change{Name: "kubectl apply ModelAlias " + name,
				Apply:  func() error { return k.apply(ctx, aliasYAML(name, "beta", "beta-"+name, "")) },
				Served: func(ctx context.Context, base string) bool { return specs.ServesModel(ctx, base, key("all"), name) },
			})
		}
		for i := range 6 {
			disable := i%2 == 0
			want := map[bool]int{true: http.StatusUnauthorized, false: http.StatusOK}[disable]
			changes = append(changes, specs.Change{Name: fmt.Sprintf("kubectl patch GatewayKey disabled=%v", disable),
				Apply: func() error {
					_, err := k.run(ctx, nil, "-n", ns, "patch", "gatewaykey", keys["toggle"].id, "--type=merge",
						"-p", fmt.Sprintf(`{"spec":{"disabled":%v}}`, disable))
					return err
				},
				Served: func(ctx context.Context, base string) bool {
					return specs.ModelsStatus(ctx, base, key("toggle")) == want
				},
			})
		}
		hl, err := specs.MeasureHotLoad(ctx, changes, specs.HotLoadOptions{Replicas: replicas(), Timeout: 20 * time.Second, Poll: 20 * time.Millisecond})
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("hot-load latency (kind, 2 gateway pods)", hl.String())
		GinkgoWriter.Printf("hot-load on kind: %s\n%s", hl, hl.Table())

		By("every new alias answers a chat on every pod; a disabled key gets 401 key_disabled on chat")
		for _, base := range replicas() {
			for _, name := range names {
				Expect(specs.Status(ctx, base, key("all"), name, marker+" new")).To(Equal(http.StatusOK), "alias %s on %s", name, base)
			}
		}
		_, err = k.run(ctx, nil, "-n", ns, "patch", "gatewaykey", keys["toggle"].id, "--type=merge", "-p", `{"spec":{"disabled":true}}`)
		Expect(err).NotTo(HaveOccurred())
		for _, base := range replicas() {
			Eventually(func() string {
				r, err := specs.RawChat(ctx, base, key("toggle"), "chat-alpha", marker+" disabled", false)
				if err != nil {
					return err.Error()
				}
				return fmt.Sprintf("%d %s", r.Status, r.Err.Code)
			}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(20 * time.Millisecond).Should(Equal("401 key_disabled"))
		}

		statuses := load.Stop()
		stopped = true
		GinkgoWriter.Printf("steady load during the changes: %s\n", statuses)
		Expect(statuses.Only(http.StatusOK)).To(BeTrue(), "steady load across reloads: %s; want 200 only", statuses)
		Expect(statuses.Total()).To(BeNumerically(">=", 100), "the load ran too briefly to mean anything")

		after, err := pods(ctx, k)
		Expect(err).NotTo(HaveOccurred())
		for _, p := range before {
			q, ok := podByName(after, p.Name)
			Expect(ok).To(BeTrue(), "pod %s is gone", p.Name)
			Expect(q.UID).To(Equal(p.UID), "pod %s was replaced", p.Name)
			Expect(q.Restarts).To(Equal(p.Restarts), "pod %s restarted during the hot-load", p.Name)
		}
		Expect(hl.P99()).To(BeNumerically("<=", specs.HotLoadBound), "hot-load: %s", hl)
	}, NodeTimeout(10*time.Minute))

	It("keeps every record when a gateway pod is killed mid-stream: the StatefulSet brings it back on the same PVC, and the cut request has exactly one record, interrupted", func(ctx SpecContext) {
		const pod, claim = "llmgw-gateway-1", "data-llmgw-gateway-1"
		var sent specs.Sent
		By("records before: three through " + pod + ", two through llmgw-gateway-0")
		for i, f := range []*forward{fwPod[1], fwPod[1], fwPod[1], fwPod[0], fwPod[0]} {
			rep, err := specs.ChatSDK(ctx, f.URL(), key("persist"), "chat-alpha", marker+" before")
			Expect(err).NotTo(HaveOccurred())
			Expect(rep.Status).To(Equal(http.StatusOK), "%s", rep)
			sent.Add(specs.Want{RequestID: rep.RequestID, What: fmt.Sprintf("earlier request %d through %s", i, f.target),
				Model: "chat-alpha", Status: "success", HTTPStatus: 200, Fallbacks: -1})
		}
		list, err := pods(ctx, k)
		Expect(err).NotTo(HaveOccurred())
		old, ok := podByName(list, pod)
		Expect(ok).To(BeTrue())
		Expect(old.Claims).To(ContainElement(claim))
		pvcUID := strings.TrimSpace(k.must(ctx, "get", "pvc", claim, "-o", "jsonpath={.metadata.uid}"))
		logs, _ := k.run(ctx, nil, "-n", ns, "logs", pod, "--all-containers")
		evidence = append(evidence, logs)

		By("a slow stream through " + pod + " (100 chunks, 500 ms apart), read until its first chunk")
		streamCtx, stopStream := context.WithCancel(ctx)
		defer stopStream()
		resp, err := specs.Post(streamCtx, fwPod[1].URL(), key("persist"),
			specs.ChatBody("chat-alpha", specs.Prompt(marker+" slow", "alpha:chunks=100 alpha:chunk_delay_ms=500"), true))
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		cut := resp.Header.Get("X-Request-Id")
		Expect(cut).To(HavePrefix("req_"))
		firstChunk := make(chan struct{})
		var body bytes.Buffer
		var bodyMu sync.Mutex
		streamEnded := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			r := bufio.NewReader(resp.Body)
			seen := false
			for {
				line, err := r.ReadString('\n')
				bodyMu.Lock()
				body.WriteString(line)
				bodyMu.Unlock()
				if !seen && strings.Contains(line, `"content":"`) && !strings.Contains(line, `"content":""`) {
					seen = true
					close(firstChunk)
				}
				if err != nil {
					streamEnded <- err
					return
				}
			}
		}()
		Eventually(firstChunk).WithTimeout(30 * time.Second).Should(BeClosed())

		By("kubectl delete pod " + pod + " --grace-period=1: SIGTERM, then SIGKILL while the stream is still running")
		// The default grace period (40 s) would let the gateway drain the
		// stream for --drain-timeout (30 s) and finalize it; a kill is what
		// leaves a request in progress for the ledger's recovery.
		k.must(ctx, "delete", "pod", pod, "--grace-period=1", "--wait=false")
		Eventually(streamEnded).WithTimeout(60*time.Second).Should(Receive(), "the stream through the killed pod did not end")
		bodyMu.Lock()
		sse := specs.ParseSSE(body.Bytes())
		bodyMu.Unlock()
		GinkgoWriter.Printf("the cut stream: %d content chunks, %d [DONE], %d error events\n", sse.Chunks, sse.Done, len(sse.Errors))
		Expect(sse.Done).To(BeNumerically("<=", 1))
		sent.Add(specs.Want{RequestID: cut, What: "the stream cut by the pod kill", Status: "interrupted", Fallbacks: -1, AnyStream: true})

		// While the pod is away, llmgw-gateway-0's peer call may still go to
		// its old IP (DNS TTL) with the peer token: ask only when the node
		// refuses traffic to a pod IP that is gone.
		askWhileAway, route := nodeContainsServiceTraffic(ctx, old.IP)
		if askWhileAway {
			By("while " + pod + " is away, llmgw-gateway-0 answers /v1/usage and says which replica is missing (when it catches it)")
		} else {
			GinkgoWriter.Printf("not asking llmgw-gateway-0 for usage while %s is away: a peer call to its old IP %s would leave the node (%s)\n",
				pod, old.IP, route)
		}
		sawPartial := false
		var missing []string
		By("the StatefulSet recreates " + pod + " on the same PVC")
		Eventually(func(g Gomega) {
			if askWhileAway && !sawPartial {
				if l, err := specs.ListUsage(ctx, fwPod[0].URL(), key("persist")); err == nil && l.Partial {
					sawPartial, missing = true, l.Missing
					GinkgoWriter.Printf("llmgw-gateway-0 while %s was away: partial, missing_replicas %v\n", pod, l.Missing)
				}
			}
			list, err := pods(ctx, k)
			g.Expect(err).NotTo(HaveOccurred())
			p, ok := podByName(list, pod)
			g.Expect(ok).To(BeTrue(), "no pod %s yet", pod)
			g.Expect(p.UID).NotTo(Equal(old.UID), "still the old pod")
			g.Expect(p.Ready).To(BeTrue(), "pod %s not Ready yet (%s)", pod, p.Phase)
			g.Expect(p.Claims).To(ContainElement(claim))
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		Expect(strings.TrimSpace(k.must(ctx, "get", "pvc", claim, "-o", "jsonpath={.metadata.uid}"))).To(Equal(pvcUID), "the PVC was replaced")
		if sawPartial {
			Expect(missing).To(ContainElement(ContainSubstring(pod)), "missing_replicas of a partial answer")
		} else if askWhileAway {
			GinkgoWriter.Printf("llmgw-gateway-0 never answered partial while %s was away (it came back between polls)\n", pod)
		}
		Expect(fwPod[1].Restart(time.Minute)).To(Succeed())
		// The Service's forward may have been on the killed pod: a fresh one
		// for the next specs.
		Expect(fwGW.Restart(time.Minute)).To(Succeed())

		By("through both pods: every earlier record, and exactly one record of the cut request, interrupted")
		for _, base := range replicas() {
			var l specs.UsageList
			Eventually(func(g Gomega) {
				var err error
				l, err = specs.ListUsage(ctx, base, key("persist"))
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(sent.CheckExactlyOne(l)).To(BeEmpty(), "through %s", base)
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
			rec := l.ByID()[cut]
			GinkgoWriter.Printf("record of the cut request through %s: %s\n", base, rec)
			Expect(rec.HTTPStatus).To(BeZero())
		}
	}, NodeTimeout(10*time.Minute))

	It("keeps answering through the alias's fallback while the primary's mock pod is deleted and replaced", func(ctx SpecContext) {
		// While mock-alpha has no endpoint the gateways still call its
		// ClusterIP. A node that routed untranslated ClusterIP traffic out of
		// its default route would send those calls out of the cluster (an
		// egress proxy once answered them with HTTP 404, which the gateway, by
		// design, does not fall back on). make kind-up routes the pod and
		// Service ranges unreachable; without that, this spec must not run.
		clusterIP := strings.TrimSpace(k.must(ctx, "get", "svc", "mock-alpha", "-o", "jsonpath={.spec.clusterIP}"))
		if ok, why := nodeContainsServiceTraffic(ctx, clusterIP); !ok {
			Fail("not deleting a mock pod: while its Service has no endpoint the gateways' calls to ClusterIP " + clusterIP +
				" would leave the cluster (the kind node routes it: " + why + "); make kind-up should have routed the " +
				"pod and Service ranges unreachable (hack/kind/up.sh contain_cluster_traffic)")
		}
		list, err := pods(ctx, k)
		Expect(err).NotTo(HaveOccurred())
		var oldMock string
		for _, p := range list {
			if strings.HasPrefix(p.Name, "mock-alpha-") {
				oldMock = p.Name
			}
		}
		Expect(oldMock).NotTo(BeEmpty(), "no mock-alpha pod")
		logs, _ := k.run(ctx, nil, "-n", ns, "logs", oldMock, "--all-containers")
		evidence = append(evidence, logs)

		Eventually(func() int { return specs.ModelsStatus(ctx, fwGW.URL(), key("mockdel")) }).WithContext(ctx).
			WithTimeout(time.Minute).Should(Equal(http.StatusOK), "the Service's port-forward")
		var mu sync.Mutex
		var sent specs.Sent
		byProvider := map[string]int{}
		alphaSince := 0 // answers by alpha since the new mock pod was Ready
		newReady := false
		By("a paced load on chat-alpha (primary alpha, fallback beta) through the Service, 10/s")
		var failures []string // what each failed request got, for the failure message
		var failedIDs []string
		load := specs.StartLoad(10, func() int {
			start := time.Now()
			r, err := specs.RawChat(ctx, fwGW.URL(), key("mockdel"), "chat-alpha", marker+" mock", false)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failures = append(failures, fmt.Sprintf("%s +%v: not answered: %v", start.Format("15:04:05.000"), time.Since(start).Round(time.Millisecond), err))
				return -1
			}
			if r.Status != http.StatusOK {
				failures = append(failures, fmt.Sprintf("%s +%v: %s", start.Format("15:04:05.000"), time.Since(start).Round(time.Millisecond), r))
				failedIDs = append(failedIDs, r.RequestID())
			}
			byProvider[r.Provider()]++
			if newReady && r.Provider() == "alpha" {
				alphaSince++
			}
			sent.Add(specs.Want{RequestID: r.RequestID(), What: "chat during the mock replacement", Model: "chat-alpha",
				Status: "success", HTTPStatus: 200, Fallbacks: -1})
			return r.Status
		})
		stopped := false
		defer func() {
			if !stopped {
				load.Stop()
			}
		}()
		Eventually(func() int { mu.Lock(); defer mu.Unlock(); return byProvider["alpha"] }).WithContext(ctx).
			WithTimeout(30*time.Second).Should(BeNumerically(">=", 10), "alpha answers before the deletion")

		By("kubectl delete pod " + oldMock)
		k.must(ctx, "delete", "pod", oldMock, "--wait=false")
		Eventually(func(g Gomega) {
			list, err := pods(ctx, k)
			g.Expect(err).NotTo(HaveOccurred())
			var ready []string
			for _, p := range list {
				if strings.HasPrefix(p.Name, "mock-alpha-") && p.Name != oldMock && p.Ready {
					ready = append(ready, p.Name)
				}
			}
			g.Expect(ready).To(HaveLen(1), "a new Ready mock-alpha pod")
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		mu.Lock()
		newReady = true
		mu.Unlock()
		By("alpha answers again once its new pod is Ready (after its circuit breaker's 30 s cool-down, if it opened)")
		Eventually(func() int { mu.Lock(); defer mu.Unlock(); return alphaSince }).WithContext(ctx).
			WithTimeout(2 * time.Minute).Should(BeNumerically(">=", 10))
		statuses := load.Stop()
		stopped = true
		mu.Lock()
		GinkgoWriter.Printf("load during the mock replacement: %s; answered by %v\n", statuses, byProvider)
		if !statuses.Only(http.StatusOK) {
			for _, base := range replicas() {
				if l, err := specs.ListUsage(ctx, base, key("mockdel")); err == nil {
					byID := l.ByID()
					for _, id := range failedIDs {
						if r, ok := byID[id]; ok {
							failures = append(failures, "record: "+r.String())
						}
					}
					break
				}
			}
		}
		Expect(statuses.Only(http.StatusOK)).To(BeTrue(), "requests failed while mock-alpha was replaced: %s:\n%s",
			statuses, strings.Join(failures, "\n"))
		Expect(byProvider["beta"]).To(BeNumerically(">=", 1), "no request was answered by the fallback while alpha was away: %v", byProvider)
		wants := slices.Clone(sent.Wants)
		mu.Unlock()

		By("exactly one record per request, the fallback ones naming beta after a failed alpha attempt")
		check := specs.Sent{Wants: wants}
		for _, base := range replicas() {
			var l specs.UsageList
			Eventually(func(g Gomega) {
				var err error
				l, err = specs.ListUsage(ctx, base, key("mockdel"))
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(check.CheckExactlyOne(l)).To(BeEmpty(), "through %s", base)
			}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
			for _, r := range l.Records {
				if r.Provider != "beta" {
					continue
				}
				// Either alpha was tried and failed, or its circuit breaker
				// (open after 5 failures in a row, for 30 s) passed it over:
				// then the record holds the one call that was made.
				if r.Fallbacks == 0 {
					Expect(r.Attempts).To(HaveLen(1), "%s", r)
					Expect(r.Attempts[0].Provider).To(Equal("beta"), "%s", r)
					continue
				}
				Expect(r.Fallbacks).To(Equal(1), "%s", r)
				Expect(r.Attempts).To(HaveLen(2), "%s", r)
				Expect(r.Attempts[0].Provider).To(Equal("alpha"), "%s", r)
				Expect(r.Attempts[0].Outcome).To(BeElementOf("connection", "timeout", "status"), "%s", r)
			}
		}
		Expect(fwAlpha.Restart(time.Minute)).To(Succeed())
		Eventually(func(g Gomega) {
			c, err := specs.MockCalls(ctx, fwAlpha.URL())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(c.Total).To(BeNumerically(">=", 10), "the new mock-alpha pod's counters")
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	}, NodeTimeout(8*time.Minute))

	It("leaves no plaintext gateway key, upstream credential or prompt text in pod logs, the snapshot ConfigMap, CR status, events or the usage ledgers", func(ctx SpecContext) {
		secrets := map[string]string{}
		for role, kk := range keys {
			secrets["gateway key "+role] = kk.plaintext
		}
		for _, s := range []struct{ name, secret, key string }{
			{"the mock-beta upstream key", "mock-beta-upstream", "apiKey"}, {"the gateways' peer token", "llmgw-gateway-peer", "token"},
		} {
			v := strings.TrimSpace(k.must(ctx, "get", "secret", s.secret, "-o", "go-template={{index .data \""+s.key+"\" | base64decode}}"))
			Expect(len(v)).To(BeNumerically(">=", 16), "Secret %s/%s", s.secret, s.key)
			secrets[s.name] = v
		}
		secrets["prompt text"] = marker

		var scanned []string
		var leaks []string
		scan := func(where, text string) {
			scanned = append(scanned, fmt.Sprintf("%s (%d bytes)", where, len(text)))
			if keyformat.LooksLikeKey(text) {
				leaks = append(leaks, where+": something shaped like a gateway key")
			}
			for what, s := range secrets {
				if strings.Contains(text, s) {
					leaks = append(leaks, where+": "+what)
				}
			}
		}

		list, err := pods(ctx, k)
		Expect(err).NotTo(HaveOccurred())
		for _, p := range list {
			out, err := k.run(ctx, nil, "-n", ns, "logs", p.Name, "--all-containers")
			Expect(err).NotTo(HaveOccurred())
			scan("logs of pod "+p.Name, out)
			if p.Restarts > 0 {
				out, _ := k.run(ctx, nil, "-n", ns, "logs", p.Name, "--all-containers", "--previous")
				scan("previous logs of pod "+p.Name, out)
			}
		}
		for i, e := range evidence {
			scan(fmt.Sprintf("logs of a pod the suite deleted (%d)", i), e)
		}
		scan("ConfigMaps (snapshot)", k.must(ctx, "get", "configmaps", "-o", "yaml"))
		scan("GatewayKeys, ModelAliases, ProviderEndpoints (spec and status)", k.must(ctx, "get", "gatewaykeys,modelaliases,providerendpoints", "-o", "yaml"))
		scan("events", k.must(ctx, "get", "events", "-o", "yaml"))
		scan("Leases", k.must(ctx, "get", "leases", "-o", "yaml"))

		By("the usage ledgers, read through a short-lived pod that mounts each gateway's PVC read-only")
		image := helperImage(ctx, k)
		for i := range 2 {
			files := readLedger(ctx, k, image, fmt.Sprintf("e2e-ledger-reader-%s-%d", run, i), fmt.Sprintf("data-llmgw-gateway-%d", i))
			Expect(files).To(HaveKey("usage.db"), "no ledger on data-llmgw-gateway-%d", i)
			for name, data := range files {
				scan(fmt.Sprintf("data-llmgw-gateway-%d:/var/lib/llmgw/%s", i, name), data)
			}
			// The records are really in there: the ledger is not empty.
			Expect(files["usage.db"]+files["usage.db-wal"]).To(ContainSubstring("req_"), "ledger %d holds no request ids", i)
		}
		GinkgoWriter.Printf("scanned for %d secrets:\n  %s\n", len(secrets), strings.Join(scanned, "\n  "))
		Expect(leaks).To(BeEmpty())
	}, NodeTimeout(6*time.Minute))
})

// clusterReady reports whether the kind cluster answers and its nodes are Ready.
func clusterReady(ctx context.Context, k kube) bool {
	out, err := k.run(ctx, nil, "get", "nodes", "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
	if err != nil {
		GinkgoWriter.Printf("cluster not reachable: %v\n", err)
		return false
	}
	lines := strings.Fields(out)
	if len(lines) == 0 {
		return false
	}
	for _, l := range lines {
		if l != "True" {
			return false
		}
	}
	return true
}

// redact hides any plaintext key in text before it is printed.
func redact(text string) string { return keyformat.Redact(text) }

// nodeContainsServiceTraffic reports whether the kind node refuses to route
// traffic to ip (a ClusterIP that kube-proxy did not translate, or the IP of
// a pod that is gone) instead of sending it out of its default route; why is
// the node's route to ip.
func nodeContainsServiceTraffic(ctx context.Context, ip string) (ok bool, why string) {
	cluster := os.Getenv("KIND_CLUSTER_NAME")
	if cluster == "" {
		cluster = "llmgw"
	}
	out, _ := exec.CommandContext(ctx, "docker", "exec", cluster+"-control-plane", "ip", "route", "get", ip).CombinedOutput()
	why = strings.Join(strings.Fields(string(out)), " ")
	for _, refused := range []string{"unreachable", "prohibit", "blackhole", "Network is unreachable", "No route to host"} {
		if strings.Contains(why, refused) {
			return true, why
		}
	}
	return false, why
}

// createBudgetKey creates a key for every model with a budget of amount a
// month (and a rate limit the specs never reach), as a user would:
//
//	llmgw keys create --id ID --budget AMOUNT --output yaml --entry-out FILE --key-out KEYFILE
//	kubectl apply -f FILE
//
// The entry holds the key's hash only; the plaintext lives in KEYFILE (0600).
func createBudgetKey(ctx context.Context, k kube, llmgw, dir, id, amount string) gwKey {
	GinkgoHelper()
	return createKeyWithArgs(ctx, k, llmgw, dir, id, "--models", "*", "--rpm", "100000", "--burst", "10000", "--budget", amount)
}

// createKeyWithArgs runs `llmgw keys create --id ID ARGS... --output yaml
// --entry-out FILE --key-out KEYFILE` and applies the entry, which must
// hold the key's hash only (the plaintext is in KEYFILE, 0600).
func createKeyWithArgs(ctx context.Context, k kube, llmgw, dir, id string, args ...string) gwKey {
	GinkgoHelper()
	keyFile, entryFile := filepath.Join(dir, id+".key"), filepath.Join(dir, id+".yaml")
	argv := append([]string{"keys", "create", "--id", id, "--namespace", ns}, args...)
	argv = append(argv, "--output", "yaml", "--entry-out", entryFile, "--key-out", keyFile)
	out, err := exec.CommandContext(ctx, llmgw, argv...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "llmgw keys create --id %s: %s", id, keyformat.Redact(string(out)))
	Expect(keyformat.LooksLikeKey(string(out))).To(BeFalse(), "llmgw keys create --key-out printed a key")
	entry, err := os.ReadFile(entryFile)
	Expect(err).NotTo(HaveOccurred())
	Expect(keyformat.LooksLikeKey(string(entry))).To(BeFalse(), "the GatewayKey YAML held a plaintext key")
	if slices.Contains(args, "--budget") {
		Expect(string(entry)).To(ContainSubstring("budget:"), "the GatewayKey has no budget:\n%s", entry)
	}
	applied, err := k.run(ctx, entry, "apply", "-f", "-")
	Expect(err).NotTo(HaveOccurred())
	Expect(applied).To(ContainSubstring("gatewaykey.llmgw.dev/" + id))
	raw, err := os.ReadFile(keyFile)
	Expect(err).NotTo(HaveOccurred())
	plain := strings.TrimSpace(string(raw))
	Expect(keyformat.LooksLikeKey(plain)).To(BeTrue(), "--key-out %s does not hold a key", keyFile)
	GinkgoWriter.Printf("key %s created (%s); plaintext only in %s\n", id, strings.Join(args, " "), keyFile)
	return gwKey{id: id, plaintext: plain}
}

// deleteLeftovers deletes the objects of earlier runs that did not get to
// their AfterAll: GatewayKeys and ModelAliases named e2e-* or hot-*, and
// ledger reader pods.
func deleteLeftovers(ctx context.Context, k kube) {
	GinkgoHelper()
	out, err := k.run(ctx, nil, "-n", ns, "get", "gatewaykeys,modelaliases,pods", "-o", "name")
	Expect(err).NotTo(HaveOccurred())
	var stale []string
	for _, name := range strings.Fields(out) {
		_, short, _ := strings.Cut(name, "/")
		if strings.HasPrefix(short, "e2e-") || strings.HasPrefix(short, "hot-") {
			stale = append(stale, name)
		}
	}
	// Team namespaces of teamNamespaceSpec (the controller's flag and the
	// policy it changed are put back by make deploy's apply).
	nsOut, err := k.run(ctx, nil, "get", "namespaces", "-o", "name")
	Expect(err).NotTo(HaveOccurred())
	for _, name := range strings.Fields(nsOut) {
		if strings.HasPrefix(name, "namespace/e2e-team-") {
			_, err := k.run(ctx, nil, "delete", name, "--wait=false")
			Expect(err).NotTo(HaveOccurred())
		}
	}
	if len(stale) == 0 {
		return
	}
	GinkgoWriter.Printf("deleting %d leftovers: %v\n", len(stale), stale)
	_, err = k.run(ctx, nil, append([]string{"-n", ns, "delete", "--ignore-not-found", "--wait=false"}, stale...)...)
	Expect(err).NotTo(HaveOccurred())
}
