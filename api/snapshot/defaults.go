package snapshot

import (
	"cmp"
	"slices"
)

// Defaults filled by Normalize. They are part of the content, not of the reader:
// a snapshot always carries the values it is served with.
const (
	DefaultMaxFallbacks            = 1
	DefaultTotalMs                 = 60_000
	DefaultAttemptMs               = 20_000
	DefaultFirstChunkMs            = 10_000
	DefaultIdleMs                  = 15_000
	DefaultConnectTimeoutMs        = 2_000
	DefaultResponseHeaderTimeoutMs = 10_000
	DefaultMaxBodyBytes            = 20 << 20
	DefaultMaxMessages             = 256
	DefaultMaxContentChars         = 200_000
	DefaultMaxConcurrent           = 1024
	DefaultMaxTokens               = 4096
	DefaultRPM                     = 60
	DefaultBurst                   = 10
	// A provider's circuit breaker opens after 5 failures in a row (the
	// count at which /health used to call a provider down), stays open 30 s
	// and closes after one successful probe.
	DefaultConsecutiveFailures = 5
	DefaultCoolDownMs          = 30_000
	DefaultHalfOpenProbes      = 1
)

// AllModels in Key.Models allows every alias.
const AllModels = "*"

// Normalize fills defaults and puts everything whose order carries no meaning
// (providers, aliases, keys, a key's models) in sorted order, so that the same
// content produces the same canonical bytes and version. Fallback order is
// meaningful and kept. Normalize is idempotent and leaves Version alone.
func (s *Snapshot) Normalize() {
	s.Providers = nonNil(s.Providers)
	s.Aliases = nonNil(s.Aliases)
	s.Keys = nonNil(s.Keys)
	for i := range s.Providers {
		p := &s.Providers[i]
		setDefault(&p.ConnectTimeoutMs, DefaultConnectTimeoutMs)
		setDefault(&p.ResponseHeaderTimeoutMs, DefaultResponseHeaderTimeoutMs)
		p.CircuitBreaker.normalize()
		normalizePrices(p.Prices)
	}
	for i := range s.Aliases {
		s.Aliases[i].normalize()
	}
	for i := range s.Keys {
		s.Keys[i].Normalize()
	}
	setDefault(&s.Limits.MaxBodyBytes, DefaultMaxBodyBytes)
	setDefault(&s.Limits.MaxMessages, DefaultMaxMessages)
	setDefault(&s.Limits.MaxContentChars, DefaultMaxContentChars)
	setDefault(&s.Limits.MaxConcurrent, DefaultMaxConcurrent)
	setDefault(&s.Limits.DefaultMaxTokens, DefaultMaxTokens)
	normalizeGroups(s)
	// Stable sorts keep duplicates (which Validate rejects) in input order instead
	// of shuffling them, so error messages are reproducible.
	slices.SortStableFunc(s.Providers, func(a, b Provider) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortStableFunc(s.Aliases, func(a, b Alias) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortStableFunc(s.Keys, func(a, b Key) int { return cmp.Compare(a.ID, b.ID) })
}

func (c *CircuitBreaker) normalize() {
	if c.ConsecutiveFailures == nil {
		n := DefaultConsecutiveFailures
		c.ConsecutiveFailures = &n
	}
	setDefault(&c.CoolDownMs, DefaultCoolDownMs)
	setDefault(&c.HalfOpenProbes, DefaultHalfOpenProbes)
}

func (a *Alias) normalize() {
	a.Fallbacks = nonNil(a.Fallbacks)
	if a.MaxFallbacks == nil {
		n := min(DefaultMaxFallbacks, len(a.Fallbacks))
		a.MaxFallbacks = &n
	}
	setDefault(&a.Timeouts.TotalMs, DefaultTotalMs)
	setDefault(&a.Timeouts.AttemptMs, DefaultAttemptMs)
	setDefault(&a.Timeouts.FirstChunkMs, DefaultFirstChunkMs)
	setDefault(&a.Timeouts.IdleMs, DefaultIdleMs)
}

// Normalize fills the key's defaults, sorts and de-duplicates its models (collapsing
// to ["*"] when "*" is present) and puts ExpiresAt in UTC. It is exported because
// keys are also built and checked on their own (ValidateKey, `llmgw keys create`).
func (k *Key) Normalize() {
	setDefault(&k.RateLimit.RPM, DefaultRPM)
	setDefault(&k.RateLimit.Burst, DefaultBurst)
	if slices.Contains(k.Models, AllModels) {
		k.Models = []string{AllModels}
	} else {
		k.Models = slices.Compact(slices.Sorted(slices.Values(k.Models)))
		k.Models = nonNil(k.Models)
	}
	k.Budget.normalize()
	if k.ExpiresAt != nil {
		// Round(0) drops a monotonic reading; UTC gives one spelling per instant.
		t := k.ExpiresAt.Round(0).UTC()
		k.ExpiresAt = &t
	}
	if k.Previous != nil {
		k.Previous.Until = k.Previous.Until.Round(0).UTC()
	}
	if len(k.Owners) == 0 {
		k.Owners = nil
	}
}

// AllowedFallbacks is the fallback list cut to MaxFallbacks: the routes the gateway
// may try after the primary. It does not allocate.
func (a *Alias) AllowedFallbacks() []Route {
	n := min(DefaultMaxFallbacks, len(a.Fallbacks))
	if a.MaxFallbacks != nil {
		n = min(max(*a.MaxFallbacks, 0), len(a.Fallbacks))
	}
	return a.Fallbacks[:n]
}

func setDefault[T int | int64](v *T, def T) {
	if *v == 0 {
		*v = def
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
