package kind_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/llmgw/llmgw/test/e2e/specs"
)

// The quota store (config/redis): a key's limits hold across gateway
// replicas, and when the store is gone the gateways stay Ready, say they
// are degraded and each enforce its share of every limit, then recover by
// themselves. Its own Ordered container: it changes the gateway
// StatefulSet's size and takes the store away, and puts both back in
// AfterAll.
var _ = Describe("limits shared across gateway replicas (quota store)", Ordered, func() {
	const (
		rpm, burst = 60, 3
		model      = "chat-alpha"
	)
	var (
		root string
		k    kube
		run  = fmt.Sprintf("%x", time.Now().Unix()&0xffffff)
		key  gwKey
		fws  []*forward // data port of llmgw-gateway-0..N-1
		mgmt []*forward // management port of the same pods
	)
	stopForwards := func() {
		for _, f := range append(fws, mgmt...) {
			f.Stop()
		}
		fws, mgmt = nil, nil
	}
	// forwardGateways starts a data and a management port-forward to each of
	// the n gateway pods, and waits until each serves the key.
	forwardGateways := func(ctx context.Context, n int) []string {
		GinkgoHelper()
		stopForwards()
		var bases []string
		for i := range n {
			pod := fmt.Sprintf("pod/llmgw-gateway-%d", i)
			fws = append(fws, startForward(k, pod, 8080, time.Minute))
			mgmt = append(mgmt, startForward(k, pod, 9090, time.Minute))
			bases = append(bases, fws[i].URL())
		}
		for _, b := range bases {
			Eventually(func() int { return specs.ModelsStatus(ctx, b, key.plaintext) }).WithContext(ctx).
				WithTimeout(90*time.Second).WithPolling(500*time.Millisecond).Should(Equal(http.StatusOK), "the key through %s", b)
		}
		return bases
	}

	BeforeAll(func(ctx SpecContext) {
		root = repoRoot()
		k = kube{root: root}
		tmp := GinkgoT().TempDir()
		By("the quota store is up and the gateways are 2 (an interrupted earlier run may have left either changed)")
		scaleQuotaStore(ctx, k, 1)
		setGatewayReplicas(ctx, k, 2)

		llmgw := buildLLMGW(ctx, root, tmp)
		out2, err := k.run(ctx, nil, "apply", "-f", filepath.Join(root, "config", "samples")+"/")
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Print(out2)
		By(fmt.Sprintf("a key limited to %d requests a minute (burst %d)", rpm, burst))
		key = createKey(ctx, k, llmgw, tmp, "e2e-shared-"+run, "*", rpm, burst)
		waitReady(ctx, k, 2*time.Minute, "gatewaykey/"+key.id, "modelalias/"+model)
	}, NodeTimeout(20*time.Minute))

	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			dumpDiagnostics(k, append(append([]*forward{}, fws...), mgmt...))
		}
	})

	AfterAll(func(ctx SpecContext) {
		stopForwards()
		By("putting back the quota store and 2 gateway replicas; deleting this run's key and llmgw-gateway-2's volume")
		scaleQuotaStore(ctx, k, 1)
		setGatewayReplicas(ctx, k, 2)
		_, _ = k.run(ctx, nil, "-n", ns, "delete", "--ignore-not-found", "--wait=false", "gatewaykey/"+key.id, "pvc/data-llmgw-gateway-2")
	}, NodeTimeout(10*time.Minute))

	for _, n := range []int{2, 3} {
		It(fmt.Sprintf("admits a key's %d rpm in total, not %d, through %d gateway replicas", rpm, n*rpm, n), func(ctx SpecContext) {
			setGatewayReplicas(ctx, k, n)
			bases := forwardGateways(ctx, n)
			for i := range mgmt {
				Expect(metric(ctx, mgmt[i].URL(), "llmgw_quota_store_degraded")).To(Equal(0.0), "llmgw-gateway-%d", i)
			}
			drain(ctx, bases, key.plaintext, model)
			By(fmt.Sprintf("a minute of 3 requests a second, each to one of the %d pods' own port-forwards at random", n))
			t := paced(ctx, bases, key.plaintext, model, 3, time.Minute)
			GinkgoWriter.Printf("%d replicas, one minute: %s\n", n, t)
			Expect(t.other).To(BeEmpty())
			// One shared bucket refills 60 in the minute (±1 at each edge of
			// the window, ±2 for scheduling); one per replica would admit
			// n × 60.
			Expect(t.ok).To(BeNumerically("~", rpm, 4), "admitted in one minute through %d replicas: %s", n, t)
			Expect(t.ok + t.limited).To(Equal(180))
			for _, b := range bases {
				Expect(t.byBase[b][0]).To(BeNumerically(">", 0), "no request was admitted through %s: not spread over the replicas", b)
			}
		}, NodeTimeout(8*time.Minute))
	}

	It("stays Ready and enforces limit ÷ replicas in each gateway while the store is away, and recovers by itself", func(ctx SpecContext) {
		const n = 3
		setGatewayReplicas(ctx, k, n)
		bases := forwardGateways(ctx, n)
		before, err := pods(ctx, k)
		Expect(err).NotTo(HaveOccurred())
		gateways := func(list []podInfo) map[string]podInfo {
			out := map[string]podInfo{}
			for _, p := range list {
				if strings.HasPrefix(p.Name, "llmgw-gateway-") {
					out[p.Name] = p
				}
			}
			return out
		}
		gwBefore := gateways(before)
		Expect(gwBefore).To(HaveLen(n))

		killed := time.Now().UTC().Add(-time.Second)
		By("killing the quota store pod (its StatefulSet scaled to 0 so that it stays away)")
		k.must(ctx, "scale", "statefulset/llmgw-quota-store", "--replicas=0")
		k.must(ctx, "delete", "pod", "llmgw-quota-store-0", "--grace-period=0", "--force", "--ignore-not-found")
		By("every gateway reports degraded in /health and /metrics, counts 3 ready replicas, and stays Ready")
		for i := range n {
			Eventually(func(g Gomega) {
				h, err := health(ctx, bases[i])
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(h.QuotaStore).To(Equal("degraded"))
				g.Expect(h.Status).To(Equal("degraded"))
				g.Expect(metric(ctx, mgmt[i].URL(), "llmgw_quota_store_degraded")).To(Equal(1.0))
				g.Expect(metric(ctx, mgmt[i].URL(), "llmgw_quota_store_divisor")).To(Equal(float64(n)))
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), "llmgw-gateway-%d", i)
		}
		list, err := pods(ctx, k)
		Expect(err).NotTo(HaveOccurred())
		for name, p := range gateways(list) {
			Expect(p.Ready).To(BeTrue(), "%s is not Ready while the quota store is away", name)
		}

		By("one gateway alone admits a third of the key's rate (2 requests a second through llmgw-gateway-0 for 30 s)")
		drain(ctx, bases, key.plaintext, model)
		t := paced(ctx, bases[:1], key.plaintext, model, 2, 30*time.Second)
		GinkgoWriter.Printf("degraded, llmgw-gateway-0 alone, 30 s: %s\n", t)
		Expect(t.other).To(BeEmpty())
		// 60 rpm ÷ 3 = 20 a minute: 10 in 30 s. A shared count would admit 30.
		Expect(t.ok).To(BeNumerically("~", 10, 3), "admitted by one degraded replica in 30 s: %s", t)
		By("the other gateways still admit their own share")
		for _, b := range bases[1:] {
			Eventually(func() int { return statusOf(ctx, b, key.plaintext, model) }).WithContext(ctx).
				WithTimeout(10*time.Second).WithPolling(time.Second).Should(Equal(http.StatusOK), "through %s", b)
		}

		By("the quota store comes back: every gateway returns to shared counting, without a restart")
		k.must(ctx, "scale", "statefulset/llmgw-quota-store", "--replicas=1")
		_, err = k.run(ctx, nil, "-n", ns, "rollout", "status", "statefulset/llmgw-quota-store", "--timeout=3m")
		Expect(err).NotTo(HaveOccurred())
		for i := range n {
			Eventually(func(g Gomega) {
				h, err := health(ctx, bases[i])
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(h.QuotaStore).To(Equal("shared"))
				g.Expect(metric(ctx, mgmt[i].URL(), "llmgw_quota_store_degraded")).To(Equal(0.0))
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), "llmgw-gateway-%d", i)
		}
		after, err := pods(ctx, k)
		Expect(err).NotTo(HaveOccurred())
		for name, p := range gateways(after) {
			b := gwBefore[name]
			Expect(p.UID).To(Equal(b.UID), "%s was replaced", name)
			Expect(p.Restarts).To(Equal(b.Restarts), "%s restarted", name)
		}
		By("each gateway logged the outage once and the recovery once")
		for name := range gwBefore {
			// kubectl logs can lag the container's output by a moment.
			Eventually(func(g Gomega) {
				logs := k.must(ctx, "logs", name, "--since-time="+killed.Format(time.RFC3339))
				g.Expect(strings.Count(logs, "quota store unreachable")).To(Equal(1), "%s logs since the kill:\n%s", name, logs)
				g.Expect(strings.Count(logs, "quota store reachable again")).To(Equal(1), "%s logs since the kill:\n%s", name, logs)
			}).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Succeed())
		}

		By("one gateway alone admits the whole rate again (2 requests a second through llmgw-gateway-0 for 20 s)")
		drain(ctx, bases, key.plaintext, model)
		t = paced(ctx, bases[:1], key.plaintext, model, 2, 20*time.Second)
		GinkgoWriter.Printf("shared again, llmgw-gateway-0 alone, 20 s: %s\n", t)
		Expect(t.other).To(BeEmpty())
		Expect(t.ok).To(BeNumerically("~", 20, 3), "admitted by one replica in 20 s with the store back: %s", t)
	}, NodeTimeout(12*time.Minute))

	It("keeps the quota store's password out of pod specs, logs, ConfigMaps and events", func(ctx SpecContext) {
		pw := strings.TrimSpace(k.must(ctx, "get", "secret", "llmgw-quota-store", "-o", `go-template={{index .data "password" | base64decode}}`))
		Expect(len(pw)).To(BeNumerically(">=", 16))
		list, err := pods(ctx, k)
		Expect(err).NotTo(HaveOccurred())
		for _, p := range list {
			Expect(k.must(ctx, "logs", p.Name, "--all-containers")).NotTo(ContainSubstring(pw), "logs of %s", p.Name)
		}
		for _, what := range []string{"pods", "statefulsets", "configmaps", "events"} {
			Expect(k.must(ctx, "get", what, "-o", "yaml")).NotTo(ContainSubstring(pw), "kubectl get %s", what)
		}
	})
})

// scaleQuotaStore sets the quota store's replicas and waits until it is
// rolled out (or gone).
func scaleQuotaStore(ctx context.Context, k kube, n int) {
	GinkgoHelper()
	k.must(ctx, "scale", "statefulset/llmgw-quota-store", "--replicas="+strconv.Itoa(n))
	if n > 0 {
		_, err := k.run(ctx, nil, "-n", ns, "rollout", "status", "statefulset/llmgw-quota-store", "--timeout=3m")
		Expect(err).NotTo(HaveOccurred())
	}
}

// setGatewayReplicas scales the gateway StatefulSet to n with `kubectl
// scale` (the gateways discover their peers from it: no flag to keep in
// step), then waits until exactly llmgw-gateway-0..n-1 are Ready and the
// replicas scaled away are gone (after handing their records off).
func setGatewayReplicas(ctx context.Context, k kube, n int) {
	GinkgoHelper()
	k.must(ctx, "scale", "statefulset/llmgw-gateway", "--replicas="+strconv.Itoa(n))
	_, err := k.run(ctx, nil, "-n", ns, "rollout", "status", "statefulset/llmgw-gateway", "--timeout=5m")
	Expect(err).NotTo(HaveOccurred())
	Eventually(func(g Gomega) {
		list, err := pods(ctx, k)
		g.Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, p := range list {
			if strings.HasPrefix(p.Name, "llmgw-gateway-") {
				g.Expect(p.Ready).To(BeTrue(), "%s not Ready", p.Name)
				names = append(names, p.Name)
			}
		}
		g.Expect(names).To(HaveLen(n), "gateway pods %v", names)
	}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// tally counts the answers of a paced load.
type tally struct {
	ok, limited int
	byBase      map[string][2]int // base → [admitted, refused]
	other       []string          // anything but 200 and 429 rate_limit_exceeded
}

func (t tally) String() string {
	return fmt.Sprintf("%d admitted, %d refused (429), %d other; per replica [admitted refused]: %v", t.ok, t.limited, len(t.other), t.byBase)
}

// paced sends perSecond chat requests a second for d, each to a base picked
// at random (round robin would lock in phase with the bucket's refill: with
// 3 bases at 3 a second every refilled token would go to the same one),
// each in its own goroutine (a slow answer does not delay the next
// request), and counts the answers.
func paced(ctx context.Context, bases []string, key, model string, perSecond int, d time.Duration) tally {
	GinkgoHelper()
	t := tally{byBase: map[string][2]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(perSecond))
	defer tick.Stop()
	total := int(d.Seconds()) * perSecond
	for i := range total {
		if i > 0 {
			select {
			case <-tick.C:
			case <-ctx.Done():
				Fail("interrupted")
			}
		}
		base := bases[rand.IntN(len(bases))]
		wg.Go(func() {
			r, err := specs.RawChat(ctx, base, key, model, "shared limits", false)
			mu.Lock()
			defer mu.Unlock()
			c := t.byBase[base]
			switch {
			case err != nil:
				t.other = append(t.other, fmt.Sprintf("%s: %v", base, err))
			case r.Status == http.StatusOK:
				t.ok++
				c[0]++
			case r.Status == http.StatusTooManyRequests && r.Err.Code == "rate_limit_exceeded":
				t.limited++
				c[1]++
			default:
				t.other = append(t.other, fmt.Sprintf("%s: %s", base, r))
			}
			t.byBase[base] = c
		})
	}
	wg.Wait()
	return t
}

// drain empties the key's bucket(s): requests round robin over bases until
// as many in a row as there are bases were refused.
func drain(ctx context.Context, bases []string, key, model string) {
	GinkgoHelper()
	refused := 0
	for i := 0; refused < len(bases); i++ {
		Expect(i).To(BeNumerically("<", 200), "the key's bucket does not empty")
		switch s := statusOf(ctx, bases[i%len(bases)], key, model); s {
		case http.StatusTooManyRequests:
			refused++
		case http.StatusOK:
			refused = 0
		default:
			Fail(fmt.Sprintf("HTTP %d while draining the key's bucket", s))
		}
	}
}

func statusOf(ctx context.Context, base, key, model string) int {
	r, err := specs.RawChat(ctx, base, key, model, "shared limits", false)
	if err != nil {
		return -1
	}
	return r.Status
}

type healthReport struct {
	Status     string `json:"status"`
	QuotaStore string `json:"quota_store"`
}

func health(ctx context.Context, base string) (healthReport, error) {
	var h healthReport
	body, err := httpGet(ctx, base+"/health")
	if err != nil {
		return h, err
	}
	return h, json.Unmarshal([]byte(body), &h)
}

// metric is the value of an unlabeled metric on a management port.
func metric(ctx context.Context, base, name string) (float64, error) {
	body, err := httpGet(ctx, base+"/metrics")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("no metric %s", name)
}

func httpGet(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
