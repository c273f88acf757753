package controllers

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite controllers/testdata golden files")

// goldenNow is the clock of every golden case, so expiry is reproducible.
var goldenNow = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

// loadInputs reads a multi-document YAML of ProviderEndpoints, ModelAliases,
// GatewayKeys, Secrets and Services (only the Secrets' names and data keys
// matter, and the Services' names and ports).
func loadInputs(t *testing.T, paths ...string) Inputs {
	t.Helper()
	var raw []byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		raw = append(append(raw, "\n---\n"...), b...)
	}
	path := strings.Join(paths, ",")
	in := Inputs{Namespace: "llmgw-system", Now: goldenNow, Secrets: map[string][]string{}, Services: map[string][]int32{}}
	for i, doc := range strings.Split(string(raw), "\n---") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var head struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("%s doc %d: %v", path, i, err)
		}
		strict := func(into any) {
			if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
				t.Fatalf("%s doc %d (%s): %v", path, i, head.Kind, err)
			}
		}
		switch head.Kind {
		case "ProviderEndpoint":
			var o v1alpha1.ProviderEndpoint
			strict(&o)
			in.Providers = append(in.Providers, o)
		case "ModelAlias":
			var o v1alpha1.ModelAlias
			strict(&o)
			in.Aliases = append(in.Aliases, o)
		case "GatewayKey":
			var o v1alpha1.GatewayKey
			strict(&o)
			in.Keys = append(in.Keys, o)
		case "BudgetGroup":
			var o v1alpha1.BudgetGroup
			strict(&o)
			in.Groups = append(in.Groups, o)
		case "Secret":
			var o corev1.Secret
			strict(&o)
			in.Secrets[o.Name] = secretKeys(&o)
		case "Service":
			var o corev1.Service
			strict(&o)
			in.Services[o.Name] = servicePorts(&o)
		case "":
			// a comment-only document
		default:
			t.Fatalf("%s doc %d: unexpected kind %q", path, i, head.Kind)
		}
	}
	return in
}

func render(t *testing.T, in Inputs) (snapJSON, statusJSON []byte) {
	t.Helper()
	snap, st := Compile(in)
	b, err := snapshot.Encode(&snap)
	if err != nil {
		t.Fatalf("compiled snapshot does not encode: %v", err)
	}
	s, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b, append(s, '\n')
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./controllers -run TestCompileGolden -args -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (-update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// compileCases are the inputs of the golden and purity tests: every
// testdata/*.yaml, and the shipped samples as a case of their own, so they can
// never drift into something the controller refuses.
func compileCases(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	cases := map[string][]string{}
	for _, f := range files {
		cases[strings.TrimSuffix(filepath.Base(f), ".yaml")] = []string{f}
	}
	if cases["samples"], err = samplePaths(); err != nil {
		t.Fatal(err)
	}
	return cases
}

func TestCompileGolden(t *testing.T) {
	for name, paths := range compileCases(t) {
		t.Run(name, func(t *testing.T) {
			in := loadInputs(t, paths...)
			snapJSON, statusJSON := render(t, in)
			golden(t, filepath.Join("testdata", name+".snapshot.json"), snapJSON)
			golden(t, filepath.Join("testdata", name+".status.json"), statusJSON)

			// Ordering independence: informer caches list in no promised order.
			rng := rand.New(rand.NewPCG(1, uint64(len(name))))
			for i := range 8 {
				p := in
				p.Providers, p.Aliases, p.Keys, p.Groups = slices.Clone(in.Providers), slices.Clone(in.Aliases), slices.Clone(in.Keys), slices.Clone(in.Groups)
				if i == 0 {
					slices.Reverse(p.Providers)
					slices.Reverse(p.Aliases)
					slices.Reverse(p.Keys)
					slices.Reverse(p.Groups)
				} else {
					rng.Shuffle(len(p.Groups), func(a, b int) { p.Groups[a], p.Groups[b] = p.Groups[b], p.Groups[a] })
					rng.Shuffle(len(p.Providers), func(a, b int) { p.Providers[a], p.Providers[b] = p.Providers[b], p.Providers[a] })
					rng.Shuffle(len(p.Aliases), func(a, b int) { p.Aliases[a], p.Aliases[b] = p.Aliases[b], p.Aliases[a] })
					rng.Shuffle(len(p.Keys), func(a, b int) { p.Keys[a], p.Keys[b] = p.Keys[b], p.Keys[a] })
				}
				s2, st2 := render(t, p)
				if !bytes.Equal(s2, snapJSON) || !bytes.Equal(st2, statusJSON) {
					t.Fatalf("permutation %d compiles differently", i)
				}
			}
		})
	}
}

// TestCompileIsPure: Compile must not mutate its inputs (they come from the
// informer cache, which is shared). The inputs are deep-copied before the call
// and compared deeply after it, so a change made through a pointer (a
// GatewayKey's rateLimit or expiresAt, a ModelAlias's timeouts, a Secret's key
// list) is seen, not only a change to the top-level values.
func TestCompileIsPure(t *testing.T) {
	for name, paths := range compileCases(t) {
		t.Run(name, func(t *testing.T) {
			in := loadInputs(t, paths...)
			before := deepCopyInputs(in)
			if diff := diffInputs(before, in); diff != "" {
				t.Fatalf("deepCopyInputs is not a faithful copy:\n%s", diff)
			}
			Compile(in)
			if diff := diffInputs(before, in); diff != "" {
				t.Fatalf("Compile mutated its inputs:\n%s", diff)
			}
		})
	}
}

// TestDiffInputsSeesThroughPointers keeps TestCompileIsPure honest: a change
// behind a pointer, in a copy that shares nothing with the original, must be
// reported.
func TestDiffInputsSeesThroughPointers(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	in := loadInputs(t, files...) // every kind and optional field occurs somewhere
	mutations := map[string]func(*Inputs) bool{
		"key rateLimit": func(in *Inputs) bool {
			for i := range in.Keys {
				if rl := in.Keys[i].Spec.RateLimit; rl != nil {
					rl.Burst++
					return true
				}
			}
			return false
		},
		"key expiresAt": func(in *Inputs) bool {
			for i := range in.Keys {
				if e := in.Keys[i].Spec.ExpiresAt; e != nil {
					e.Time = e.Add(time.Second)
					return true
				}
			}
			return false
		},
		"key budget": func(in *Inputs) bool {
			for i := range in.Keys {
				if b := in.Keys[i].Spec.Budget; b != nil {
					b.Amount += "0"
					return true
				}
			}
			return false
		},
		"group budget": func(in *Inputs) bool {
			for i := range in.Groups {
				if b := in.Groups[i].Spec.Budget; b != nil {
					b.Amount += "0"
					return true
				}
			}
			return false
		},
		"alias fallback": func(in *Inputs) bool {
			for i := range in.Aliases {
				if len(in.Aliases[i].Spec.Fallbacks) > 0 {
					in.Aliases[i].Spec.Fallbacks[0].Model += "x"
					return true
				}
			}
			return false
		},
		"alias maxFallbacks": func(in *Inputs) bool {
			for i := range in.Aliases {
				if m := in.Aliases[i].Spec.MaxFallbacks; m != nil {
					*m++
					return true
				}
			}
			return false
		},
		"provider circuitBreaker": func(in *Inputs) bool {
			for i := range in.Providers {
				if cb := in.Providers[i].Spec.CircuitBreaker; cb != nil && cb.ConsecutiveFailures != nil {
					*cb.ConsecutiveFailures++
					return true
				}
			}
			return false
		},
		"secret keys": func(in *Inputs) bool {
			for _, ks := range in.Secrets {
				if len(ks) > 0 {
					ks[0] += "x"
					return true
				}
			}
			return false
		},
		"service ports": func(in *Inputs) bool {
			for _, ps := range in.Services {
				if len(ps) > 0 {
					ps[0]++
					return true
				}
			}
			return false
		},
	}
	for name, mutate := range mutations {
		mutated := deepCopyInputs(in)
		if !mutate(&mutated) {
			t.Errorf("%s: the testdata has nothing to mutate", name)
			continue
		}
		if diffInputs(in, mutated) == "" {
			t.Errorf("%s: a change through a pointer is not reported", name)
		}
		if diffInputs(in, deepCopyInputs(in)) != "" {
			t.Fatalf("%s: the copy shares memory with the original", name)
		}
	}
}

// deepCopyInputs copies in so that no memory is shared with it, through the
// generated DeepCopy of each object.
func deepCopyInputs(in Inputs) Inputs {
	out := in // Namespace, Now and Limits are plain values
	out.Providers = deepCopyEach(in.Providers, (*v1alpha1.ProviderEndpoint).DeepCopy)
	out.Aliases = deepCopyEach(in.Aliases, (*v1alpha1.ModelAlias).DeepCopy)
	out.Keys = deepCopyEach(in.Keys, (*v1alpha1.GatewayKey).DeepCopy)
	out.Groups = deepCopyEach(in.Groups, (*v1alpha1.BudgetGroup).DeepCopy)
	if in.Secrets != nil {
		out.Secrets = make(map[string][]string, len(in.Secrets))
		for name, keys := range in.Secrets {
			out.Secrets[name] = slices.Clone(keys)
		}
	}
	if in.Services != nil {
		out.Services = make(map[string][]int32, len(in.Services))
		for name, ports := range in.Services {
			out.Services[name] = slices.Clone(ports)
		}
	}
	return out
}

func deepCopyEach[T any](s []T, deepCopy func(*T) *T) []T {
	if s == nil {
		return nil
	}
	out := make([]T, len(s))
	for i := range s {
		out[i] = *deepCopy(&s[i])
	}
	return out
}

// diffInputs is "" when want and got are deeply equal (reflect.DeepEqual,
// which follows pointers), else it names what differs and shows both sides.
func diffInputs(want, got Inputs) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	var b strings.Builder
	show := func(what string, w, g any) {
		if reflect.DeepEqual(w, g) {
			return
		}
		wy, _ := yaml.Marshal(w)
		gy, _ := yaml.Marshal(g)
		fmt.Fprintf(&b, "%s differs\n--- before\n%s--- after\n%s", what, wy, gy)
	}
	show("namespace", want.Namespace, got.Namespace)
	show("now", want.Now, got.Now)
	show("limits", want.Limits, got.Limits)
	show("secrets", want.Secrets, got.Secrets)
	show("services", want.Services, got.Services)
	for _, l := range []struct {
		kind      string
		want, got any
	}{{"ProviderEndpoint", want.Providers, got.Providers}, {"ModelAlias", want.Aliases, got.Aliases}, {"GatewayKey", want.Keys, got.Keys}, {"BudgetGroup", want.Groups, got.Groups}} {
		w, g := reflect.ValueOf(l.want), reflect.ValueOf(l.got)
		if w.Len() != g.Len() || w.IsNil() != g.IsNil() {
			show(l.kind+" list", l.want, l.got)
			continue
		}
		for i := range w.Len() {
			show(fmt.Sprintf("%s #%d", l.kind, i), w.Index(i).Interface(), g.Index(i).Interface())
		}
	}
	if b.Len() == 0 {
		fmt.Fprintf(&b, "before: %#v\nafter:  %#v\n", want, got)
	}
	return b.String()
}

// TestCompileNeverLeaksPlaintext: a key pasted into any free-text field, or
// credentials in a URL, must not reach the snapshot or a status.
func TestCompileNeverLeaksPlaintext(t *testing.T) {
	for _, path := range []string{"testdata/invalid.yaml", "testdata/rotation.yaml"} {
		in := loadInputs(t, path)
		if !bytes.Contains(must(os.ReadFile(path)), []byte(plaintextInTestdata)) {
			t.Fatalf("%s lacks the plaintext key this test looks for", path)
		}
		snapJSON, statusJSON := render(t, in)
		for _, b := range [][]byte{snapJSON, statusJSON} {
			if bytes.Contains(b, []byte(plaintextInTestdata)) {
				t.Fatalf("%s: plaintext key leaked:\n%s", path, b)
			}
			if bytes.Contains(b, []byte("user:pass")) {
				t.Fatalf("%s: URL credentials leaked:\n%s", path, b)
			}
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// plaintextInTestdata is a syntactically valid key that is deliberately
// misplaced in testdata/invalid.yaml; it authorizes nothing anywhere.
const plaintextInTestdata = "lgw_leakedkey0_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

// samplePaths are config/samples' resources plus what the install puts
// beside them (test stand-ins): the Secret it generates, and the mock
// providers' Services (config/mocks) that the sample ProviderEndpoints name.
func samplePaths() ([]string, error) {
	paths, err := filepath.Glob("../config/samples/llmgw_*.yaml")
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("no samples: %v", err)
	}
	return append(paths, "testdata/samples/mock-beta-upstream.yaml", mockServicesPath), nil
}

// mockServicesPath stands in for config/mocks' Services
// (TestMockServicesMatchConfigMocks keeps it in step).
const mockServicesPath = "testdata/samples/mock-services.yaml"

// TestCompileOneBadObject: a broken route, a broken alias or an invalid
// older alias degrades only what depends on it (testdata/degraded.yaml; the
// golden files hold the whole picture, this names the promises).
func TestCompileOneBadObject(t *testing.T) {
	in := loadInputs(t, "testdata/degraded.yaml")
	snap, st := Compile(in)
	aliases := map[string]snapshot.Alias{}
	for _, a := range snap.Aliases {
		aliases[a.Name] = a
	}
	keys := map[string]snapshot.Key{}
	for _, k := range snap.Keys {
		keys[k.ID] = k
	}
	route := func(p, m string) snapshot.Route { return snapshot.Route{Provider: p, Model: m} }
	cases := []struct {
		name string
		got  any
		want any
	}{
		{"a missing fallback: served through the primary and the working fallback",
			[]any{aliases["broken-fallback"].Primary, aliases["broken-fallback"].Fallbacks}, []any{route("alpha", "a1"), []snapshot.Route{route("beta", "b1")}}},
		{"its status: accepted, refs not resolved, in the snapshot",
			[]any{st.Aliases["broken-fallback"].Accepted.Status, st.Aliases["broken-fallback"].ResolvedRefs.Reason, st.Aliases["broken-fallback"].InSnapshot}, []any{true, v1alpha1.ReasonProviderNotFound, true}},
		{"a primary whose provider is not ready: the first working fallback takes over",
			[]any{aliases["broken-primary"].Primary, aliases["broken-primary"].Fallbacks, *aliases["broken-primary"].MaxFallbacks}, []any{route("beta", "b1"), []snapshot.Route{route("alpha", "a1")}, 1}},
		{"its reason", st.Aliases["broken-primary"].ResolvedRefs.Reason, v1alpha1.ReasonProviderNotReady},
		{"no route works: not served", st.Aliases["all-broken"].InSnapshot, false},
		{"a key listing only a degraded alias is served", keys["only-degraded"].Models, []string{"broken-fallback"}},
		{"a key listing a broken alias keeps its working one", keys["promoted"].Models, []string{"broken-primary"}},
		{"and says which one does not resolve", st.Keys["promoted"].ResolvedRefs.Reason, v1alpha1.ReasonAliasNotFound},
		{"an invalid older alias claims nothing: the valid newer one serves the name", aliases["shared"].Primary, route("beta", "b2")},
		{"the invalid one is InvalidSpec, not a conflict winner", st.Aliases["shared-invalid"].Accepted.Reason, v1alpha1.ReasonInvalidSpec},
		{"the valid one is accepted", st.Aliases["shared-valid"].Accepted.Reason, v1alpha1.ReasonAccepted},
		{"its key is served", keys["shared-user"].Models, []string{"shared"}},
		{"a valid older alias keeps its name while its routes are down", st.Aliases["held-newer"].Accepted.Reason, v1alpha1.ReasonAliasConflict},
	}
	for _, c := range cases {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.name, c.got, c.want)
		}
	}
	if _, ok := aliases["held"]; ok {
		t.Errorf("alias held is served, but neither of its claimants can serve it")
	}
}

// TestCompileDigests: an object's digest changes exactly when its entry in
// the snapshot does, so Programmed can follow one object through versions.
func TestCompileDigests(t *testing.T) {
	in := loadInputs(t, "testdata/degraded.yaml")
	_, st := Compile(in)
	for kind, rs := range map[string]map[string]Result{"alias": resultsOf(st.Aliases), "key": resultsOf(st.Keys), "provider": resultsOf(st.Providers)} {
		for name, r := range rs {
			if r.InSnapshot != (r.Digest != "") {
				t.Errorf("%s %s: inSnapshot %v but digest %q", kind, name, r.InSnapshot, r.Digest)
			}
		}
	}
	changed := deepCopyInputs(in)
	for i := range changed.Keys {
		if changed.Keys[i].Name == "promoted" {
			changed.Keys[i].Spec.Disabled = true
		}
	}
	// A label is no change to the snapshot.
	changed.Aliases[0].Labels = map[string]string{"team": "x"}
	_, st2 := Compile(changed)
	for name, r := range st.Keys {
		if same := r.Digest == st2.Keys[name].Digest; same != (name != "promoted") {
			t.Errorf("key %s: digest %q → %q", name, r.Digest, st2.Keys[name].Digest)
		}
	}
	for name, r := range st.Aliases {
		if r.Digest != st2.Aliases[name].Digest {
			t.Errorf("alias %s: digest changed without a snapshot change", name)
		}
	}
}

func resultsOf[T interface{ result() Result }](m map[string]T) map[string]Result {
	out := map[string]Result{}
	for k, v := range m {
		out[k] = v.result()
	}
	return out
}

func (r ProviderResult) result() Result { return r.Result }
func (r AliasResult) result() Result    { return r.Result }
func (r KeyResult) result() Result      { return r.Result }
