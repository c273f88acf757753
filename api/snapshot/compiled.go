package snapshot

import (
	"maps"
	"time"
)

// Compiled is a read-only, indexed view of one snapshot for the request path. It is
// built once per snapshot version and shared by all requests without locking, so
// nothing reachable from it may be modified.
type Compiled struct {
	snap      *Snapshot
	keys      map[string]*Key
	aliases   map[string]*Alias
	providers map[string]*Provider
	prices    map[routeKey][]datedPrice
	groups    map[string]*Group
}

// Compile indexes a deep copy of s (so a caller that keeps editing s cannot race
// with readers). s should have passed Validate, as Parse and LoadFile guarantee:
// with duplicate names the last one wins. A nil s compiles to an empty view.
func Compile(s *Snapshot) *Compiled {
	snap := &Snapshot{}
	if s != nil {
		snap = s.Clone()
	}
	snap.Normalize()
	return CompileOwned(snap)
}

// CompileOwned indexes snap itself, without the copy and normalization
// Compile makes: for a snapshot that is normalized and valid (Encode or
// SealAssembled ran on it) and that its owner hands over, never to change
// it again — as the gateway's Apply does with its private copy. At 50,000
// keys the copy and the second normalization were a third of a reload.
func CompileOwned(snap *Snapshot) *Compiled {
	c := &Compiled{
		snap:      snap,
		keys:      make(map[string]*Key, len(snap.Keys)),
		aliases:   make(map[string]*Alias, len(snap.Aliases)),
		providers: make(map[string]*Provider, len(snap.Providers)),
		prices:    indexPrices(snap),
	}
	for i := range snap.Keys {
		k := &snap.Keys[i]
		c.keys[k.Prefix] = k
		if k.Previous != nil {
			c.keys[k.Previous.Prefix] = k
		}
	}
	c.groups = indexGroups(snap)
	for i := range snap.Aliases {
		c.aliases[snap.Aliases[i].Name] = &snap.Aliases[i]
	}
	for i := range snap.Providers {
		c.providers[snap.Providers[i].Name] = &snap.Providers[i]
	}
	return c
}

// Snapshot returns the compiled snapshot (normalized and sorted). Read only.
func (c *Compiled) Snapshot() *Snapshot { return c.snap }

// Version is the compiled snapshot's version.
func (c *Compiled) Version() string { return c.snap.Version }

// Limits are the gateway-wide hard limits.
func (c *Compiled) Limits() Limits { return c.snap.Limits }

// KeyByPrefix finds a key by its non-secret prefix (see keyformat.PrefixOf), or by
// the prefix of the key it replaced (Key.Previous). The caller must still verify
// the full key against the hash of the prefix it found (HashFor) and check
// Key.Active.
func (c *Compiled) KeyByPrefix(prefix string) (*Key, bool) {
	k, ok := c.keys[prefix]
	return k, ok
}

// HashFor is the hash to verify a presented key of this prefix against, and
// whether that is the previous (rotated-out) key's.
func (k *Key) HashFor(prefix string) (hash string, previous bool) {
	if k.Previous != nil && prefix == k.Previous.Prefix && prefix != k.Prefix {
		return k.Previous.Hash, true
	}
	return k.Hash, false
}

// Alias finds an alias by its public name.
func (c *Compiled) Alias(name string) (*Alias, bool) {
	a, ok := c.aliases[name]
	return a, ok
}

// Provider finds a provider by name.
func (c *Compiled) Provider(name string) (*Provider, bool) {
	p, ok := c.providers[name]
	return p, ok
}

// Allows reports whether the key may use the alias. Model lists are short, so a
// linear scan beats a map and works on keys that were never normalized.
func (k *Key) Allows(alias string) bool {
	for _, m := range k.Models {
		if m == AllModels || m == alias {
			return true
		}
	}
	return false
}

// Active reports whether the key may authenticate at now: not disabled and not
// expired (a key expires at ExpiresAt itself).
func (k *Key) Active(now time.Time) bool {
	return !k.Disabled && (k.ExpiresAt == nil || now.Before(*k.ExpiresAt))
}

// Clone returns a deep copy of s.
func (s *Snapshot) Clone() *Snapshot {
	c := *s
	c.Providers = cloneSlice(s.Providers, func(p *Provider) {
		if p.Credential != nil {
			cred := *p.Credential
			p.Credential = &cred
		}
		if n := p.CircuitBreaker.ConsecutiveFailures; n != nil {
			v := *n
			p.CircuitBreaker.ConsecutiveFailures = &v
		}
		p.Prices = cloneSlice(p.Prices, func(pr *Price) {
			if pr.EffectiveFrom != nil {
				t := *pr.EffectiveFrom
				pr.EffectiveFrom = &t
			}
		})
	})
	c.Aliases = cloneSlice(s.Aliases, func(a *Alias) {
		a.Fallbacks = cloneSlice(a.Fallbacks, nil)
		if a.MaxFallbacks != nil {
			n := *a.MaxFallbacks
			a.MaxFallbacks = &n
		}
	})
	c.Keys = cloneSlice(s.Keys, func(k *Key) { *k = k.Clone() })
	c.Groups = cloneSlice(s.Groups, func(g *Group) {
		if g.Budget != nil {
			b := *g.Budget
			g.Budget = &b
		}
		g.Owners = maps.Clone(g.Owners)
	})
	return &c
}

// Clone returns a deep copy of k.
func (k *Key) Clone() Key {
	c := *k
	c.Models = cloneSlice(k.Models, nil)
	if k.Budget != nil {
		b := *k.Budget
		c.Budget = &b
	}
	if k.ExpiresAt != nil {
		t := *k.ExpiresAt
		c.ExpiresAt = &t
	}
	if k.Previous != nil {
		p := *k.Previous
		c.Previous = &p
	}
	c.Owners = maps.Clone(k.Owners)
	return c
}

// cloneSlice copies s (keeping nil as nil) and lets fix deep-copy each element.
func cloneSlice[T any](s []T, fix func(*T)) []T {
	if s == nil {
		return nil
	}
	c := make([]T, len(s))
	copy(c, s)
	if fix != nil {
		for i := range c {
			fix(&c[i])
		}
	}
	return c
}
