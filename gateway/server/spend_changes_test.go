package server_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/quota"
	"github.com/llmgw/llmgw/gateway/server"
	"github.com/llmgw/llmgw/gateway/usage"
	"github.com/llmgw/llmgw/test/testutil"
)

// Every change to a key keeps its spend right: after each kind of change
// (budget added, raised, lowered, period changed, group joined or left,
// key rotated, price changed) the live gateway, the same gateway restarted
// on its ledger and — with the shared store — another replica admit
// exactly the same number of requests. Each request costs one unit (ten
// output tokens at 0.000001 a token; what it reserves is what it costs),
// budgets are in units.

func units(n int) string { return fmt.Sprintf("0.%05d", n) }

// fixedUpstream answers every chat request (JSON or streamed) with ten
// output tokens, or a hundred for model "over" (a provider reporting more
// than max_tokens).
func fixedUpstream(t *testing.T) string {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		out := 10
		if strings.Contains(string(b), `"model":"over"`) {
			out = 100
		}
		if strings.Contains(string(b), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}`+"\n\n")
			fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
			fmt.Fprintf(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":%d,"total_tokens":%d}}`+"\n\ndata: [DONE]\n\n", out, out+3)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":%d,"total_tokens":%d}}`, out, out+3)
	}))
	t.Cleanup(up.Close)
	return up.URL
}

// spendKeys are the keys of a spend scenario: "a" (its plaintext may
// change when it is rotated) and "b", another key.
type spendKeys struct{ a, aPrev, b *keyPair }

type keyPair struct{ plain, prefix, hash string }

func newKeyPair(t *testing.T) *keyPair {
	plain, prefix, hash, err := keyformat.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return &keyPair{plain, prefix, hash}
}

// spendSnapshot is alias "chat" on the fixed upstream, priced per output
// token at price, with keys a and b (no limits); edit adds the scenario's.
func spendSnapshot(upstream string, keys spendKeys, price string, edit func(s *snapshot.Snapshot)) *snapshot.Snapshot {
	s := &snapshot.Snapshot{
		Providers: []snapshot.Provider{{Name: "up", Protocol: snapshot.ProtocolOpenAI, BaseURL: upstream,
			Prices: []snapshot.Price{{Model: "m", InputPerMillion: "0", OutputPerMillion: price},
				{Model: "over", InputPerMillion: "0", OutputPerMillion: price}}}},
		Aliases: []snapshot.Alias{{Name: "chat", Primary: snapshot.Route{Provider: "up", Model: "m"}},
			{Name: "over", Primary: snapshot.Route{Provider: "up", Model: "over"}}},
		Keys: []snapshot.Key{
			{ID: "a", Prefix: keys.a.prefix, Hash: keys.a.hash, Models: []string{"*"}, RateLimit: snapshot.RateLimit{RPM: 100000, Burst: 10000}},
			{ID: "b", Prefix: keys.b.prefix, Hash: keys.b.hash, Models: []string{"*"}, RateLimit: snapshot.RateLimit{RPM: 100000, Burst: 10000}},
		},
	}
	if keys.aPrev != nil {
		s.Keys[0].Previous = &snapshot.PreviousKey{Prefix: keys.aPrev.prefix, Hash: keys.aPrev.hash, Until: time.Now().Add(time.Hour)}
	}
	if edit != nil {
		edit(s)
	}
	return s
}

func budget(n int, period string) *snapshot.Budget {
	return &snapshot.Budget{Amount: units(n), Period: period}
}

// replica is one gateway: a server on a ledger file and a quota store.
type replica struct {
	srv    *server.Server
	ledger *usage.Ledger
	url    string
	close  func()
}

func startReplica(t *testing.T, dbPath string, store quota.Store, snap *snapshot.Snapshot) *replica {
	t.Helper()
	ctx := context.Background()
	l, err := usage.Open(ctx, dbPath, usage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Ledger: l, Quota: store})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.RecoverQuotas(ctx, l.RecoveredIDs()); err != nil {
		t.Fatal(err)
	}
	if err := srv.Apply(ctx, snap); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	r := &replica{srv: srv, ledger: l, url: hs.URL}
	closed := false
	r.close = func() {
		if !closed {
			closed = true
			hs.Close()
			_ = l.Close()
		}
	}
	t.Cleanup(r.close)
	return r
}

// post sends one chat request (streamed or not) to alias with key; the
// answer's status, headers and body.
func (r *replica) post(t *testing.T, key, alias string, stream bool) (int, http.Header, []byte) {
	t.Helper()
	body := fmt.Sprintf(`{"model":%q,"max_tokens":10,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, alias, stream)
	req, _ := http.NewRequest(http.MethodPost, r.url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// chatAs sends one chat request to alias with key; the answer's status and
// error code.
func (r *replica) chatAs(t *testing.T, key, alias string) (int, string) {
	t.Helper()
	status, _, b := r.post(t, key, alias, false)
	if status == http.StatusOK {
		return status, ""
	}
	var e errorBody
	_ = json.Unmarshal(b, &e)
	return status, e.Error.Code
}

// admitted sends requests with key until one is refused (at most limit)
// and counts the admitted ones; a refusal must be budget_exceeded.
func (r *replica) admitted(t *testing.T, key string, limit int) int {
	t.Helper()
	for n := range limit {
		status, code := r.chatAs(t, key, "chat")
		if status == http.StatusOK {
			continue
		}
		if status != http.StatusTooManyRequests || code != "budget_exceeded" {
			t.Fatalf("request %d: %d %s", n, status, code)
		}
		return n
	}
	return limit
}

func (r *replica) spend(t *testing.T, key string, n int) {
	t.Helper()
	for i := range n {
		if status, code := r.chatAs(t, key, "chat"); status != http.StatusOK {
			t.Fatalf("spending request %d of %d: %d %s", i, n, status, code)
		}
	}
}

func TestSpendSurvivesEveryChange(t *testing.T) {
	type scenario struct {
		name string
		// before and after are the snapshots around the change; spend
		// runs on before (k: the keys), probe counts what after admits
		// (and must equal want).
		before, after func(s *snapshot.Snapshot)
		price         string // after's price per million output tokens; "" = 1
		rotate        bool   // after the change key a is a new key (the old one in its grace)
		spend         func(t *testing.T, r *replica, k spendKeys)
		probeKey      func(k spendKeys) *keyPair
		want          int
	}
	spendA := func(n int) func(t *testing.T, r *replica, k spendKeys) {
		return func(t *testing.T, r *replica, k spendKeys) { r.spend(t, k.a.plain, n) }
	}
	keyA := func(k spendKeys) *keyPair { return k.a }
	keyB := func(k spendKeys) *keyPair { return k.b }
	setKey := func(f func(k *snapshot.Key)) func(s *snapshot.Snapshot) {
		return func(s *snapshot.Snapshot) { f(&s.Keys[0]) }
	}
	group := func(n int) func(s *snapshot.Snapshot) {
		return func(s *snapshot.Snapshot) {
			s.Groups = []snapshot.Group{{Name: "g", Budget: budget(n, snapshot.PeriodMonth)}}
			s.Keys[1].Group = "g"
		}
	}
	both := func(fs ...func(s *snapshot.Snapshot)) func(s *snapshot.Snapshot) {
		return func(s *snapshot.Snapshot) {
			for _, f := range fs {
				f(s)
			}
		}
	}
	scenarios := []scenario{
		{name: "budget added", spend: spendA(5),
			after:    setKey(func(k *snapshot.Key) { k.Budget = budget(8, snapshot.PeriodMonth) }),
			probeKey: keyA, want: 3},
		{name: "budget raised", spend: spendA(5),
			before:   setKey(func(k *snapshot.Key) { k.Budget = budget(5, snapshot.PeriodMonth) }),
			after:    setKey(func(k *snapshot.Key) { k.Budget = budget(8, snapshot.PeriodMonth) }),
			probeKey: keyA, want: 3},
		{name: "budget lowered", spend: spendA(5),
			before:   setKey(func(k *snapshot.Key) { k.Budget = budget(9, snapshot.PeriodMonth) }),
			after:    setKey(func(k *snapshot.Key) { k.Budget = budget(6, snapshot.PeriodMonth) }),
			probeKey: keyA, want: 1},
		{name: "period changed month to day", spend: spendA(5),
			before:   setKey(func(k *snapshot.Key) { k.Budget = budget(9, snapshot.PeriodMonth) }),
			after:    setKey(func(k *snapshot.Key) { k.Budget = budget(7, snapshot.PeriodDay) }),
			probeKey: keyA, want: 2},
		{name: "period changed day to month", spend: spendA(5),
			before:   setKey(func(k *snapshot.Key) { k.Budget = budget(9, snapshot.PeriodDay) }),
			after:    setKey(func(k *snapshot.Key) { k.Budget = budget(7, snapshot.PeriodMonth) }),
			probeKey: keyA, want: 2},
		{name: "group joined", spend: spendA(5), // a's spend before it joined stays out of the group
			before:   group(8),
			after:    both(group(8), setKey(func(k *snapshot.Key) { k.Group = "g" })),
			probeKey: keyA, want: 8},
		{name: "group left", // a's spend in the group stays the group's
			before: both(group(8), setKey(func(k *snapshot.Key) { k.Group = "g" })),
			spend:  spendA(5), after: group(8),
			probeKey: keyB, want: 3},
		{name: "key rotated", spend: spendA(5), rotate: true,
			before:   setKey(func(k *snapshot.Key) { k.Budget = budget(8, snapshot.PeriodMonth) }),
			after:    setKey(func(k *snapshot.Key) { k.Budget = budget(8, snapshot.PeriodMonth) }),
			probeKey: keyA, want: 3},
		{name: "price changed", spend: spendA(5), price: "2", // a request now costs two units: 3 left is one request
			before:   setKey(func(k *snapshot.Key) { k.Budget = budget(8, snapshot.PeriodMonth) }),
			after:    setKey(func(k *snapshot.Key) { k.Budget = budget(8, snapshot.PeriodMonth) }),
			probeKey: keyA, want: 1},
	}
	upstream := fixedUpstream(t)
	redisSrv := testutil.StartRedis(t, "")
	n := 0
	for _, store := range []string{"memory", "redis"} {
		for _, mode := range []string{"live", "restarted", "other replica"} {
			if store == "memory" && mode == "other replica" {
				continue // replicas share limits only through the shared store
			}
			for _, sc := range scenarios {
				t.Run(store+"/"+mode+"/"+sc.name, func(t *testing.T) {
					n++
					prefix := fmt.Sprintf("spend%d:", n)
					newStore := func() quota.Store {
						if store == "memory" {
							return nil // the server's own memory store
						}
						r, err := quota.NewRedis(quota.RedisOptions{URL: redisSrv.URL(), Password: redisSrv.Password, Prefix: prefix})
						if err != nil {
							t.Fatal(err)
						}
						t.Cleanup(func() { _ = r.Close() })
						return r
					}
					keys := spendKeys{a: newKeyPair(t), b: newKeyPair(t)}
					before := spendSnapshot(upstream, keys, "1", sc.before)
					afterKeys := keys
					if sc.rotate {
						afterKeys = spendKeys{a: newKeyPair(t), aPrev: keys.a, b: keys.b}
					}
					after := spendSnapshot(upstream, afterKeys, cmp.Or(sc.price, "1"), sc.after)
					dir := t.TempDir()
					live := startReplica(t, filepath.Join(dir, "a.db"), newStore(), before)
					sc.spend(t, live, keys)
					probe := live
					switch mode {
					case "live":
						if err := live.srv.Apply(context.Background(), after); err != nil {
							t.Fatal(err)
						}
					case "restarted":
						live.close()
						probe = startReplica(t, filepath.Join(dir, "a.db"), newStore(), after)
					case "other replica":
						if err := live.srv.Apply(context.Background(), after); err != nil {
							t.Fatal(err)
						}
						probe = startReplica(t, filepath.Join(dir, "b.db"), newStore(), after)
					}
					if got := probe.admitted(t, sc.probeKey(afterKeys).plain, 20); got != sc.want {
						t.Fatalf("admitted %d after the change, want %d", got, sc.want)
					}
				})
			}
		}
	}
}

// A provider that reports more output tokens than max_tokens (here ten
// times as many) is charged what it reports: the record's cost is the real
// one and the budget refuses the rest of the period once it is overdrawn,
// so the overshoot is bounded by the requests admitted before it showed.
func TestOvershootIsChargedAndRefusesTheRest(t *testing.T) {
	upstream := fixedUpstream(t)
	keys := spendKeys{a: newKeyPair(t), b: newKeyPair(t)}
	r := startReplica(t, filepath.Join(t.TempDir(), "u.db"), nil, spendSnapshot(upstream, keys, "1", func(s *snapshot.Snapshot) {
		s.Keys[0].Budget = budget(15, snapshot.PeriodMonth)
	}))
	for i := range 2 { // 10 units each: the second fits what is left of 15 as far as admission knows (1 unit)
		if status, code := r.chatAs(t, keys.a.plain, "over"); status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, status, code)
		}
	}
	if status, code := r.chatAs(t, keys.a.plain, "over"); status != http.StatusTooManyRequests || code != "budget_exceeded" {
		t.Fatalf("after the budget was overdrawn: %d %s", status, code)
	}
	if status, code := r.chatAs(t, keys.a.plain, "chat"); status != http.StatusTooManyRequests || code != "budget_exceeded" {
		t.Fatalf("another alias after the budget was overdrawn: %d %s", status, code)
	}
	tot, err := r.ledger.Summary(context.Background(), "a", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := money.ParseAmount(units(20)); tot.Costs["USD"] != want {
		t.Fatalf("recorded spend %s, want %s (two requests at their real cost)", tot.Costs["USD"], want)
	}
}
