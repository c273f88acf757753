package snapshot

import (
	"testing"
	"time"
)

func TestCompiledLookups(t *testing.T) {
	src := validSnapshot()
	if _, err := Encode(src); err != nil {
		t.Fatal(err)
	}
	c := Compile(src)
	if c.Version() != src.Version || c.Version() == "" {
		t.Fatal("version not carried over")
	}
	k, ok := c.KeyByPrefix("lgw_keybbbbbbb")
	if !ok || k.ID != "key-b" {
		t.Fatalf("KeyByPrefix = %v, %v", k, ok)
	}
	if _, ok := c.KeyByPrefix("lgw_zzzzzzzzzz"); ok {
		t.Fatal("unknown prefix found")
	}
	a, ok := c.Alias("chat-beta")
	if !ok || a.Primary.Provider != "beta" {
		t.Fatalf("Alias = %v, %v", a, ok)
	}
	if _, ok := c.Alias("chat-gamma"); ok {
		t.Fatal("unknown alias found")
	}
	p, ok := c.Provider("beta")
	if !ok || p.Credential == nil || p.ConnectTimeout() != 2*time.Second || p.ResponseHeaderTimeout() != 10*time.Second {
		t.Fatalf("Provider = %+v, %v", p, ok)
	}
	if _, ok := c.Provider("gamma"); ok {
		t.Fatal("unknown provider found")
	}
	if c.Limits().MaxConcurrent != DefaultMaxConcurrent {
		t.Fatal("limits not carried over")
	}
	if tm := a.Timeouts; tm.Total() != time.Minute || tm.Attempt() != 20*time.Second || tm.FirstChunk() != 10*time.Second || tm.Idle() != 15*time.Second {
		t.Fatalf("timeouts %+v", tm)
	}

	// The view is a deep copy: later edits of the source do not reach readers.
	src.Keys[1].Models[0] = "chat-restricted"
	src.Aliases[1].Fallbacks[0].Provider = "x"
	*src.Aliases[1].MaxFallbacks = 0
	src.Providers[1].Credential.File = "/other"
	if k.Models[0] != "chat-alpha" || a.Fallbacks[0].Provider != "alpha" || *a.MaxFallbacks != 1 || p.Credential.File != "state/beta-key" {
		t.Fatal("Compile shares memory with its input")
	}
}

func TestCompileNil(t *testing.T) {
	c := Compile(nil)
	if _, ok := c.KeyByPrefix("lgw_keyaaaaaaa"); ok {
		t.Fatal("empty view found a key")
	}
}

func TestKeyAllows(t *testing.T) {
	all := Key{Models: []string{"*"}}
	some := Key{Models: []string{"chat-beta", "chat-alpha"}} // unnormalized order works too
	none := Key{}
	for _, c := range []struct {
		k     Key
		alias string
		want  bool
	}{
		{all, "anything", true},
		{some, "chat-alpha", true},
		{some, "chat-beta", true},
		{some, "chat-restricted", false},
		{some, "chat-alph", false},
		{none, "chat-alpha", false},
	} {
		if got := c.k.Allows(c.alias); got != c.want {
			t.Errorf("%v.Allows(%q) = %v", c.k.Models, c.alias, got)
		}
	}
}

func TestKeyActive(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	later, earlier := now.Add(time.Second), now.Add(-time.Second)
	for _, c := range []struct {
		name string
		k    Key
		want bool
	}{
		{"no expiry", Key{}, true},
		{"expires later", Key{ExpiresAt: &later}, true},
		{"expired", Key{ExpiresAt: &earlier}, false},
		{"expires exactly now", Key{ExpiresAt: &now}, false},
		{"disabled", Key{Disabled: true}, false},
		{"disabled, not expired", Key{Disabled: true, ExpiresAt: &later}, false},
	} {
		if got := c.k.Active(now); got != c.want {
			t.Errorf("%s: Active = %v", c.name, got)
		}
	}
}

func TestAllowedFallbacks(t *testing.T) {
	r := []Route{{"a", "1"}, {"b", "2"}, {"c", "3"}}
	for _, c := range []struct {
		max  *int
		want int
	}{{nil, 1}, {intp(0), 0}, {intp(2), 2}, {intp(3), 3}, {intp(9), 3}, {intp(-1), 0}} {
		a := Alias{Fallbacks: r, MaxFallbacks: c.max}
		if got := len(a.AllowedFallbacks()); got != c.want {
			t.Errorf("maxFallbacks %v: %d fallbacks allowed, want %d", c.max, got, c.want)
		}
	}
	if got := (&Alias{}).AllowedFallbacks(); len(got) != 0 {
		t.Error("no fallbacks listed, some allowed")
	}
}

func BenchmarkLookup(b *testing.B) {
	c := Compile(validSnapshot())
	for b.Loop() {
		k, _ := c.KeyByPrefix("lgw_keybbbbbbb")
		a, _ := c.Alias("chat-beta")
		_ = k.Allows(a.Name) && k.Active(time.Time{})
	}
}
