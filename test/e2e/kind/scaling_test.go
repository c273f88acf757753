package kind_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/llmgw/llmgw/test/e2e/specs"
)

// Scaling the gateways like any workload (issue 46): `kubectl scale` 2 → 3
// → 1 → 2 while a key with a rate limit and a budget sends a paced load.
// The gateways discover the replica set from the StatefulSet; a replica
// scaled away hands its records to llmgw-gateway-0 before it exits. After
// each step every record ever written is readable through every pod, none
// is missing or doubled, no answer is partial, and the key's limit held
// across the replicas.
var _ = Describe("scaling the gateways with kubectl scale", Ordered, func() {
	const (
		rpm, burst = 120, 5 // 2 a second: the load below (3 a second) is refused in part
		perSecond  = 3
		model      = "chat-alpha"
	)
	var (
		root  string
		k     kube
		run   = fmt.Sprintf("%x", time.Now().Unix()&0xffffff)
		key   gwKey
		fws   []*forward
		since = time.Now().Add(-time.Hour)
		sent  []sentRequest
	)
	stopForwards := func() {
		for _, f := range fws {
			f.Stop()
		}
		fws = nil
	}
	// forwardGateways forwards the data port of llmgw-gateway-0..n-1 and
	// waits until each serves the key.
	forwardGateways := func(ctx context.Context, n int) []string {
		GinkgoHelper()
		stopForwards()
		var bases []string
		for i := range n {
			fws = append(fws, startForward(k, fmt.Sprintf("pod/llmgw-gateway-%d", i), 8080, time.Minute))
			bases = append(bases, fws[i].URL())
		}
		for _, b := range bases {
			Eventually(func() int { return specs.ModelsStatus(ctx, b, key.plaintext) }).WithContext(ctx).
				WithTimeout(90*time.Second).WithPolling(500*time.Millisecond).Should(Equal(http.StatusOK), "the key through %s", b)
		}
		return bases
	}
	// load sends perSecond chat requests a second to bases until stop is
	// closed, and checks that the key's limit held: every answer is 200 or
	// 429 rate_limit_exceeded, and the admitted ones are at most what one
	// bucket shared by all replicas allows in the time.
	load := func(ctx context.Context, bases []string, what string, stop <-chan struct{}) {
		GinkgoHelper()
		start := time.Now()
		got := paceUntil(ctx, bases, key.plaintext, model, perSecond, stop)
		secs := time.Since(start).Seconds()
		ok, limited := 0, 0
		var other []string
		for _, r := range got {
			switch {
			case r.status == http.StatusOK:
				ok++
			case r.status == http.StatusTooManyRequests && r.code == "rate_limit_exceeded":
				limited++
			default:
				other = append(other, fmt.Sprintf("%s: HTTP %d %s %v", r.base, r.status, r.code, r.err))
			}
		}
		GinkgoWriter.Printf("%s: %d requests in %.0fs through %d pods: %d admitted, %d refused\n", what, len(got), secs, len(bases), ok, limited)
		Expect(other).To(BeEmpty(), "%s: answers other than 200 and 429", what)
		// One bucket: the burst, then 2 a second (+2 for the edges).
		Expect(float64(ok)).To(BeNumerically("<=", burst+secs*rpm/60+2), "%s: admitted beyond the key's limit", what)
		Expect(ok).To(BeNumerically(">", 0), "%s: nothing admitted", what)
		sent = append(sent, got...)
	}
	loadFor := func(ctx context.Context, bases []string, what string, d time.Duration) {
		GinkgoHelper()
		stop := make(chan struct{})
		time.AfterFunc(d, func() { close(stop) })
		load(ctx, bases, what, stop)
	}
	// everyRecordEverywhere checks, through each of the n pods, that the
	// key's records are exactly the requests sent so far (each once, no
	// other) and that neither the list nor the summary is partial.
	everyRecordEverywhere := func(ctx context.Context, bases []string) {
		GinkgoHelper()
		want := map[string]int{}
		for _, r := range sent {
			Expect(r.requestID).NotTo(BeEmpty(), "an answer without X-Request-Id")
			want[r.requestID] = r.status
		}
		for _, b := range bases {
			// The replicas scaled away hand their records off within seconds;
			// until then the answers say partial and name their volumes.
			var list specs.UsageList
			Eventually(func(g Gomega) {
				var err error
				list, err = specs.ListUsage(ctx, b, key.plaintext)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(list.Partial).To(BeFalse(), "partial through %s: missing %v", b, list.Missing)
			}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
			Expect(list.Duplicates()).To(BeEmpty(), "records listed twice through %s", b)
			got := list.ByID()
			var missing, extra []string
			for id, status := range want {
				r, ok := got[id]
				switch {
				case !ok:
					missing = append(missing, id)
				case r.HTTPStatus != status:
					extra = append(extra, fmt.Sprintf("%s: record says %d, the answer was %d", id, r.HTTPStatus, status))
				}
			}
			for id := range got {
				if _, ok := want[id]; !ok {
					extra = append(extra, id+": a record of no request sent")
				}
			}
			Expect(missing).To(BeEmpty(), "records missing through %s (%d of %d)", b, len(missing), len(want))
			Expect(extra).To(BeEmpty(), "records wrong through %s", b)
			sum := usageSummary(ctx, b, key.plaintext, since)
			Expect(sum.Partial).To(BeFalse(), "summary partial through %s: %v %v", b, sum.MissingReplicas, sum.StrandedLedgers)
			Expect(sum.Requests).To(Equal(len(want)), "summary through %s counts every request once", b)
		}
		GinkgoWriter.Printf("%d records, each once, through each of %d pods\n", len(want), len(bases))
	}

	BeforeAll(func(ctx SpecContext) {
		root = repoRoot()
		k = kube{root: root}
		tmp := GinkgoT().TempDir()
		By("the quota store is up and the gateways are 2")
		scaleQuotaStore(ctx, k, 1)
		setGatewayReplicas(ctx, k, 2)
		llmgw := buildLLMGW(ctx, root, tmp)
		_, err := k.run(ctx, nil, "apply", "-f", filepath.Join(root, "config", "samples")+"/")
		Expect(err).NotTo(HaveOccurred())
		By(fmt.Sprintf("a key limited to %d requests a minute (burst %d) with a budget", rpm, burst))
		key = createLimitedBudgetKey(ctx, k, llmgw, tmp, "e2e-scale-"+run, "1000", rpm, burst)
		waitReady(ctx, k, 2*time.Minute, "gatewaykey/"+key.id, "modelalias/"+model)
	}, NodeTimeout(20*time.Minute))

	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			dumpDiagnostics(k, fws)
		}
	})

	AfterAll(func(ctx SpecContext) {
		stopForwards()
		setGatewayReplicas(ctx, k, 2)
		_, _ = k.run(ctx, nil, "-n", ns, "delete", "--ignore-not-found", "--wait=false", "gatewaykey/"+key.id, "pvc/data-llmgw-gateway-2")
	}, NodeTimeout(10*time.Minute))

	It("keeps every record readable through every pod, none lost or doubled, and the key's limit, from 2 to 3 to 1 to 2", func(ctx SpecContext) {
		bases := forwardGateways(ctx, 2)
		loadFor(ctx, bases, "2 replicas", 15*time.Second)
		// The budget is in force: every admitted answer says what is left.
		r, err := specs.RawChat(ctx, bases[0], key.plaintext, model, "budget", false)
		Expect(err).NotTo(HaveOccurred())
		if r.Status == http.StatusOK {
			Expect(r.Header.Get("X-Llmgw-Budget-Remaining")).NotTo(BeEmpty(), "an admitted answer without the budget headers: %v", r.Header)
		}
		sent = append(sent, sentRequest{base: bases[0], status: r.Status, requestID: r.Header.Get("X-Request-Id")})
		everyRecordEverywhere(ctx, bases)

		cur := 2
		for _, n := range []int{3, 1, 2} {
			By(fmt.Sprintf("kubectl scale --replicas=%d under load (to the %d pods the step keeps)", n, min(cur, n)))
			stop := make(chan struct{})
			done := make(chan struct{})
			keep := bases[:min(cur, n)]
			go func() {
				defer GinkgoRecover()
				defer close(done)
				load(ctx, keep, fmt.Sprintf("%d → %d", cur, n), stop)
			}()
			setGatewayReplicas(ctx, k, n)
			close(stop)
			<-done
			bases = forwardGateways(ctx, n)
			loadFor(ctx, bases, fmt.Sprintf("%d replicas", n), 15*time.Second)
			everyRecordEverywhere(ctx, bases)
			cur = n
		}
		claims := k.must(ctx, "get", "pvc", "-o", "jsonpath={range .items[*]}{.metadata.name}={.metadata.annotations.llmgw\\.dev/ledger-handed-off-to}{\"\\n\"}{end}")
		GinkgoWriter.Printf("ledger claims after the steps:\n%s\n", claims)
		Expect(claims).To(ContainSubstring("data-llmgw-gateway-2=http://llmgw-gateway-0."), "llmgw-gateway-2's claim is not marked handed off")
	}, NodeTimeout(25*time.Minute))
})

// sentRequest is one chat request of a paced load and its answer.
type sentRequest struct {
	base      string
	status    int
	code      string
	requestID string
	err       error
}

// paceUntil sends perSecond chat requests a second, each to one of bases at
// random and in its own goroutine, until stop is closed; it returns every
// answer.
func paceUntil(ctx context.Context, bases []string, key, model string, perSecond int, stop <-chan struct{}) []sentRequest {
	GinkgoHelper()
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		out []sentRequest
	)
	tick := time.NewTicker(time.Second / time.Duration(perSecond))
	defer tick.Stop()
	for {
		select {
		case <-stop:
			wg.Wait()
			return out
		case <-ctx.Done():
			Fail("interrupted")
		case <-tick.C:
		}
		base := bases[rand.IntN(len(bases))]
		wg.Go(func() {
			r, err := specs.RawChat(ctx, base, key, model, "scaling", false)
			s := sentRequest{base: base, status: r.Status, code: r.Err.Code, err: err}
			if r.Header != nil {
				s.requestID = r.Header.Get("X-Request-Id")
			}
			mu.Lock()
			out = append(out, s)
			mu.Unlock()
		})
	}
}

// summaryAnswer is what the spec reads of GET /v1/usage/summary.
type summaryAnswer struct {
	Requests        int      `json:"requests"`
	Partial         bool     `json:"partial"`
	MissingReplicas []string `json:"missing_replicas"`
	StrandedLedgers []string `json:"stranded_ledgers"`
}

func usageSummary(ctx context.Context, base, key string, from time.Time) summaryAnswer {
	GinkgoHelper()
	u := base + "/v1/usage/summary?from=" + url.QueryEscape(from.UTC().Format(time.RFC3339))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := specs.HTTP.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.StatusCode).To(Equal(http.StatusOK), "GET /v1/usage/summary: %s", body)
	var s summaryAnswer
	Expect(jsonv2.Unmarshal(body, &s)).To(Succeed())
	return s
}

// createLimitedBudgetKey is createBudgetKey with a rate limit of rpm (burst).
func createLimitedBudgetKey(ctx context.Context, k kube, llmgw, dir, id, amount string, rpm, burst int) gwKey {
	GinkgoHelper()
	return createKeyWithArgs(ctx, k, llmgw, dir, id, "--models", "*", "--rpm", fmt.Sprint(rpm), "--burst", fmt.Sprint(burst), "--budget", amount)
}
