package snapshot

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/llmgw/llmgw/api/keyformat"
)

// Bounds that keep a snapshot from configuring unbounded work.
const (
	MaxFallbacksLimit = 3
	// MaxTimeoutMs keeps every timeout far from time.Duration overflow and from
	// "effectively never", which would defeat the point of a timeout.
	MaxTimeoutMs = 24 * 60 * 60 * 1000
	maxNameLen   = 253
	// MaxConsecutiveFailures and MaxHalfOpenProbes bound a circuit breaker:
	// beyond them it would never open, or probe with full traffic.
	MaxConsecutiveFailures = 1000
	MaxHalfOpenProbes      = 100
)

// Validate checks a normalized snapshot and returns every problem at once (joined
// with errors.Join), each naming its object, so one run of the controller or one
// reload attempt reports everything to fix. Messages never quote a value that looks
// like a plaintext key, nor a base URL (it might embed a credential).
func (s *Snapshot) Validate() error { return s.validate(false) }

// validate is Validate; keysChecked skips what CheckKeyPart already checked
// of each key on its own (its fields and the plaintext scan), keeping every
// check across objects.
func (s *Snapshot) validate(keysChecked bool) error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	providers := make(map[string]bool, len(s.Providers))
	for i := range s.Providers {
		p := &s.Providers[i]
		obj := "provider " + label(p.Name, i)
		if providers[p.Name] {
			add("%s: duplicate provider name", obj)
		}
		providers[p.Name] = true
		errs = append(errs, validateProvider(obj, p)...)
	}

	aliases := make(map[string]bool, len(s.Aliases))
	for i := range s.Aliases {
		a := &s.Aliases[i]
		obj := "alias " + label(a.Name, i)
		if aliases[a.Name] {
			add("%s: duplicate alias name", obj)
		}
		aliases[a.Name] = true
		errs = append(errs, validateAlias(obj, a, providers)...)
	}

	ids := make(map[string]bool, len(s.Keys))
	prefixes := make(map[string]string, len(s.Keys)) // prefix → the key id that has it
	for i := range s.Keys {
		k := &s.Keys[i]
		// Named only when something is wrong: a label for each of 50,000
		// keys was a large part of a reload.
		obj := func() string { return "key " + label(k.ID, i) }
		if ids[k.ID] {
			add("%s: duplicate key id", obj())
		}
		ids[k.ID] = true
		if other, dup := prefixes[k.Prefix]; k.Prefix != "" && dup {
			add("%s: duplicate key prefix %s (also key %s's current or previous prefix)", obj(), k.Prefix, quote(other))
		}
		prefixes[k.Prefix] = k.ID
		if p := k.Previous; p != nil && p.Prefix != "" && p.Prefix != k.Prefix {
			if other, dup := prefixes[p.Prefix]; dup {
				add("%s: previous.prefix %s is also key %s's current or previous prefix", obj(), p.Prefix, quote(other))
			}
			prefixes[p.Prefix] = k.ID
		}
		if !keysChecked {
			errs = append(errs, validateKey(obj(), k, false)...)
		}
		for _, m := range k.Models {
			if m != AllModels && !aliases[m] && validName(m) == nil {
				add("%s: models: alias %s does not exist", obj(), quote(m))
			}
		}
	}

	l := s.Limits
	positive := func(name string, v int64) {
		if v <= 0 {
			add("limits: %s must be > 0, got %d", name, v)
		}
	}
	positive("maxBodyBytes", l.MaxBodyBytes)
	positive("maxMessages", int64(l.MaxMessages))
	positive("maxContentChars", int64(l.MaxContentChars))
	positive("maxConcurrent", int64(l.MaxConcurrent))
	errs = append(errs, validateQuotas(s)...)

	errs = append(errs, validatePrices(s)...)
	if keysChecked {
		rest := *s
		rest.Keys = nil
		errs = append(errs, findPlaintextKeys(&rest)...)
	} else {
		errs = append(errs, findPlaintextKeys(s)...)
	}
	return errors.Join(errs...)
}

// ValidateKey checks one key as it is defined (`llmgw keys create`, a
// GatewayKey resource): everything Validate checks about a key except
// uniqueness and whether its models exist, and it needs at least one model.
func ValidateKey(k *Key) error {
	errs := validateKey("key "+label(k.ID, 0), k, true)
	errs = append(errs, findPlaintextKeys(k)...)
	return errors.Join(errs...)
}

func validateProvider(obj string, p *Provider) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(obj+": "+format, args...)) }
	if err := validName(p.Name); err != nil {
		add("name %v", err)
	}
	if p.Protocol != ProtocolOpenAI && p.Protocol != ProtocolAnthropic {
		add("protocol must be %q or %q, got %s", ProtocolOpenAI, ProtocolAnthropic, quote(p.Protocol))
	}
	if p.ResponsesAPI && p.Protocol != ProtocolOpenAI {
		add("responsesAPI is only for protocol %q", ProtocolOpenAI)
	}
	if err := validBaseURL(p.BaseURL); err != nil {
		add("baseURL %v", err)
	}
	if c := p.Credential; c != nil {
		hasFile, hasSecret := c.File != "", c.SecretName != "" || c.SecretKey != ""
		switch {
		case hasFile && hasSecret:
			add("credential: set either file or secretName+secretKey, not both")
		case !hasFile && !hasSecret:
			add("credential: set file or secretName+secretKey (or omit credential)")
		case hasSecret && (c.SecretName == "" || c.SecretKey == ""):
			add("credential: secretName and secretKey must both be set")
		case hasFile && !filepath.IsLocal(c.File):
			// The gateway reads it below the credentials directory its operator
			// names; a snapshot must not point it at any other file.
			add("credential.file must be a relative path inside the gateway's credentials directory (no leading /, no ..)")
		}
	}
	checkTimeout(add, "connectTimeoutMs", p.ConnectTimeoutMs)
	checkTimeout(add, "responseHeaderTimeoutMs", p.ResponseHeaderTimeoutMs)
	cb := p.CircuitBreaker
	if n := cb.ConsecutiveFailures; n != nil && (*n < 0 || *n > MaxConsecutiveFailures) {
		add("circuitBreaker.consecutiveFailures must be within 0..%d (0 turns the breaker off), got %d", MaxConsecutiveFailures, *n)
	}
	checkTimeout(add, "circuitBreaker.coolDownMs", cb.CoolDownMs)
	if cb.HalfOpenProbes < 1 || cb.HalfOpenProbes > MaxHalfOpenProbes {
		add("circuitBreaker.halfOpenProbes must be within 1..%d, got %d", MaxHalfOpenProbes, cb.HalfOpenProbes)
	}
	return errs
}

func validateAlias(obj string, a *Alias, providers map[string]bool) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(obj+": "+format, args...)) }
	if err := validName(a.Name); err != nil {
		add("name %v", err)
	}
	checkRoute := func(where string, r Route) {
		if !providers[r.Provider] {
			add("%s: provider %s does not exist", where, quote(r.Provider))
		}
		if err := validName(r.Model); err != nil {
			add("%s: model %v", where, err)
		}
	}
	checkRoute("primary", a.Primary)
	for i, r := range a.Fallbacks {
		checkRoute(fmt.Sprintf("fallbacks[%d]", i), r)
	}
	if len(a.Fallbacks) > MaxFallbacksLimit {
		add("at most %d fallbacks, got %d", MaxFallbacksLimit, len(a.Fallbacks))
	}
	if m := a.MaxFallbacks; m != nil {
		switch {
		case *m < 0 || *m > MaxFallbacksLimit:
			add("maxFallbacks must be within 0..%d, got %d", MaxFallbacksLimit, *m)
		case *m > len(a.Fallbacks):
			add("maxFallbacks %d exceeds the %d fallbacks listed", *m, len(a.Fallbacks))
		}
	}
	t := a.Timeouts
	checkTimeout(add, "timeouts.totalMs", t.TotalMs)
	checkTimeout(add, "timeouts.attemptMs", t.AttemptMs)
	checkTimeout(add, "timeouts.firstChunkMs", t.FirstChunkMs)
	checkTimeout(add, "timeouts.idleMs", t.IdleMs)
	if t.AttemptMs > t.TotalMs {
		add("timeouts.attemptMs (%d) exceeds timeouts.totalMs (%d)", t.AttemptMs, t.TotalMs)
	}
	return errs
}

// validateKey checks one key. A snapshot may hold a key whose models list is
// empty (requireModels false): the controller leaves out model names whose
// alias is not served, and a key left with none still authenticates (its
// callers get 403/404 on models, not 401 on their key).
func validateKey(obj string, k *Key, requireModels bool) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(obj+": "+format, args...)) }
	if err := validName(k.ID); err != nil {
		add("id %v", err)
	}
	if !keyformat.ValidPrefix(k.Prefix) {
		add("prefix must be %q followed by 10 chars of [a-z0-9]", keyformat.Prefix)
	}
	if !keyformat.ValidHash(k.Hash) {
		add("hash must be %q followed by 64 lowercase hex chars (store the hash, never the key)", keyformat.HashPrefix)
	}
	if requireModels && len(k.Models) == 0 {
		add("models is empty: list alias names or %q (use disabled to block a key)", AllModels)
	}
	for _, m := range k.Models {
		if m == AllModels {
			continue
		}
		if err := validName(m); err != nil {
			add("models: alias name %v", err)
		}
	}
	if k.RateLimit.RPM <= 0 {
		add("rateLimit.rpm must be > 0, got %d", k.RateLimit.RPM)
	}
	if k.RateLimit.Burst <= 0 {
		add("rateLimit.burst must be > 0, got %d", k.RateLimit.Burst)
	}
	errs = append(errs, validateKeyQuotas(obj, k)...)
	if p := k.Previous; p != nil {
		switch {
		case !keyformat.ValidPrefix(p.Prefix):
			add("previous.prefix must be %q followed by 10 chars of [a-z0-9]", keyformat.Prefix)
		case p.Prefix == k.Prefix:
			add("previous.prefix is the key's own prefix: a rotated key has a new prefix")
		}
		if !keyformat.ValidHash(p.Hash) {
			add("previous.hash must be %q followed by 64 lowercase hex chars (store the hash, never the key)", keyformat.HashPrefix)
		}
		if p.Until.IsZero() {
			add("previous.until must be set: when the previous key stops being accepted")
		}
	}
	errs = append(errs, validateOwners(obj, k.Owners)...)
	return errs
}

func checkTimeout(add func(string, ...any), field string, v int) {
	if v <= 0 || v > MaxTimeoutMs {
		add("%s must be within 1..%d, got %d", field, MaxTimeoutMs, v)
	}
}

// validName is the rule for every name and model: non-empty, bounded, valid UTF-8,
// no whitespace or control characters (they make names ambiguous in logs and
// headers and are never intended).
func validName(s string) error {
	switch {
	case s == "":
		return errors.New("is empty")
	case len(s) > maxNameLen:
		return fmt.Errorf("is longer than %d bytes", maxNameLen)
	case !utf8.ValidString(s):
		return errors.New("is not valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("%s contains whitespace or control characters", quote(s))
		}
	}
	return nil
}

func validBaseURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return errors.New("is empty")
	case err != nil:
		return errors.New("does not parse as a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("must use http or https")
	case u.Host == "" || u.Hostname() == "":
		return errors.New("has no host")
	case u.User != nil:
		return errors.New("must not contain userinfo (reference a credential instead)")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return errors.New("must not have a query or fragment")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return errors.New("has an invalid port (1-65535)")
		}
	}
	return nil
}

// label names an object in messages by its name, or by position when it has none.
func label(name string, i int) string {
	if name == "" {
		return "#" + strconv.Itoa(i)
	}
	return quote(name)
}

// quote is strconv.Quote with plaintext keys redacted, since names and models come
// from user input and messages end up in logs, status and events.
func quote(s string) string { return strconv.Quote(keyformat.Redact(s)) }
