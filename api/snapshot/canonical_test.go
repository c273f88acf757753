package snapshot

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The one-pass encoder must write exactly what the tree writes: the version
// of every deployed snapshot depends on it.

func TestFastCanonicalMatchesTreeOnGoldenInputs(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/*.input.json")
	if len(inputs) == 0 {
		t.Fatal("no testdata")
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			assertSameCanonical(t, s)
		})
	}
}

// TestFastCanonicalCoversSnapshot: the Snapshot type has a fast plan. A field
// of a kind the plan does not model (say an interface) would silently bring
// back the seconds-long tree at scale; this test says so instead.
func TestFastCanonicalCoversSnapshot(t *testing.T) {
	if _, ok := fastCanonical(&Snapshot{}); !ok {
		t.Fatal("Snapshot has a field the one-pass encoder does not model; extend canonical.go")
	}
}

// TestFastCanonicalMatchesTreeOnRandomSnapshots draws snapshots with awkward
// strings (quotes, backslashes, control characters, HTML, non-ASCII, U+2028,
// invalid UTF-8), nil and empty lists, optional fields set and unset.
func TestFastCanonicalMatchesTreeOnRandomSnapshots(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for i := range 300 {
		s := randomSnapshot(r)
		if i%2 == 0 {
			s.Normalize()
		}
		assertSameCanonical(t, s)
	}
}

func TestFastCanonicalOtherKinds(t *testing.T) {
	type inner struct {
		F float64 `json:"f"`
		U uint16  `json:"u,omitempty"`
	}
	type supported struct {
		M   map[string]int    `json:"m"`
		E   map[string]string `json:"e,omitempty"`
		P   *inner            `json:"p"`
		A   [2]int            `json:"a"`
		T   time.Time         `json:"t"`
		TP  *time.Time        `json:"tp"`
		Z   inner             `json:"z,omitempty"` // omitempty never omits a struct
		N   []string          `json:"n"`
		Raw string            `json:"Raw"`
		X   string            `json:"-"`
		y   string
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("x", 3600))
	for _, v := range []supported{
		{},
		{M: map[string]int{"b": 1, "a": 2, "é": 3}, E: map[string]string{}, P: &inner{F: 1e21, U: 7}, A: [2]int{1, -2},
			T: now, TP: &now, Z: inner{F: 0.1}, N: []string{}, Raw: "<&>", X: "dropped", y: "unexported"},
	} {
		fast, ok := fastCanonical(&v)
		if !ok {
			t.Fatalf("no fast plan for %T", v)
		}
		tree, err := canonicalTree(&v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fast, tree) {
			t.Errorf("fast and tree differ:\n%s\n%s", fast, tree)
		}
	}

	// Kinds the plan leaves to the tree: it must say so, not guess.
	type embedded struct{ inner }
	for name, v := range map[string]any{
		"interface":       &struct{ I any }{},
		"embedded struct": &embedded{},
		"string option": &struct {
			N int `json:"n,string"`
		}{},
		"int map key": &struct{ M map[int]string }{},
		"bytes":       &struct{ B []byte }{},
		"omitzero": &struct {
			N int `json:"n,omitzero"`
		}{},
	} {
		if _, ok := fastCanonical(v); ok {
			t.Errorf("%s: the one-pass encoder claimed a kind it does not model", name)
		}
	}
}

func assertSameCanonical(t *testing.T, s *Snapshot) {
	t.Helper()
	fast, ok := fastCanonical(s)
	if !ok {
		t.Fatal("no fast plan for Snapshot")
	}
	tree, err := canonicalTree(s)
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, tree); err != nil {
		t.Fatal(err)
	}
	if c, ok := appendCompact(nil, s); !ok || !bytes.Equal(c, compact.Bytes()) {
		t.Fatalf("compact form differs from the compacted tree:\n%s\n%s", c, compact.Bytes())
	}
	if !bytes.Equal(fast, tree) {
		i := 0
		for i < len(fast) && i < len(tree) && fast[i] == tree[i] {
			i++
		}
		lo := max(0, i-80)
		t.Fatalf("one-pass and tree encodings differ at byte %d:\nfast: %q\ntree: %q", i, fast[lo:min(len(fast), i+80)], tree[lo:min(len(tree), i+80)])
	}
}

// TestEncodeSplicesVersion: Encode's spliced version equals a full second
// encoding with the version set.
func TestEncodeSplicesVersion(t *testing.T) {
	s := validSnapshot()
	got, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	want, err := canonicalTree(s)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("spliced:\n%s\nencoded:\n%s", got, want)
	}
	if _, ok := withVersion([]byte(`{"a": 1}`), "v"); ok {
		t.Fatal("withVersion found a version member where there is none")
	}
}

var awkward = []string{
	"", "plain", `quo"te`, `back\slash`, "tab\tnew\nline\r", "\x00\x01\x1f", "\b\f", "<script>&amp;",
	"héllo wörld", "日本語", "\u2028\u2029", "bad\xffutf8", "\xed\xa0\x80", "emoji 🦀", "\x7f",
}

func randomString(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		return awkward[r.IntN(len(awkward))] + awkward[r.IntN(len(awkward))]
	}
	b := make([]byte, r.IntN(12))
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	return string(b)
}

func randomSnapshot(r *rand.Rand) *Snapshot {
	s := &Snapshot{Version: randomString(r)}
	if r.IntN(4) > 0 {
		s.Providers = []Provider{}
	}
	for range r.IntN(3) {
		p := Provider{Name: randomString(r), Protocol: randomString(r), BaseURL: randomString(r),
			ConnectTimeoutMs: r.IntN(5000) - 100}
		switch r.IntN(3) {
		case 1:
			p.Credential = &Credential{File: randomString(r)}
		case 2:
			p.Credential = &Credential{SecretName: randomString(r), SecretKey: randomString(r)}
		}
		if r.IntN(2) == 0 {
			n := r.IntN(10)
			p.CircuitBreaker.ConsecutiveFailures = &n
		}
		for range r.IntN(3) {
			pr := Price{Model: randomString(r), Currency: randomString(r), InputPerMillion: randomString(r),
				OutputPerMillion: randomString(r)}
			if r.IntN(2) == 0 {
				e := time.Unix(r.Int64N(4e9), r.Int64N(1e9)).In(time.FixedZone("z", 3600*r.IntN(5)))
				pr.EffectiveFrom = &e
			}
			p.Prices = append(p.Prices, pr)
		}
		s.Providers = append(s.Providers, p)
	}
	for range r.IntN(3) {
		a := Alias{Name: randomString(r), Primary: Route{randomString(r), randomString(r)}}
		if r.IntN(2) == 0 {
			a.Fallbacks = []Route{{randomString(r), randomString(r)}}
		}
		if r.IntN(2) == 0 {
			n := r.IntN(4)
			a.MaxFallbacks = &n
		}
		s.Aliases = append(s.Aliases, a)
	}
	for range r.IntN(4) {
		k := Key{ID: randomString(r), Prefix: randomString(r), Hash: randomString(r), Disabled: r.IntN(2) == 0,
			RateLimit: RateLimit{RPM: r.IntN(1000), Burst: r.IntN(100)}}
		for range r.IntN(3) {
			k.Models = append(k.Models, randomString(r))
		}
		if r.IntN(2) == 0 {
			e := time.Unix(r.Int64N(4e9), r.Int64N(1e9)).In(time.FixedZone("z", 3600*r.IntN(5)))
			k.ExpiresAt = &e
		}
		s.Keys = append(s.Keys, k)
	}
	s.Limits.MaxBodyBytes = r.Int64N(1 << 40)
	return s
}

// FuzzCanonical: whatever Parse accepts encodes the same both ways.
func FuzzCanonical(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			return
		}
		assertSameCanonical(t, s)
	})
}

// BenchmarkCanonical50k compares the one-pass encoder with the tree it
// replaced, on 50,000 keys (go test -bench Canonical50k).
func BenchmarkCanonical50k(b *testing.B) {
	s := manyKeys(50_000)
	if _, err := Encode(s); err != nil {
		b.Fatal(err)
	}
	b.Run("one-pass", func(b *testing.B) {
		for b.Loop() {
			if _, ok := fastCanonical(s); !ok {
				b.Fatal("no plan")
			}
		}
	})
	b.Run("tree", func(b *testing.B) {
		for b.Loop() {
			if _, err := canonicalTree(s); err != nil {
				b.Fatal(err)
			}
		}
	})
}
