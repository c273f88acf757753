package specs

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo DSL
	. "github.com/onsi/gomega"    //nolint:revive // gomega DSL

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/mockproviders"
)

// Target is one deployed system as the contract specs see it: URLs on
// loopback (httptest servers, or kubectl port-forwards) and plaintext keys.
type Target struct {
	Gateway  string   // base URL clients use (a Service, or the one gateway)
	Replicas []string // base URL of every gateway replica; usage must read the same through each

	MockAlpha, MockBeta string // base URLs of the mocks, for GET /mock/calls

	KeyAll        string   // models '*', a rate limit the specs never reach
	KeyRestricted string   // may use RestrictedModels only
	KeyLimited    string   // models '*', LimitedBurst requests, then (almost) no refill: rpm 1
	LimitedBurst  int      // burst of KeyLimited
	Restricted    []string // the aliases KeyRestricted may use

	// AllAliases lists the aliases the system serves: what KeyAll must see.
	AllAliases func(ctx context.Context) ([]string, error)
	// Fallback is an alias with primary alpha/alpha-large, one fallback
	// beta/beta-large, maxFallbacks 1, and attempt and firstChunk timeouts of
	// at most 3 s (so a timeout case takes seconds, not minutes).
	Fallback string
	// BetaAlias has primary beta/beta-large; KeyRestricted may not use it.
	BetaAlias string
	// Marker is a word put in every prompt: it must never be stored or logged.
	Marker string

	// What the specs sent, per key, for the usage check at the end.
	SentAll, SentRestricted, SentLimited Sent
}

func (t *Target) prompt(text string, directive string) string {
	return Prompt(t.Marker+" "+text, directive)
}

const (
	alphaText = "alpha/alpha-large says:"
	betaText  = "beta/beta-large says:"
)

// callsOf reads both mocks' counters.
func callsOf(ctx context.Context, t *Target) (alpha, beta mockproviders.Calls) {
	GinkgoHelper()
	// A mock counts a call's status when its handler returns, which can be
	// after the gateway has relayed the answer's last byte (an error event,
	// then the handler ends): read once every call that arrived has ended,
	// so a call is never counted in the next window's by_status.
	Eventually(func(g Gomega) {
		var err error
		alpha, err = MockCalls(ctx, t.MockAlpha)
		g.Expect(err).NotTo(HaveOccurred(), "GET /mock/calls of mock-alpha")
		beta, err = MockCalls(ctx, t.MockBeta)
		g.Expect(err).NotTo(HaveOccurred(), "GET /mock/calls of mock-beta")
		g.Expect(alpha.Done).To(Equal(alpha.Total), "mock-alpha calls still running")
		g.Expect(beta.Done).To(Equal(beta.Total), "mock-beta calls still running")
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(20 * time.Millisecond).Should(Succeed())
	return alpha, beta
}

// Contract registers the seed-contract specs. Call it inside an Ordered
// container (they share the Target and end with the usage check); target is
// called when the specs run.
func Contract(target func() *Target) {
	var t *Target
	BeforeAll(func() { t = target() })

	It("lists on GET /v1/models exactly the aliases each key may use, on every replica", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		all, err := t.AllAliases(ctx)
		Expect(err).NotTo(HaveOccurred())
		slices.Sort(all)
		var restricted []string
		for _, a := range t.Restricted {
			if slices.Contains(all, a) {
				restricted = append(restricted, a)
			}
		}
		slices.Sort(restricted)
		Expect(restricted).NotTo(BeEmpty(), "the restricted key may use none of the served aliases %v", all)
		for _, base := range append([]string{t.Gateway}, t.Replicas...) {
			for _, k := range []struct {
				role, key string
				want      []string
			}{{"key '*'", t.KeyAll, all}, {"restricted key", t.KeyRestricted, restricted}, {"limited key", t.KeyLimited, all}} {
				Eventually(func(g Gomega) {
					ids, status, _, err := Models(ctx, base, k.key)
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(status).To(Equal(http.StatusOK))
					g.Expect(ids).To(Equal(k.want))
				}).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(250*time.Millisecond).
					Should(Succeed(), "GET /v1/models with the %s through %s", k.role, base)
			}
		}
	})

	It("refuses a missing key (401), a wrong key (401) and an alias the key may not use (403), calling no provider", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		a0, b0 := callsOf(ctx, t)

		By("no Authorization header")
		r, err := RawChat(ctx, t.Gateway, "", t.Fallback, t.prompt("hello", ""), false)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Status).To(Equal(http.StatusUnauthorized), "%s", r)
		Expect(r.Err.Type).To(Equal("authentication_error"), "%s", r)
		Expect(r.Err.Code).To(Equal("missing_api_key"), "%s", r)
		Expect(r.RequestID()).To(HavePrefix("req_"))
		Expect(r.Err.RequestID).To(Equal(r.RequestID()))

		By("a well-formed key the gateway does not know, through the SDK")
		wrong, _, _, err := keyformat.Generate()
		Expect(err).NotTo(HaveOccurred())
		rep, err := ChatSDK(ctx, t.Gateway, wrong, t.Fallback, t.prompt("hello", ""))
		Expect(err).NotTo(HaveOccurred())
		Expect(rep.Status).To(Equal(http.StatusUnauthorized), "%s", rep)
		Expect(rep.Err.Type).To(Equal("authentication_error"), "%s", rep)
		Expect(rep.Err.Code).To(Equal("invalid_api_key"), "%s", rep)
		Expect(rep.Err.Message).NotTo(ContainSubstring(wrong[8:]), "the error quotes the key")
		Expect(keyformat.LooksLikeKey(rep.Err.Message)).To(BeFalse(), "the error message holds a key")

		By("the restricted key on an alias it may not use, through the SDK")
		rep, err = ChatSDK(ctx, t.Gateway, t.KeyRestricted, t.BetaAlias, t.prompt("hello", ""))
		Expect(err).NotTo(HaveOccurred())
		t.SentRestricted.Add(Want{RequestID: rep.RequestID, What: "403 model_not_allowed", Model: t.BetaAlias,
			Status: "rejected", HTTPStatus: 403, Fallbacks: 0})
		Expect(rep.Status).To(Equal(http.StatusForbidden), "%s", rep)
		Expect(rep.Err.Type).To(Equal("permission_error"), "%s", rep)
		Expect(rep.Err.Code).To(Equal("model_not_allowed"), "%s", rep)
		Expect(rep.Provider).To(BeEmpty(), "X-Llmgw-Provider on a request the gateway refused itself")

		By("and the same key on an alias it may use")
		rep, err = ChatSDK(ctx, t.Gateway, t.KeyRestricted, t.Restricted[0], t.prompt("hello", ""))
		Expect(err).NotTo(HaveOccurred())
		t.SentRestricted.Add(Want{RequestID: rep.RequestID, What: "allowed alias", Model: t.Restricted[0],
			Status: "success", HTTPStatus: 200, Fallbacks: -1})
		Expect(rep.Status).To(Equal(http.StatusOK), "%s", rep)

		a1, b1 := callsOf(ctx, t)
		Expect(Diff(a0, a1).Total+Diff(b0, b1).Total).To(Equal(int64(1)),
			"provider calls: only the allowed request may reach a provider (alpha %s; beta %s)", Diff(a0, a1), Diff(b0, b1))
	})

	It("answers JSON and SSE chat through the OpenAI SDK, and the raw stream ends with exactly one data: [DONE]", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		for _, c := range []struct{ alias, text, provider string }{
			{t.Fallback, alphaText, "alpha"}, {t.BetaAlias, betaText, "beta"},
		} {
			prompt := t.prompt("tell me about rivers", "")
			By(c.alias + ": JSON through the SDK")
			js, err := ChatSDK(ctx, t.Gateway, t.KeyAll, c.alias, prompt)
			Expect(err).NotTo(HaveOccurred())
			t.SentAll.Add(Want{RequestID: js.RequestID, What: c.alias + " JSON", Model: c.alias, Status: "success",
				HTTPStatus: 200, Provider: c.provider, Fallbacks: 0})
			Expect(js.Status).To(Equal(http.StatusOK), "%s", js)
			Expect(js.Model).To(Equal(c.alias), "the response names the alias, not the provider's model")
			Expect(js.Content).To(HavePrefix(c.text))
			Expect(js.Finish).To(Equal("stop"))
			Expect(js.Provider).To(Equal(c.provider))
			Expect(js.Usage.CompletionTokens).To(Equal(int64(len(strings.Fields(js.Content)))))
			Expect(js.Content).NotTo(ContainSubstring(t.Marker), "the mock echoed the prompt")

			By(c.alias + ": SSE through the SDK (include_usage)")
			st, err := StreamSDK(ctx, t.Gateway, t.KeyAll, c.alias, prompt)
			Expect(err).NotTo(HaveOccurred())
			t.SentAll.Add(Want{RequestID: st.RequestID, What: c.alias + " SDK stream", Model: c.alias, Status: "success",
				HTTPStatus: 200, Provider: c.provider, Fallbacks: 0, Stream: true})
			Expect(st.Status).To(Equal(http.StatusOK), "%s", st)
			Expect(st.Model).To(Equal(c.alias))
			Expect(st.Content).To(Equal(js.Content), "stream and JSON of the same request differ")
			Expect(st.Finish).To(Equal("stop"))
			Expect(st.Usage.CompletionTokens).To(Equal(js.Usage.CompletionTokens))

			By(c.alias + ": the same stream, raw, with net/http")
			raw, err := RawChat(ctx, t.Gateway, t.KeyAll, c.alias, prompt, true)
			Expect(err).NotTo(HaveOccurred())
			t.SentAll.Add(Want{RequestID: raw.RequestID(), What: c.alias + " raw stream", Model: c.alias, Status: "success",
				HTTPStatus: 200, Provider: c.provider, Fallbacks: 0, Stream: true})
			Expect(raw.Status).To(Equal(http.StatusOK), "%s", raw)
			Expect(raw.Header.Get("Content-Type")).To(HavePrefix("text/event-stream"))
			Expect(raw.SSE.CheckTerminated()).To(Succeed(), "%s", raw)
			Expect(strings.Count(string(raw.Body), "data: [DONE]")).To(Equal(1), "%s", raw)
			Expect(raw.SSE.Errors).To(BeEmpty())
			Expect(raw.SSE.Models).To(Equal([]string{c.alias}))
			Expect(raw.SSE.Content).To(Equal(js.Content))
			Expect(raw.SSE.Finish).To(Equal("stop"))
			Expect(raw.SSE.Usage).NotTo(BeNil(), "no usage chunk with include_usage")
		}
	})

	It("falls back on a primary 5xx, 429 or timeout before the first chunk, calling each mock once", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 4*time.Minute)
		defer cancel()
		for _, c := range []struct {
			name, directive string
			stream          bool
			alphaStatus     string // by_status of alpha's one call; "" = the gateway left before headers
		}{
			{"JSON, primary 503", "alpha:status=503", false, "503"},
			{"JSON, primary 500", "alpha:status=500", false, "500"},
			{"JSON, primary 429", "alpha:status=429 alpha:retry_after=1", false, "429"},
			{"JSON, primary times out before headers", "alpha:delay_ms=20000", false, ""},
			{"SSE, primary 503", "alpha:status=503", true, "503"},
			{"SSE, primary 429", "alpha:status=429", true, "429"},
			{"SSE, primary headers but no first chunk in time", "alpha:first_byte_delay_ms=20000", true, "200"},
			{"SSE, primary error event before the first chunk", "alpha:error_after=0", true, "200"},
		} {
			By(c.name)
			a0, b0 := callsOf(ctx, t)
			r, err := RawChat(ctx, t.Gateway, t.KeyAll, t.Fallback, t.prompt("fallback please", c.directive), c.stream)
			Expect(err).NotTo(HaveOccurred(), c.name)
			t.SentAll.Add(Want{RequestID: r.RequestID(), What: c.name, Model: t.Fallback, Status: "success",
				HTTPStatus: 200, Provider: "beta", Fallbacks: 1, Stream: c.stream})
			Expect(r.Status).To(Equal(http.StatusOK), "%s: %s", c.name, r)
			Expect(r.Provider()).To(Equal("beta"), "%s: X-Llmgw-Provider", c.name)
			text := string(r.Body)
			if c.stream {
				Expect(r.SSE.CheckTerminated()).To(Succeed(), "%s: %s", c.name, r)
				Expect(r.SSE.Errors).To(BeEmpty(), "%s: %s", c.name, r)
				text = r.SSE.Content
			}
			Expect(text).To(ContainSubstring(betaText), "%s: the fallback's text", c.name)
			Expect(text).NotTo(ContainSubstring("alpha/"), "%s: two providers' text in one response", c.name)
			Eventually(func(g Gomega) {
				a1, b1 := callsOf(ctx, t)
				da, db := Diff(a0, a1), Diff(b0, b1)
				g.Expect(da.Total).To(Equal(int64(1)), "%s: alpha calls %s", c.name, da)
				if c.alphaStatus != "" {
					g.Expect(da.ByStatus).To(Equal(map[string]int64{c.alphaStatus: 1}), "%s: alpha calls %s", c.name, da)
				} else {
					g.Expect(da.ByStatus).To(BeEmpty(), "%s: alpha calls %s", c.name, da)
				}
				g.Expect(db.Total).To(Equal(int64(1)), "%s: beta calls %s", c.name, db)
				g.Expect(db.ByStatus).To(Equal(map[string]int64{"200": 1}), "%s: beta calls %s", c.name, db)
			}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
			// One success through alpha ends its run of failures: eight in a
			// row would open its circuit breaker (default: after 5), and the
			// later cases would find alpha passed over, not called.
			ok, err := RawChat(ctx, t.Gateway, t.KeyAll, t.Fallback, t.prompt("alpha again", ""), false)
			Expect(err).NotTo(HaveOccurred(), c.name)
			t.SentAll.Add(Want{RequestID: ok.RequestID(), What: c.name + ": the success through alpha after it", Model: t.Fallback,
				Status: "success", HTTPStatus: 200, Provider: "alpha", Fallbacks: 0})
			Expect(ok.Status).To(Equal(http.StatusOK), "%s: the success through alpha after it: %s", c.name, ok)
			Expect(ok.Provider()).To(Equal("alpha"), "%s: the success through alpha after it", c.name)
		}
	})

	It("never falls back once the first chunk was sent: the client gets the content so far, one error event and one [DONE]", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		for _, c := range []struct{ name, directive string }{
			{"error event after 2 of 4 chunks", "alpha:chunks=4 alpha:error_after=2"},
			{"connection cut after 1 of 4 chunks", "alpha:chunks=4 alpha:drop_after=1"},
		} {
			By(c.name)
			a0, b0 := callsOf(ctx, t)
			r, err := RawChat(ctx, t.Gateway, t.KeyAll, t.Fallback, t.prompt("cut me off", c.directive), true)
			Expect(err).NotTo(HaveOccurred(), c.name)
			t.SentAll.Add(Want{RequestID: r.RequestID(), What: c.name, Model: t.Fallback, Status: "partial",
				HTTPStatus: 200, Provider: "alpha", Fallbacks: 0, Stream: true})
			Expect(r.Status).To(Equal(http.StatusOK), "%s: %s", c.name, r)
			Expect(r.SSE.CheckTerminated()).To(Succeed(), "%s: %s", c.name, r)
			Expect(r.SSE.Content).To(HavePrefix(alphaText), "%s: %s", c.name, r)
			Expect(r.SSE.Content).NotTo(ContainSubstring("beta/"), "%s: two providers' text in one stream", c.name)
			Expect(r.SSE.Errors).To(HaveLen(1), "%s: %s", c.name, r)
			Expect(r.SSE.Errors[0].Type).To(Equal("stream_error"))
			Expect(r.SSE.Errors[0].Code).To(Equal("upstream_interrupted"))
			Expect(r.SSE.Errors[0].RequestID).To(Equal(r.RequestID()))
			a1, b1 := callsOf(ctx, t)
			Expect(Diff(a0, a1).Total).To(Equal(int64(1)), "%s: alpha calls %s", c.name, Diff(a0, a1))
			Expect(Diff(b0, b1).Total).To(BeZero(), "%s: beta was called after the commit point: %s", c.name, Diff(b0, b1))
		}
	})

	It("never falls back on a provider 400, 401 or 403", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		for _, c := range []struct {
			status         int
			stream         bool
			wantHTTP       int
			wantType, code string
		}{
			{400, false, 400, "provider_error", "upstream_rejected_request"},
			{401, false, 502, "provider_error", "upstream_auth_failed"},
			{403, false, 502, "provider_error", "upstream_auth_failed"},
			{400, true, 400, "provider_error", "upstream_rejected_request"},
			{401, true, 502, "provider_error", "upstream_auth_failed"},
		} {
			name := fmt.Sprintf("primary answers %d (stream %v)", c.status, c.stream)
			By(name)
			a0, b0 := callsOf(ctx, t)
			r, err := RawChat(ctx, t.Gateway, t.KeyAll, t.Fallback, t.prompt("no retry", fmt.Sprintf("alpha:status=%d", c.status)), c.stream)
			Expect(err).NotTo(HaveOccurred(), name)
			t.SentAll.Add(Want{RequestID: r.RequestID(), What: name, Model: t.Fallback, Status: "error",
				HTTPStatus: c.wantHTTP, Provider: "alpha", Fallbacks: 0, Stream: c.stream})
			Expect(r.Status).To(Equal(c.wantHTTP), "%s: %s", name, r)
			Expect(r.Err.Type).To(Equal(c.wantType), "%s: %s", name, r)
			Expect(r.Err.Code).To(Equal(c.code), "%s: %s", name, r)
			Expect(r.Provider()).To(Equal("alpha"), "%s", name)
			a1, b1 := callsOf(ctx, t)
			da := Diff(a0, a1)
			Expect(da.Total).To(Equal(int64(1)), "%s: alpha calls %s", name, da)
			Expect(da.ByStatus).To(Equal(map[string]int64{fmt.Sprint(c.status): 1}), "%s: alpha calls %s", name, da)
			Expect(Diff(b0, b1).Total).To(BeZero(), "%s: fell back to beta: %s", name, Diff(b0, b1))
		}
	})

	It("keeps per-key rate limits apart: key B exhausting its limit never affects key A, and a gateway 429 calls no provider", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		a0, b0 := callsOf(ctx, t)
		start := time.Now()
		var gotB, gotA []int
		sendB := func(i int) {
			r, err := RawChat(ctx, t.Gateway, t.KeyLimited, t.Fallback, t.prompt("limited", ""), false)
			Expect(err).NotTo(HaveOccurred())
			gotB = append(gotB, r.Status)
			w := Want{RequestID: r.RequestID(), What: fmt.Sprintf("key B request %d", i), Model: t.Fallback, Fallbacks: -1}
			if r.Status == http.StatusTooManyRequests {
				// Refused before the body is read (rate limit, then parsing):
				// the record has no alias.
				w.Status, w.HTTPStatus, w.Fallbacks, w.Model = "rejected", 429, 0, ""
				Expect(r.Err.Type).To(Equal("rate_limit_error"), "%s", r)
				Expect(r.Err.Code).To(Equal("rate_limit_exceeded"), "%s", r)
				Expect(r.Header.Get("Retry-After")).NotTo(BeEmpty(), "a gateway 429 without Retry-After")
				Expect(r.Provider()).To(BeEmpty(), "a gateway 429 names a provider")
			} else {
				w.Status, w.HTTPStatus, w.Provider = "success", 200, "alpha"
			}
			t.SentLimited.Add(w)
		}
		sendA := func(i int) {
			r, err := RawChat(ctx, t.Gateway, t.KeyAll, t.Fallback, t.prompt("unlimited", ""), false)
			Expect(err).NotTo(HaveOccurred())
			gotA = append(gotA, r.Status)
			t.SentAll.Add(Want{RequestID: r.RequestID(), What: fmt.Sprintf("key A request %d during B's 429s", i),
				Model: t.Fallback, Status: "success", HTTPStatus: 200, Provider: "alpha", Fallbacks: 0})
		}
		n := t.LimitedBurst + 4
		for i := range n {
			sendB(i)
			if i >= t.LimitedBurst {
				sendA(i)
			}
		}
		Expect(time.Since(start)).To(BeNumerically("<", 50*time.Second),
			"the burst took so long that key B's bucket (1 per minute) may have refilled; the statuses below would not be exact")
		wantB := slices.Repeat([]int{200}, t.LimitedBurst)
		wantB = append(wantB, slices.Repeat([]int{429}, n-t.LimitedBurst)...)
		Expect(gotB).To(Equal(wantB), "key B (burst %d, 1 per minute)", t.LimitedBurst)
		Expect(gotA).To(Equal(slices.Repeat([]int{200}, n-t.LimitedBurst)), "key A while key B is limited")
		a1, b1 := callsOf(ctx, t)
		Expect(Diff(a0, a1).Total).To(Equal(int64(n)),
			"alpha calls: one per 200, none for a gateway 429 (%s)", Diff(a0, a1))
		Expect(Diff(b0, b1).Total).To(BeZero())
	})

	It("leaves exactly one usage record per request, listed the same through every replica", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 2*time.Minute)
		defer cancel()
		for _, k := range []struct {
			role string
			key  string
			sent *Sent
		}{{"key '*'", t.KeyAll, &t.SentAll}, {"restricted key", t.KeyRestricted, &t.SentRestricted}, {"limited key", t.KeyLimited, &t.SentLimited}} {
			Expect(k.sent.Wants).NotTo(BeEmpty(), "%s sent nothing", k.role)
			var first []string
			for _, base := range t.Replicas {
				var list UsageList
				Eventually(func(g Gomega) {
					var err error
					list, err = ListUsage(ctx, base, k.key)
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(k.sent.CheckExactlyOne(list)).To(BeEmpty(), "%s through %s", k.role, base)
				}).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Succeed())
				ids := list.IDs()
				if first == nil {
					first = ids
				} else {
					Expect(ids).To(Equal(first), "%s: %s lists other records than %s", k.role, base, t.Replicas[0])
				}
			}
			GinkgoWriter.Printf("usage: %s: %d requests, exactly one record each, the same through %d replica(s)\n",
				k.role, len(k.sent.Wants), len(t.Replicas))
		}
	})
}
