package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json from the current encoder")

// TestGolden pins the canonical bytes and versions: a change here changes every
// deployed snapshot's version, so it must be deliberate (go test -update).
func TestGolden(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/*.input.json")
	if len(inputs) == 0 {
		t.Fatal("no testdata")
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".input.json")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Encode(s)
			if err != nil {
				t.Fatal(err)
			}
			goldenPath := filepath.Join("testdata", name+".golden.json")
			if *update {
				if err := os.WriteFile(goldenPath, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(goldenPath)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("canonical encoding differs from %s:\n%s", goldenPath, got)
			}
			// Recompute the version from its definition, independently of Encode.
			blank := versionField.ReplaceAll(want, []byte(`"version": ""`))
			sum := sha256.Sum256(blank)
			if v := "sha256:" + hex.EncodeToString(sum[:]); s.Version != v {
				t.Fatalf("version %s, want sha256 of the blanked canonical bytes %s", s.Version, v)
			}
			// The canonical form is a fixed point: parsing it (version included)
			// and encoding again gives the same bytes.
			again, err := Parse(want)
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := Encode(again); !bytes.Equal(b, want) {
				t.Fatal("re-encoding the golden file changed it")
			}
		})
	}
}

var versionField = regexp.MustCompile(`"version": "sha256:[0-9a-f]{64}"`)

func TestCanonicalFormShape(t *testing.T) {
	b, err := Encode(validSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, want := range []string{
		`"credential": null`, // explicit, not omitted
		`"expiresAt": null`,
		`"fallbacks": []`,
		`"maxFallbacks": 0`, // chat-restricted: default 1 capped to 0 fallbacks
		"\n  \"aliases\": [",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("canonical form lacks %q:\n%s", want, text)
		}
	}
	if !strings.HasSuffix(text, "}\n") || strings.HasSuffix(text, "\n\n") {
		t.Error("canonical form must end with exactly one newline")
	}
	// Object keys sorted at every level: aliases < keys < limits < providers < version.
	order := []string{`"aliases"`, `"keys"`, `"limits"`, `"providers"`, `"version"`}
	last := -1
	for _, k := range order {
		i := strings.Index(text, "\n  "+k)
		if i < last {
			t.Fatalf("top-level keys not sorted: %s before previous", k)
		}
		last = i
	}
}

// TestOrderIndependence: the same content in any order has the same version.
func TestOrderIndependence(t *testing.T) {
	base := validSnapshot()
	base.Keys[1].Models = []string{"chat-beta", "chat-alpha", "chat-beta"}
	want, err := Encode(base.Clone())
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 50 {
		s := base.Clone()
		r.Shuffle(len(s.Providers), func(i, j int) { s.Providers[i], s.Providers[j] = s.Providers[j], s.Providers[i] })
		r.Shuffle(len(s.Aliases), func(i, j int) { s.Aliases[i], s.Aliases[j] = s.Aliases[j], s.Aliases[i] })
		r.Shuffle(len(s.Keys), func(i, j int) { s.Keys[i], s.Keys[j] = s.Keys[j], s.Keys[i] })
		for k := range s.Keys {
			m := s.Keys[k].Models
			r.Shuffle(len(m), func(i, j int) { m[i], m[j] = m[j], m[i] })
		}
		got, err := Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("shuffle %d changed the encoding:\n%s\nwant\n%s", i, got, want)
		}
	}
}

func TestFallbackOrderMatters(t *testing.T) {
	a := validSnapshot()
	a.Providers = append(a.Providers, Provider{Name: "gamma", Protocol: ProtocolOpenAI, BaseURL: "http://g"})
	a.Aliases[0].Fallbacks = []Route{{"beta", "m"}, {"gamma", "m"}}
	b := a.Clone()
	b.Aliases[0].Fallbacks = []Route{{"gamma", "m"}, {"beta", "m"}}
	if _, err := Encode(a); err != nil {
		t.Fatal(err)
	}
	if _, err := Encode(b); err != nil {
		t.Fatal(err)
	}
	if a.Version == b.Version {
		t.Fatal("reordered fallbacks must change the version: their order is the routing order")
	}
}

func TestEncodeRejectsInvalid(t *testing.T) {
	s := validSnapshot()
	s.Aliases[0].Primary.Provider = "missing"
	if _, err := Encode(s); err == nil {
		t.Fatal("Encode accepted a dangling provider")
	}
}

func TestDefaults(t *testing.T) {
	s := &Snapshot{
		Providers: []Provider{{Name: "p", Protocol: "openai", BaseURL: "http://p"}},
		Aliases: []Alias{
			{Name: "none", Primary: Route{"p", "m"}},
			{Name: "two", Primary: Route{"p", "m"}, Fallbacks: []Route{{"p", "n"}, {"p", "o"}}},
			{Name: "zero", Primary: Route{"p", "m"}, Fallbacks: []Route{{"p", "n"}}, MaxFallbacks: intp(0)},
		},
		Keys: []Key{{ID: "k", Prefix: "lgw_keyaaaaaaa", Hash: hashA, Models: []string{"two", "*"}}},
	}
	s.Normalize()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	p := s.Providers[0]
	if p.ConnectTimeoutMs != 2000 || p.ResponseHeaderTimeoutMs != 10000 {
		t.Errorf("provider timeouts %+v", p)
	}
	if cb := p.CircuitBreaker; cb.ConsecutiveFailures == nil || *cb.ConsecutiveFailures != 5 || cb.CoolDownMs != 30000 || cb.HalfOpenProbes != 1 || !cb.Enabled() {
		t.Errorf("provider circuit breaker %+v", cb)
	}
	for name, want := range map[int]int{0: 0, 1: 1, 2: 0} {
		if got := *s.Aliases[name].MaxFallbacks; got != want {
			t.Errorf("alias %s maxFallbacks = %d, want %d", s.Aliases[name].Name, got, want)
		}
	}
	if got := s.Aliases[1].Timeouts; got != (Timeouts{60000, 20000, 10000, 15000}) {
		t.Errorf("alias timeouts %+v", got)
	}
	if got := s.Limits; got != (Limits{20 << 20, 256, 200000, 1024, 4096}) {
		t.Errorf("limits %+v", got)
	}
	k := s.Keys[0]
	if k.RateLimit != (RateLimit{60, 10}) || len(k.Models) != 1 || k.Models[0] != "*" {
		t.Errorf("key %+v", k)
	}
	before, _ := Encode(s.Clone())
	s.Normalize()
	if after, _ := Encode(s); !bytes.Equal(before, after) {
		t.Error("Normalize is not idempotent")
	}
}
