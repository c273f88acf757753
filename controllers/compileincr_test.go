package controllers

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// sameCompile fails unless compiling in with memo (patched, or in full
// when the memo cannot patch) gives exactly what compiling afresh gives:
// the snapshot with its version, and every status with its digest, uid,
// generation and the next expiry. It compiles with the memo twice: the
// change, then nothing (always patched). It says whether the change was
// patched.
func sameCompile(t *testing.T, what string, in Inputs, memo *CompileMemo) bool {
	t.Helper()
	fresh := in
	fresh.Memo = nil
	want, wantSt := Compile(fresh)
	var patched [2]bool
	for round := range 2 {
		withMemo := in
		withMemo.Memo = memo
		before := memo.patches
		got, gotSt := Compile(withMemo)
		patched[round] = memo.patches > before
		if diff := compileDiff(&want, &wantSt, &got, &gotSt); diff != "" {
			t.Fatalf("%s (compile %d with the memo, patched %v): %s", what, round+1, patched[round], diff)
		}
	}
	if !patched[1] && wantSt.Invalid == nil && identified(&in) {
		t.Fatalf("%s: compiling again with nothing changed was not patched", what)
	}
	return patched[0]
}

// identified: every object has a UID and a generation, and every key a
// name of its own (else nothing is patched).
func identified(in *Inputs) bool {
	names := map[string]bool{}
	for _, k := range in.Keys {
		if k.UID == "" || k.Generation == 0 || names[k.Name] {
			return false
		}
		names[k.Name] = true
	}
	return eachObject(in, func(_ objectRef, m *metav1.ObjectMeta) bool { return m.UID != "" && m.Generation != 0 })
}

// compileDiff says where two compilations differ ("" when they do not).
func compileDiff(want *snapshot.Snapshot, wantSt *Statuses, got *snapshot.Snapshot, gotSt *Statuses) string {
	if got.Version != want.Version {
		ids := func(s *snapshot.Snapshot) []string {
			var out []string
			for _, k := range s.Keys {
				out = append(out, k.ID)
			}
			return out
		}
		var why []string
		for id, r := range wantSt.Keys {
			if g := gotSt.Keys[id]; g.InSnapshot != r.InSnapshot || g.Accepted.Reason != r.Accepted.Reason {
				why = append(why, fmt.Sprintf("%s: got %s %q, want %s %q", id, g.Accepted.Reason, g.Accepted.Message, r.Accepted.Reason, r.Accepted.Message))
			}
		}
		return fmt.Sprintf("version %s, want %s\ngot keys  %v\nwant keys %v\n%s", got.Version, want.Version, ids(got), ids(want), strings.Join(why, "\n"))
	}
	if !reflect.DeepEqual(got, want) {
		for i := range min(len(got.Keys), len(want.Keys)) {
			if !reflect.DeepEqual(got.Keys[i], want.Keys[i]) {
				return fmt.Sprintf("snapshot key %d: %+v, want %+v", i, got.Keys[i], want.Keys[i])
			}
		}
		return fmt.Sprintf("snapshots differ (%d keys, want %d)", len(got.Keys), len(want.Keys))
	}
	if d := mapDiff("key", gotSt.Keys, wantSt.Keys); d != "" {
		return d
	}
	if d := mapDiff("group", gotSt.Groups, wantSt.Groups); d != "" {
		return d
	}
	if !reflect.DeepEqual(gotSt, wantSt) {
		return fmt.Sprintf("statuses differ (next expiry %v, want %v; invalid %v, want %v)", gotSt.NextExpiry, wantSt.NextExpiry, gotSt.Invalid, wantSt.Invalid)
	}
	return ""
}

func mapDiff[V any](kind string, got, want map[string]V) string {
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[name]; !ok || !reflect.DeepEqual(g, want[name]) {
			return fmt.Sprintf("%s %q: %+v, want %+v", kind, name, g, want[name])
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			return fmt.Sprintf("%s %q should not be there", kind, name)
		}
	}
	return ""
}

// identify gives every object a UID and generation 1, as the API server
// does: the memo patches only objects it can tell from their next version.
func identify(in *Inputs) {
	n := 0
	id := func(m *metav1.ObjectMeta) {
		n++
		m.UID, m.Generation = types.UID(fmt.Sprintf("uid-%d", n)), 1
	}
	for i := range in.Providers {
		id(&in.Providers[i].ObjectMeta)
	}
	for i := range in.Aliases {
		id(&in.Aliases[i].ObjectMeta)
	}
	for i := range in.Groups {
		id(&in.Groups[i].ObjectMeta)
	}
	for i := range in.Keys {
		id(&in.Keys[i].ObjectMeta)
	}
}

// world is a small namespace that random steps change, with prefixes and
// hashes drawn often enough from a shared pool that keys conflict, claims
// change hands and losers win.
type world struct {
	r   *rand.Rand
	in  Inputs
	seq int
}

func newWorld(seed uint64) *world {
	w := &world{r: rand.New(rand.NewPCG(seed, 99))}
	w.in = Inputs{Namespace: "llmgw-system", Now: goldenNow,
		Secrets: map[string][]string{"creds": {"key"}}, Services: map[string][]int32{},
		OwnerLabels: []string{"team"}, ExpiryWarning: time.Duration(w.r.IntN(3)) * 6 * time.Hour}
	priced := w.r.IntN(2) == 0
	w.in.Providers = []v1alpha1.ProviderEndpoint{w.provider("pa", priced), w.provider("pb", false)}
	w.in.Aliases = []v1alpha1.ModelAlias{w.alias("chat", "pa"), w.alias("code", "pb"), w.alias("broken", "missing")}
	w.in.Groups = []v1alpha1.BudgetGroup{w.group("team", w.r.IntN(2) == 0), w.group("bad", true)}
	w.in.Groups[1].Spec.Budget.Amount = "lots" // never accepted
	// A watched team namespace: its keys are named team-a/<name>, and their
	// group "team" is team-a's own.
	teamGroup := w.group("team", w.r.IntN(2) == 0)
	teamGroup.Namespace = "team-a"
	w.in.Groups = append(w.in.Groups, teamGroup)
	for range 20 + w.r.IntN(30) {
		w.in.Keys = append(w.in.Keys, w.key(w.name()))
	}
	return w
}

func (w *world) next() int {
	w.seq++
	return w.seq
}

func (w *world) otherNamespace(ns string) string {
	if ns == "team-a" {
		return w.in.Namespace
	}
	return "team-a"
}

func (w *world) taken(ns, name string) bool {
	return slices.ContainsFunc(w.in.Keys, func(k v1alpha1.GatewayKey) bool { return k.Namespace == ns && k.Name == name })
}

func (w *world) name() string { return fmt.Sprintf("key-%03d", w.next()) }

// meta is a new object's: creation times collide often, so names break
// ties.
func (w *world) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: w.in.Namespace, UID: types.UID(fmt.Sprintf("uid-%d", w.next())), Generation: 1,
		CreationTimestamp: metav1.NewTime(goldenNow.Add(-time.Duration(w.r.IntN(6)) * time.Hour))}
}

func (w *world) provider(name string, priced bool) v1alpha1.ProviderEndpoint {
	pe := v1alpha1.ProviderEndpoint{ObjectMeta: w.meta(name), Spec: v1alpha1.ProviderEndpointSpec{Protocol: "openai",
		URL: "https://" + name + ".example/v1", Credential: &v1alpha1.Credential{SecretRef: v1alpha1.SecretKeyReference{Name: "creds", Key: "key"}}}}
	if priced {
		pe.Spec.Prices = []v1alpha1.ModelPrice{{Model: "m", Currency: "USD", InputPerMillion: "1", OutputPerMillion: "2"}}
	}
	return pe
}

func (w *world) alias(name, provider string) v1alpha1.ModelAlias {
	return v1alpha1.ModelAlias{ObjectMeta: w.meta(name), Spec: v1alpha1.ModelAliasSpec{Primary: v1alpha1.Route{Provider: provider, Model: "m"}}}
}

func (w *world) group(name string, budget bool) v1alpha1.BudgetGroup {
	g := v1alpha1.BudgetGroup{ObjectMeta: w.meta(name), Spec: v1alpha1.BudgetGroupSpec{TokensPerMinute: 1000}}
	if budget {
		g.Spec.Budget = &v1alpha1.Budget{Amount: "10", Currency: "USD"}
	}
	return g
}

func (w *world) key(name string) v1alpha1.GatewayKey {
	gk := v1alpha1.GatewayKey{ObjectMeta: w.meta(name), Spec: v1alpha1.GatewayKeySpec{Models: []string{"*"}}}
	// A third of the keys in the team namespace, now and then under the
	// name of a key of the other namespace (two keys); never two objects of
	// one namespace and name.
	ns := w.in.Namespace
	switch w.r.IntN(6) {
	case 0, 1:
		ns = "team-a"
	case 2:
		if n := len(w.in.Keys); n > 0 {
			other := w.in.Keys[w.r.IntN(n)]
			name, ns = other.Name, w.otherNamespace(other.Namespace)
		}
	}
	if w.taken(ns, name) {
		ns = w.otherNamespace(ns)
	}
	if w.taken(ns, name) {
		name = w.name()
	}
	gk.Name, gk.Namespace = name, ns
	w.newPrefix(&gk.Spec)
	w.newHash(&gk.Spec)
	for range w.r.IntN(3) {
		w.vary(&gk.Spec)
	}
	return gk
}

// newPrefix is mostly the key's own, a quarter of the time one of four
// shared ones, now and then an invalid one.
func (w *world) newPrefix(s *v1alpha1.GatewayKeySpec) {
	switch n := w.r.IntN(20); {
	case n < 5:
		s.KeyPrefix = fmt.Sprintf("lgw_shared%04d", n)
	case n == 5:
		s.KeyPrefix = "not-a-prefix"
	default:
		s.KeyPrefix = fmt.Sprintf("lgw_%010d", w.next())
	}
}

func (w *world) newHash(s *v1alpha1.GatewayKeySpec) {
	switch n := w.r.IntN(20); {
	case n < 5:
		s.KeyHash = keyformat.Hash(fmt.Sprintf("shared-%d", n))
	case n == 5:
		s.KeyHash = "sha256:nothex"
	default:
		s.KeyHash = keyformat.Hash(fmt.Sprintf("own-%d", w.next()))
	}
}

// vary changes one thing of a key's spec.
func (w *world) vary(s *v1alpha1.GatewayKeySpec) {
	switch w.r.IntN(10) {
	case 9:
		// A rotation: its previous prefix and hash from the same pools as
		// every key's, so they conflict with other keys' (current or
		// previous) too; its grace ends within the hours time moves.
		if s.Previous != nil && w.r.IntN(3) == 0 {
			s.Previous = nil
			break
		}
		var old v1alpha1.GatewayKeySpec
		w.newPrefix(&old)
		w.newHash(&old)
		s.Previous = &v1alpha1.PreviousKey{KeyPrefix: old.KeyPrefix, KeyHash: old.KeyHash,
			AcceptedUntil: metav1.NewTime(w.in.Now.Add(time.Duration(w.r.IntN(24*60)-4*60) * time.Minute))}
	case 0:
		s.Disabled = !s.Disabled
	case 1:
		s.Models = [][]string{{"*"}, {"chat"}, {"chat", "code"}, {"broken"}, {"gone", "chat"}, {"gone"}, {}}[w.r.IntN(7)]
	case 2:
		s.Group = []string{"", "team", "bad", "missing"}[w.r.IntN(4)]
	case 3:
		switch w.r.IntN(3) {
		case 0:
			s.Budget = nil
		case 1:
			s.Budget = &v1alpha1.Budget{Amount: "5", Currency: "USD"}
		case 2:
			s.Budget = &v1alpha1.Budget{Amount: "5", Currency: "EUR"}
		}
	case 4:
		if w.r.IntN(3) == 0 {
			s.ExpiresAt = nil
		} else {
			e := metav1.NewTime(w.in.Now.Add(time.Duration(w.r.IntN(48)-12) * time.Hour))
			s.ExpiresAt = &e
		}
	case 5:
		w.newPrefix(s)
	case 6:
		w.newHash(s)
	case 7:
		s.TokensPerMinute = int64(w.r.IntN(3)) * 100
	case 8:
		s.RateLimit = &v1alpha1.RateLimit{RequestsPerMinute: int32(1 + w.r.IntN(100)), Burst: int32(1 + w.r.IntN(10))}
	}
}

// step makes one to three random changes, mostly to keys, and says what.
func (w *world) step() string {
	in := &w.in
	in.Keys = slices.Clone(in.Keys)
	var did []string
	for range 1 + w.r.IntN(3) {
		i := w.r.IntN(max(len(in.Keys), 1))
		switch n := w.r.IntN(100); {
		case n < 45 && len(in.Keys) > 0:
			k := &in.Keys[i]
			k.Spec = *k.Spec.DeepCopy()
			w.vary(&k.Spec)
			k.Generation++
			did = append(did, "edit "+k.Name)
		case n < 55 && len(in.Keys) > 0:
			did = append(did, "delete "+in.Keys[i].Name)
			in.Keys = slices.Delete(in.Keys, i, i+1)
		case n < 68:
			k := w.key(w.name())
			did = append(did, "create "+k.Name)
			in.Keys = append(in.Keys, k)
		case n < 74 && len(in.Keys) > 0:
			did = append(did, "re-create "+in.Keys[i].Name)
			in.Keys[i] = w.key(in.Keys[i].Name)
		case n < 82:
			in.Now = in.Now.Add(time.Duration(w.r.IntN(12*60)) * time.Minute)
			did = append(did, "time to "+in.Now.Format(time.RFC3339))
		case n < 85:
			in.Now = in.Now.Add(-time.Hour)
			did = append(did, "time back")
		case n < 90:
			w.changeOther()
			did = append(did, "a provider, alias, group, Secret or limit")
		case n < 95 && len(in.Keys) > 0:
			k := &in.Keys[i]
			name := w.relabel(&k.ObjectMeta)
			did = append(did, "relabel "+k.Name+" "+name)
		default:
			r := w.r
			r.Shuffle(len(in.Keys), func(i, j int) { in.Keys[i], in.Keys[j] = in.Keys[j], in.Keys[i] })
			did = append(did, "keys listed in another order")
		}
	}
	return fmt.Sprint(did)
}

// relabel changes a label of an object, without a new generation (as the
// API server does): the owner label "team" or another one; it says which.
func (w *world) relabel(m *metav1.ObjectMeta) string {
	name := []string{"team", "app"}[w.r.IntN(2)]
	m.Labels = maps.Clone(m.Labels)
	switch {
	case m.Labels == nil:
		m.Labels = map[string]string{name: "a"}
	case w.r.IntN(4) == 0:
		delete(m.Labels, name)
	default:
		m.Labels[name] = []string{"a", "b", "c"}[w.r.IntN(3)]
	}
	return name
}

// changeOther changes something Compile reads besides the keys.
func (w *world) changeOther() {
	in := &w.in
	switch w.r.IntN(7) {
	case 6:
		in.Groups = slices.Clone(in.Groups)
		w.relabel(&in.Groups[w.r.IntN(len(in.Groups))].ObjectMeta)
	case 0:
		in.Providers = slices.Clone(in.Providers)
		pe := &in.Providers[0]
		pe.Spec = *pe.Spec.DeepCopy()
		if pe.Spec.Prices == nil {
			pe.Spec.Prices = []v1alpha1.ModelPrice{{Model: "m", Currency: []string{"USD", "EUR"}[w.r.IntN(2)], InputPerMillion: "1", OutputPerMillion: "2"}}
		} else {
			pe.Spec.Prices = nil
		}
		pe.Generation++
	case 1:
		in.Aliases = slices.Clone(in.Aliases)
		a := &in.Aliases[w.r.IntN(len(in.Aliases))]
		a.Spec.Primary.Provider = []string{"pa", "pb", "missing"}[w.r.IntN(3)]
		a.Generation++
	case 2:
		in.Groups = slices.Clone(in.Groups)
		g := &in.Groups[0]
		g.Spec = *g.Spec.DeepCopy()
		if g.Spec.Budget == nil {
			g.Spec.Budget = &v1alpha1.Budget{Amount: "10", Currency: []string{"USD", "EUR"}[w.r.IntN(2)]}
		} else {
			g.Spec.Budget = nil
		}
		g.Generation++
	case 3:
		in.Secrets = maps.Clone(in.Secrets)
		if _, ok := in.Secrets["creds"]; ok {
			delete(in.Secrets, "creds")
		} else {
			in.Secrets["creds"] = []string{"key"}
		}
	case 4:
		in.Limits.MaxConcurrent = 1 + w.r.IntN(3)
	case 5:
		// Deleted and created again under its name: another UID.
		in.Aliases = slices.Clone(in.Aliases)
		a := &in.Aliases[w.r.IntN(len(in.Aliases))]
		a.ObjectMeta = w.meta(a.Name)
	}
}

// TestCompilePatchRandom: through random changes to keys (edits, prefix and
// hash conflicts appearing and going, deletions, re-creations, budgets,
// groups, expiry as time passes, any list order) and now and then to
// everything else, compiling with a memo gives exactly what compiling
// afresh gives — and most compilations are patched.
func TestCompilePatchRandom(t *testing.T) {
	patched, steps := 0, 0
	for seed := range uint64(40) {
		w := newWorld(seed)
		memo := NewCompileMemo()
		sameCompile(t, fmt.Sprintf("seed %d, as created", seed), w.in, memo)
		for step := range 60 {
			what := w.step()
			if sameCompile(t, fmt.Sprintf("seed %d step %d: %s", seed, step, what), w.in, memo) {
				patched++
			}
			steps++
		}
	}
	t.Logf("%d of %d changes patched", patched, steps)
	if patched < steps/4 {
		t.Errorf("only %d of %d changes patched: the test hardly exercises patch", patched, steps)
	}
}

// TestCompilePatchScale: at the scale the patch is for, a one-key change,
// a deletion and a creation are patched, and give what a full compile
// gives.
func TestCompilePatchScale(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles 5,000 keys in full several times")
	}
	in := scaleInputs(5_000, 100)
	memo := NewCompileMemo()
	sameCompile(t, "as created", in, memo)
	in.Keys = slices.Clone(in.Keys)
	steps := []struct {
		what string
		edit func()
	}{
		{"a key disabled", func() { in.Keys[2500].Spec.Disabled = !in.Keys[2500].Spec.Disabled; in.Keys[2500].Generation++ }},
		{"the first key's models cut", func() { in.Keys[0].Spec.Models = []string{"team-0000-chat"}; in.Keys[0].Generation++ }},
		{"the last key deleted", func() { in.Keys = in.Keys[:len(in.Keys)-1] }},
		{"a key created", func() {
			k := in.Keys[10]
			k.Name, k.UID = "aaa-first", "uid-aaa-first"
			k.Spec.KeyPrefix, k.Spec.KeyHash = "lgw_aaaaaaaaaa", keyformat.Hash("aaa")
			in.Keys = append(in.Keys, k)
		}},
		{"keys listed in another order", func() {
			sort.Slice(in.Keys, func(i, j int) bool { return in.Keys[i].UID > in.Keys[j].UID })
		}},
	}
	for _, s := range steps {
		s.edit()
		if !sameCompile(t, s.what, in, memo) {
			t.Errorf("%s: not patched", s.what)
		}
	}
}

// TestCompilePatchTwoKeysOneName: a namespace never lists two objects of
// one name, but Inputs can; the memo then compiles in full, as without it.
func TestCompilePatchTwoKeysOneName(t *testing.T) {
	w := newWorld(1)
	memo := NewCompileMemo()
	sameCompile(t, "as created", w.in, memo)
	twin := w.in.Keys[3]
	twin.UID, twin.Spec.KeyPrefix, twin.Spec.KeyHash = "uid-twin", "lgw_twin000001", keyformat.Hash("twin")
	w.in.Keys = append(slices.Clone(w.in.Keys), twin)
	if sameCompile(t, "a second key of one name", w.in, memo) {
		t.Error("two keys of one name were patched")
	}
	w.in.Keys = slices.Delete(w.in.Keys, 3, 4)
	sameCompile(t, "the first of the two deleted", w.in, memo)
}
