package controllers

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// Inputs is everything Compile looks at. It is plain data so that the whole
// mapping from CRs to snapshot can be tested without a cluster.
type Inputs struct {
	// Namespace resolves Service references to in-cluster host names.
	Namespace string
	// Now decides which keys are expired.
	Now       time.Time
	Providers []v1alpha1.ProviderEndpoint
	Aliases   []v1alpha1.ModelAlias
	Keys      []v1alpha1.GatewayKey
	// Secrets maps the name of each Secret in the namespace to its data keys.
	// Values are never needed: the gateway reads credentials itself.
	Secrets map[string][]string
	// Limits are the gateway's hard limits; zero fields take snapshot defaults.
	Limits snapshot.Limits
}

// Result is one object's Ready condition as Compile sees it.
type Result struct {
	Ready   bool   `json:"ready"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// ProviderResult is a ProviderEndpoint's computed status.
type ProviderResult struct {
	Result
	BaseURL string `json:"baseURL,omitempty"`
}

// AliasResult is a ModelAlias's computed status.
type AliasResult struct {
	Result
	Alias    string                   `json:"alias"`
	Primary  string                   `json:"primary"`
	Fallback string                   `json:"fallback,omitempty"`
	Routes   []v1alpha1.ResolvedRoute `json:"routes,omitempty"`
}

// KeyResult is a GatewayKey's computed status.
type KeyResult struct {
	Result
	Fingerprint string `json:"fingerprint,omitempty"`
}

// Statuses are the computed statuses, by object name.
type Statuses struct {
	Providers map[string]ProviderResult `json:"providers"`
	Aliases   map[string]AliasResult    `json:"aliases"`
	Keys      map[string]KeyResult      `json:"keys"`
	// NextExpiry is the earliest expiresAt after Now: statuses change then
	// even though no object does, so the reconciler must run again.
	NextExpiry *time.Time `json:"nextExpiry,omitempty"`
}

// Compile turns the namespace's CRs into the gateway snapshot and one status
// per object. It is pure and deterministic: the same inputs in any order give
// the same snapshot version and statuses. An object that cannot be served is
// left out with a Ready=False reason; it never makes the rest unservable.
//
// Conflicts (two aliases with one public name, two keys with one prefix or
// hash) go to the oldest object (creationTimestamp, then name), so creating a
// clashing object never takes away something already being served.
func Compile(in Inputs) (snapshot.Snapshot, Statuses) {
	st := Statuses{
		Providers: map[string]ProviderResult{},
		Aliases:   map[string]AliasResult{},
		Keys:      map[string]KeyResult{},
	}
	snap := snapshot.Snapshot{Limits: in.Limits}

	providers := slices.Clone(in.Providers)
	slices.SortFunc(providers, func(a, b v1alpha1.ProviderEndpoint) int { return cmp.Compare(a.Name, b.Name) })
	known := map[string]bool{}
	served := map[string]snapshot.Provider{}
	for i := range providers {
		pe := &providers[i]
		known[pe.Name] = true
		p, res := compileProvider(in, pe)
		st.Providers[pe.Name] = res
		if res.Ready {
			served[pe.Name] = p
			snap.Providers = append(snap.Providers, p)
		}
	}

	aliases := slices.Clone(in.Aliases)
	slices.SortFunc(aliases, func(a, b v1alpha1.ModelAlias) int { return olderFirst(&a.ObjectMeta, &b.ObjectMeta) })
	owner := map[string]string{}
	aliasServed := map[string]bool{}
	for i := range aliases {
		ma := &aliases[i]
		a, res := compileAlias(ma, known, served, owner)
		st.Aliases[ma.Name] = res
		if res.Ready {
			aliasServed[a.Name] = true
			snap.Aliases = append(snap.Aliases, a)
		}
	}

	keys := slices.Clone(in.Keys)
	slices.SortFunc(keys, func(a, b v1alpha1.GatewayKey) int { return olderFirst(&a.ObjectMeta, &b.ObjectMeta) })
	prefixOwner, hashOwner := map[string]string{}, map[string]string{}
	for i := range keys {
		gk := &keys[i]
		k, res, ok := compileKey(in.Now, gk, aliasServed, prefixOwner, hashOwner)
		st.Keys[gk.Name] = res
		if ok {
			snap.Keys = append(snap.Keys, k)
		}
		if e := gk.Spec.ExpiresAt; e != nil && e.After(in.Now) && (st.NextExpiry == nil || e.Time.Before(*st.NextExpiry)) {
			t := e.UTC()
			st.NextExpiry = &t
		}
	}

	// Encode normalizes and sets the version; every object was validated on
	// its own above, so an error here is a bug, and the reconciler (which
	// encodes again) refuses to publish such a snapshot.
	_, _ = snapshot.Encode(&snap)
	return snap, st
}

// olderFirst orders by creation time, then name: the order in which objects
// claim a contested name.
func olderFirst(a, b *metav1.ObjectMeta) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

func ready(msg string) Result {
	return Result{Ready: true, Reason: v1alpha1.ReasonCompiled, Message: msg}
}

func notReady(reason, format string, args ...any) Result {
	return Result{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

func compileProvider(in Inputs, pe *v1alpha1.ProviderEndpoint) (snapshot.Provider, ProviderResult) {
	s := pe.Spec
	p := snapshot.Provider{Name: pe.Name, Protocol: s.Protocol}
	switch {
	case s.URL != "":
		p.BaseURL = s.URL
	case s.Service != nil:
		scheme := cmp.Or(s.Service.Scheme, "http")
		p.BaseURL = fmt.Sprintf("%s://%s.%s.svc:%d%s", scheme, s.Service.Name, in.Namespace, s.Service.Port, s.Service.Path)
	}
	// BaseURL goes into the status only once validated: an invalid one may
	// carry credentials (user:pass@host).
	var res ProviderResult
	var errs []error
	if t := s.Timeouts; t != nil {
		errs = append(errs, setMs(&p.ConnectTimeoutMs, "timeouts.connect", t.Connect), setMs(&p.ResponseHeaderTimeoutMs, "timeouts.responseHeader", t.ResponseHeader))
	}
	if cb := s.CircuitBreaker; cb != nil {
		if n := cb.ConsecutiveFailures; n != nil {
			v := int(*n) // 0 turns the breaker off, so it must not read as unset
			p.CircuitBreaker.ConsecutiveFailures = &v
		}
		p.CircuitBreaker.HalfOpenProbes = int(cb.HalfOpenProbes)
		errs = append(errs, setMs(&p.CircuitBreaker.CoolDownMs, "circuitBreaker.coolDown", cb.CoolDown))
	}
	if err := errors.Join(errs...); err != nil {
		res.Result = notReady(v1alpha1.ReasonInvalidSpec, "%v", err)
		return p, res
	}
	if c := s.Credential; c != nil {
		ref := c.SecretRef
		keys, found := in.Secrets[ref.Name]
		switch {
		case !found:
			res.Result = notReady(v1alpha1.ReasonSecretNotFound, "Secret %q not found", ref.Name)
			return p, res
		case !slices.Contains(keys, ref.Key):
			res.Result = notReady(v1alpha1.ReasonSecretKeyNotFound, "Secret %q has no key %q", ref.Name, ref.Key)
			return p, res
		}
		p.Credential = &snapshot.Credential{SecretName: ref.Name, SecretKey: ref.Key}
	}
	// The snapshot's own rules (URL shape, plaintext keys, bounds) are the
	// final word: CEL mirrors most of them, but the gateway trusts only these.
	trial := snapshot.Snapshot{Providers: []snapshot.Provider{p}}
	trial.Normalize()
	if err := trial.Validate(); err != nil {
		res.Result = notReady(v1alpha1.ReasonInvalidSpec, "%s", oneLine(err))
		return p, res
	}
	res.BaseURL = p.BaseURL
	res.Result = ready("serving " + p.BaseURL)
	return p, res
}

func compileAlias(ma *v1alpha1.ModelAlias, known map[string]bool, served map[string]snapshot.Provider, owner map[string]string) (snapshot.Alias, AliasResult) {
	s := ma.Spec
	name := cmp.Or(s.Alias, ma.Name)
	a := snapshot.Alias{
		Name:    name,
		Primary: snapshot.Route{Provider: s.Primary.Provider, Model: s.Primary.Model},
	}
	for _, f := range s.Fallbacks {
		a.Fallbacks = append(a.Fallbacks, snapshot.Route{Provider: f.Provider, Model: f.Model})
	}
	if s.MaxFallbacks != nil {
		n := int(*s.MaxFallbacks)
		a.MaxFallbacks = &n
	}
	res := AliasResult{Alias: keyformat.Redact(name), Primary: routeString(a.Primary), Fallback: routesString(allowedFallbacks(a))}

	if prev, taken := owner[name]; taken {
		res.Result = notReady(v1alpha1.ReasonAliasConflict, "alias %q is already served by ModelAlias %q (the older one wins)", keyformat.Redact(name), prev)
		return a, res
	}
	owner[name] = ma.Name

	var errs []error
	if t := s.Timeouts; t != nil {
		errs = append(errs,
			setMs(&a.Timeouts.TotalMs, "timeouts.total", t.Total),
			setMs(&a.Timeouts.AttemptMs, "timeouts.attempt", t.Attempt),
			setMs(&a.Timeouts.FirstChunkMs, "timeouts.firstChunk", t.FirstChunk),
			setMs(&a.Timeouts.IdleMs, "timeouts.idle", t.Idle))
	}
	if err := errors.Join(errs...); err != nil {
		res.Result = notReady(v1alpha1.ReasonInvalidSpec, "%v", err)
		return a, res
	}
	// A short total with the attempt left unset means "one attempt may use it
	// all", not "invalid because the default attempt is longer".
	if a.Timeouts.AttemptMs == 0 && a.Timeouts.TotalMs > 0 {
		a.Timeouts.AttemptMs = min(a.Timeouts.TotalMs, snapshot.DefaultAttemptMs)
	}

	routes := append([]snapshot.Route{a.Primary}, a.Fallbacks...)
	var missing, unready []string
	trial := snapshot.Snapshot{Aliases: []snapshot.Alias{a}}
	for _, r := range routes {
		p, ok := served[r.Provider]
		switch {
		case !known[r.Provider]:
			missing = appendUnique(missing, r.Provider)
		case !ok:
			unready = appendUnique(unready, r.Provider)
		case !slices.ContainsFunc(trial.Providers, func(q snapshot.Provider) bool { return q.Name == p.Name }):
			trial.Providers = append(trial.Providers, p)
		}
	}
	// Strict on purpose: serving an alias without one of its fallbacks would
	// quietly change its failure behaviour; a clear condition is better.
	switch {
	case len(missing) > 0:
		res.Result = notReady(v1alpha1.ReasonProviderNotFound, "ProviderEndpoint %s not found", quoteList(missing))
		return a, res
	case len(unready) > 0:
		res.Result = notReady(v1alpha1.ReasonProviderNotReady, "ProviderEndpoint %s not ready", quoteList(unready))
		return a, res
	}
	trial.Normalize()
	if err := trial.Validate(); err != nil {
		res.Result = notReady(v1alpha1.ReasonInvalidSpec, "%s", oneLine(err))
		return a, res
	}
	n := trial.Aliases[0]
	res.Fallback = routesString(n.AllowedFallbacks())
	for _, r := range append([]snapshot.Route{n.Primary}, n.AllowedFallbacks()...) {
		res.Routes = append(res.Routes, v1alpha1.ResolvedRoute{Provider: r.Provider, Model: keyformat.Redact(r.Model), BaseURL: served[r.Provider].BaseURL})
	}
	res.Result = ready(fmt.Sprintf("serving alias %q", keyformat.Redact(name)))
	return a, res
}

func compileKey(now time.Time, gk *v1alpha1.GatewayKey, aliases map[string]bool, prefixOwner, hashOwner map[string]string) (snapshot.Key, KeyResult, bool) {
	s := gk.Spec
	k := snapshot.Key{
		ID:       gk.Name,
		Prefix:   s.KeyPrefix,
		Hash:     s.KeyHash,
		Disabled: s.Disabled,
	}
	if s.RateLimit != nil {
		k.RateLimit = snapshot.RateLimit{RPM: int(s.RateLimit.RequestsPerMinute), Burst: int(s.RateLimit.Burst)}
	}
	if s.ExpiresAt != nil {
		t := s.ExpiresAt.UTC()
		k.ExpiresAt = &t
	}
	var res KeyResult
	if keyformat.ValidHash(s.KeyHash) {
		res.Fingerprint = keyformat.Fingerprint(s.KeyHash)
	}
	// Models naming aliases that are not served are dropped from this key's
	// entry (the snapshot refuses dangling names); requests for them fail as
	// unknown models either way, and they come back when the alias does.
	var dropped []string
	for _, m := range s.Models {
		if m == snapshot.AllModels || aliases[m] {
			k.Models = append(k.Models, m)
		} else {
			dropped = append(dropped, m)
		}
	}
	if len(k.Models) == 0 {
		res.Result = notReady(v1alpha1.ReasonAliasNotFound, "none of the key's models is served: %s", quoteList(dropped))
		return k, res, false
	}
	k.Normalize()
	if err := snapshot.ValidateKey(&k); err != nil {
		res.Result = notReady(v1alpha1.ReasonInvalidSpec, "%s", oneLine(err))
		return k, res, false
	}
	if prev, taken := prefixOwner[k.Prefix]; taken {
		res.Result = notReady(v1alpha1.ReasonKeyConflict, "keyPrefix is already used by GatewayKey %q (the older one wins)", prev)
		return k, res, false
	}
	if prev, taken := hashOwner[k.Hash]; taken {
		res.Result = notReady(v1alpha1.ReasonKeyConflict, "keyHash is already used by GatewayKey %q (the older one wins)", prev)
		return k, res, false
	}
	prefixOwner[k.Prefix], hashOwner[k.Hash] = gk.Name, gk.Name

	var note string
	if len(dropped) > 0 {
		note = "; models not served: " + quoteList(dropped)
	}
	switch {
	case s.Disabled:
		res.Result = notReady(v1alpha1.ReasonDisabled, "key is disabled: the gateway refuses it%s", note)
	case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
		res.Result = notReady(v1alpha1.ReasonExpired, "key expired at %s: the gateway refuses it%s", k.ExpiresAt.Format(time.RFC3339), note)
	default:
		res.Result = ready("key is served" + note)
	}
	// Disabled and expired keys stay in the snapshot: the gateway can tell a
	// refused key from an unknown one in its logs and usage records.
	return k, res, true
}

func setMs(dst *int, field string, d v1alpha1.Duration) error {
	ms, err := d.Milliseconds()
	if err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	if d != "" && ms <= 0 {
		return fmt.Errorf("%s: must be at least 1ms", field)
	}
	*dst = ms
	return nil
}

func allowedFallbacks(a snapshot.Alias) []snapshot.Route { return a.AllowedFallbacks() }

// routeString redacts because a model name is free text and a pasted key must
// not reach a status.
func routeString(r snapshot.Route) string { return keyformat.Redact(r.Provider + "/" + r.Model) }

func routesString(rs []snapshot.Route) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = routeString(r)
	}
	return strings.Join(s, ",")
}

func appendUnique(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", keyformat.Redact(v))
	}
	return strings.Join(q, ", ")
}

// oneLine joins errors.Join's lines: condition messages are single-line.
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

// secretKeys lists a Secret's data keys, sorted: all Compile needs of a Secret.
func secretKeys(s *corev1.Secret) []string {
	keys := make([]string, 0, len(s.Data)+len(s.StringData))
	for k := range s.Data {
		keys = append(keys, k)
	}
	for k := range s.StringData {
		keys = appendUnique(keys, k)
	}
	slices.Sort(keys)
	return keys
}
