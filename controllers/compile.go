package controllers

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// Inputs is everything Compile looks at. It is plain data so that the whole
// mapping from CRs to snapshot can be tested without a cluster.
type Inputs struct {
	// Namespace is the controller's own: ProviderEndpoints are compiled
	// there only (their Secrets and Services are read there), and its
	// objects are named without a namespace (namespaces.go).
	Namespace string
	// Now decides which keys are expired.
	Now       time.Time
	Providers []v1alpha1.ProviderEndpoint
	Aliases   []v1alpha1.ModelAlias
	Keys      []v1alpha1.GatewayKey
	Groups    []v1alpha1.BudgetGroup
	// Secrets maps the name of each Secret in the namespace to its data keys.
	// Values are never needed: the gateway reads credentials itself.
	Secrets map[string][]string
	// Services maps the name of each Service in the namespace to its port
	// numbers (spec.ports[].port): a ProviderEndpoint's spec.service
	// resolves only to a Service that exists and has that port. Nothing
	// else of a Service is needed: the gateways call it by its DNS name.
	Services map[string][]int32
	// Limits are the gateway's hard limits; zero fields take snapshot defaults.
	Limits snapshot.Limits
	// ExpiryWarning is how long before its expiresAt a key is
	// ExpiringSoon (--key-expiry-warning); 0: no ExpiringSoon condition.
	ExpiryWarning time.Duration
	// OwnerLabels are the label keys copied from GatewayKeys and
	// BudgetGroups into the snapshot's owners (--owner-labels; owners.go),
	// as OwnerLabelKeys returns them.
	OwnerLabels []string
	// Memo, when set, remembers across compilations what each GatewayKey
	// compiles to on its own (compilememo.go), and the last compilation
	// to patch when only keys changed (compileincr.go); the result is the
	// same with or without it, but holds only until the next Compile with
	// that memo.
	Memo *CompileMemo `json:"-"`
}

// Condition is one status condition as Compile decides it.
type Condition struct {
	Status  bool   `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Result is what Compile decides about one object: its Accepted and
// ResolvedRefs conditions and whether it is in the snapshot. Programmed is
// decided later, from what the gateways report (programmed.go).
type Result struct {
	Accepted     Condition `json:"accepted"`
	ResolvedRefs Condition `json:"resolvedRefs"`
	// InSnapshot: the object is in the compiled snapshot, an alias perhaps
	// through fewer routes than it lists.
	InSnapshot bool `json:"inSnapshot"`
	// Refused is set on a key the snapshot carries but the gateways answer
	// 401 (Disabled, Expired): Ready is False with this reason.
	Refused *Condition `json:"refused,omitempty"`
	// Digest identifies the object's entry in the snapshot (set when
	// InSnapshot): a gateway running a snapshot whose entry has the same
	// digest serves the object as it is now.
	Digest string `json:"-"`
	// uid and generation identify the object this result is about.
	uid        types.UID
	generation int64
}

func (r *Result) compiledFrom(m *metav1.ObjectMeta) { r.uid, r.generation = m.UID, m.Generation }

// describes says whether r was compiled from obj as it is (a result may be
// older than the object a later list returns, until that object's event
// brings the next compilation).
func (r *Result) describes(obj metav1.Object) bool {
	return r.uid == obj.GetUID() && r.generation == obj.GetGeneration()
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
	// Rotation is status.rotation (nil: the key has no spec.previous).
	Rotation *v1alpha1.KeyRotationStatus `json:"rotation,omitempty"`
	// ExpiringSoon is the ExpiringSoon condition (nil: the warning is
	// off, Inputs.ExpiryWarning 0).
	ExpiringSoon *Condition `json:"expiringSoon,omitempty"`
}

// Statuses are the computed statuses, by object name.
type Statuses struct {
	Providers map[string]ProviderResult `json:"providers"`
	Aliases   map[string]AliasResult    `json:"aliases"`
	Keys      map[string]KeyResult      `json:"keys"`
	Groups    map[string]GroupResult    `json:"groups,omitempty"`
	// NextExpiry is the earliest moment after Now at which a key's status
	// changes by the time alone — its expiresAt, the start of its expiry
	// warning, the end of its previous key's grace (sooner): statuses
	// change then even though no object does, so the reconciler must run
	// again.
	NextExpiry *time.Time `json:"nextExpiry,omitempty"`
	// Invalid is why the compiled snapshot does not encode: every object
	// is validated on its own, so this is a bug, and the reconciler then
	// keeps the published snapshot.
	Invalid error `json:"-"`
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
	if snap, st, ok := in.Memo.patch(in); ok {
		return snap, st
	}
	st := Statuses{
		Providers: map[string]ProviderResult{},
		Aliases:   map[string]AliasResult{},
		Keys:      map[string]KeyResult{},
		Groups:    map[string]GroupResult{},
	}
	snap := snapshot.Snapshot{Limits: in.Limits}

	providers := slices.Clone(in.Providers)
	// Oldest first: the oldest priced provider decides the currency.
	slices.SortFunc(providers, func(a, b v1alpha1.ProviderEndpoint) int { return olderFirst(&a.ObjectMeta, &b.ObjectMeta) })
	served := map[string]snapshot.Provider{}
	var currency currencyOwner
	for i := range providers {
		pe := &providers[i]
		p, res := compileProvider(in, pe)
		currency.claim(pe, &p, &res)
		res.compiledFrom(&pe.ObjectMeta)
		st.Providers[objectID(in.Namespace, pe)] = res
		if res.InSnapshot {
			served[pe.Name] = p
			snap.Providers = append(snap.Providers, p)
		}
	}

	aliases := slices.Clone(in.Aliases)
	slices.SortFunc(aliases, func(a, b v1alpha1.ModelAlias) int { return olderFirst(&a.ObjectMeta, &b.ObjectMeta) })
	owner := map[string]string{}
	aliasServed := map[string]bool{}
	aliasObject := map[string]string{} // public name → ModelAlias's objectID
	for i := range aliases {
		ma := &aliases[i]
		id := objectID(in.Namespace, ma)
		a, res := compileAlias(ma, id, providerScope(in.Namespace, ma), st.Providers, served, owner)
		res.compiledFrom(&ma.ObjectMeta)
		st.Aliases[id] = res
		if res.InSnapshot {
			aliasServed[a.Name] = true
			aliasObject[a.Name] = id
			snap.Aliases = append(snap.Aliases, a)
		}
	}

	groups := slices.Clone(in.Groups)
	slices.SortFunc(groups, func(a, b v1alpha1.BudgetGroup) int { return olderFirst(&a.ObjectMeta, &b.ObjectMeta) })
	for i := range groups {
		g, res := compileGroup(&groups[i], objectID(in.Namespace, &groups[i]), in.OwnerLabels, &currency)
		res.compiledFrom(&groups[i].ObjectMeta)
		st.Groups[g.Name] = res
		if res.InSnapshot {
			snap.Groups = append(snap.Groups, g)
		}
	}

	beforeKeys := currency
	// Pointers, not copies: a GatewayKey is a large struct, and copying
	// 50,000 of them was a noticeable part of a compilation.
	keys := make([]*v1alpha1.GatewayKey, len(in.Keys))
	for i := range in.Keys {
		keys[i] = &in.Keys[i]
	}
	slices.SortFunc(keys, func(a, b *v1alpha1.GatewayKey) int { return olderFirst(&a.ObjectMeta, &b.ObjectMeta) })
	prefixOwner, hashOwner := make(map[string]string, len(keys)), make(map[string]string, len(keys))
	snap.Keys = make([]snapshot.Key, 0, len(keys))
	clock := newKeyClock(in.Now, in.ExpiryWarning)
	for _, gk := range keys {
		k, res := compileKeyIn(clock, gk, in.Memo.key(in.Namespace, in.OwnerLabels, gk), aliasServed, prefixOwner, hashOwner, &currency, st.Groups)
		st.Keys[k.ID] = res
		if res.InSnapshot {
			snap.Keys = append(snap.Keys, k)
		}
		st.NextExpiry = sooner(st.NextExpiry, gk, in.Now, in.ExpiryWarning)
	}

	in.Memo.retain(in.Namespace, in.Keys)
	// Encoding normalizes and sets the version; every object was validated
	// on its own above (each key by ValidateKey), so an error here is a bug,
	// and the reconciler refuses to publish such a snapshot.
	patcher, err := in.Memo.seal(&snap)
	if err != nil {
		st.Invalid = err
	}
	setDigests(&snap, &st, aliasObject, in.Memo)
	in.Memo.remember(in, snap, st, claims{aliasServed, beforeKeys, prefixOwner, hashOwner}, patcher)
	return snap, st
}

// setDigests records each served object's entry digest, from the normalized
// snapshot (defaults filled), so that equal entries have equal digests.
func setDigests(snap *snapshot.Snapshot, st *Statuses, aliasObject map[string]string, memo *CompileMemo) {
	for i := range snap.Providers {
		p := &snap.Providers[i]
		res := st.Providers[p.Name]
		res.Digest = digest(p)
		st.Providers[p.Name] = res
	}
	for i := range snap.Aliases {
		a := &snap.Aliases[i]
		name := aliasObject[a.Name]
		res := st.Aliases[name]
		res.Digest = digest(a)
		st.Aliases[name] = res
	}
	for i := range snap.Keys {
		k := &snap.Keys[i]
		res := st.Keys[k.ID]
		res.Digest = memo.digest(k)
		st.Keys[k.ID] = res
	}
	for i := range snap.Groups {
		g := &snap.Groups[i]
		res := st.Groups[g.Name]
		res.Digest = digest(g)
		st.Groups[g.Name] = res
	}
}

// digest is a short content hash of one snapshot entry. 64 bits are plenty:
// it only tells one object's successive versions apart.
func digest(entry any) string {
	b, err := json.Marshal(entry)
	if err != nil {
		return "" // never equal to a real digest: the object just stays Pending
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// olderFirst orders by creation time, then name, then namespace: the order
// in which objects claim a contested name. A total order, so that objects
// of two namespaces with one name and one creation second claim the same
// way whatever order they are listed in.
func olderFirst(a, b *metav1.ObjectMeta) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return cmp.Compare(a.Namespace, b.Namespace)
}

// The conditions of a healthy key, made once: Sprintf for two constant
// messages on each of 50,000 keys was a measurable part of a compilation.
var (
	keyValid    = Condition{Status: true, Reason: v1alpha1.ReasonAccepted, Message: "the key is valid"}
	keyResolved = Condition{Status: true, Reason: v1alpha1.ReasonResolvedRefs, Message: "every model names a served alias"}
)

func isTrue(reason, format string, args ...any) Condition {
	return Condition{Status: true, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

func isFalse(reason, format string, args ...any) Condition {
	return Condition{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

func compileProvider(in Inputs, pe *v1alpha1.ProviderEndpoint) (snapshot.Provider, ProviderResult) {
	s := pe.Spec
	p := snapshot.Provider{Name: pe.Name, Protocol: s.Protocol, ResponsesAPI: s.ResponsesAPI}
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
	res.Accepted = isTrue(v1alpha1.ReasonAccepted, "the spec is valid")
	if pe.Namespace != "" && pe.Namespace != in.Namespace {
		res.Accepted = isFalse(v1alpha1.ReasonNamespaceNotAllowed, "ProviderEndpoints are compiled in namespace %s only, where the gateways read their credentials and call their Services; aliases in any watched namespace route to the ProviderEndpoints of %s", in.Namespace, in.Namespace)
		res.ResolvedRefs = isFalse(v1alpha1.ReasonNamespaceNotAllowed, "not resolved: the ProviderEndpoint is not compiled")
		return p, res
	}
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
	p.Prices = compilePrices(s.Prices)
	if err := errors.Join(errs...); err != nil {
		res.Accepted = isFalse(v1alpha1.ReasonInvalidSpec, "%v", err)
	}
	// Every reference is checked, not only the first that fails: a user who
	// fixes the one reported must not then meet the next.
	var unresolved []Condition
	if ref := s.Service; ref != nil {
		ports, found := in.Services[ref.Name]
		switch {
		case !found:
			unresolved = append(unresolved, isFalse(v1alpha1.ReasonServiceNotFound, "Service %q not found in the namespace", ref.Name))
		case !slices.Contains(ports, ref.Port):
			unresolved = append(unresolved, isFalse(v1alpha1.ReasonServicePortNotFound, "Service %q has no port %d; it has %v", ref.Name, ref.Port, ports))
		}
	}
	res.ResolvedRefs = isTrue(v1alpha1.ReasonResolvedRefs, "no credential to resolve")
	if c := s.Credential; c != nil {
		ref := c.SecretRef
		p.Credential = &snapshot.Credential{SecretName: ref.Name, SecretKey: ref.Key}
		keys, found := in.Secrets[ref.Name]
		switch {
		case !found:
			unresolved = append(unresolved, isFalse(v1alpha1.ReasonSecretNotFound, "Secret %q not found", ref.Name))
		case !slices.Contains(keys, ref.Key):
			unresolved = append(unresolved, isFalse(v1alpha1.ReasonSecretKeyNotFound, "Secret %q has no key %q, or its value is empty", ref.Name, ref.Key))
		default:
			res.ResolvedRefs = isTrue(v1alpha1.ReasonResolvedRefs, "Secret %q has key %q", ref.Name, ref.Key)
		}
	}
	if len(unresolved) > 0 {
		msgs := make([]string, len(unresolved))
		for i, c := range unresolved {
			msgs[i] = c.Message
		}
		res.ResolvedRefs = isFalse(unresolved[0].Reason, "%s", strings.Join(msgs, "; "))
	}
	if res.Accepted.Status {
		// The snapshot's own rules (URL shape, plaintext keys, bounds) are the
		// final word: CEL mirrors most of them, but the gateway trusts only these.
		trial := snapshot.Snapshot{Providers: []snapshot.Provider{p}}
		trial.Normalize()
		if err := trial.Validate(); err != nil {
			res.Accepted = isFalse(v1alpha1.ReasonInvalidSpec, "%s", oneLine(err))
		} else {
			res.BaseURL = p.BaseURL
			res.Accepted.Message = "the gateways call " + p.BaseURL
		}
	}
	res.InSnapshot = res.Accepted.Status && res.ResolvedRefs.Status
	return p, res
}

// compileAlias compiles ma, named id (objectID); scope follows a provider
// that is not found, to say where it was looked for.
func compileAlias(ma *v1alpha1.ModelAlias, id, scope string, providers map[string]ProviderResult, served map[string]snapshot.Provider, owner map[string]string) (snapshot.Alias, AliasResult) {
	s := ma.Spec
	name := cmp.Or(s.Alias, ma.Name)
	a := snapshot.Alias{
		Name:    name,
		Primary: snapshot.Route{Provider: s.Primary.Provider, Model: s.Primary.Model},
	}
	for _, f := range s.Fallbacks {
		a.Fallbacks = append(a.Fallbacks, snapshot.Route{Provider: f.Provider, Model: f.Model})
	}
	// maxFallbacks is a cap: never more fallbacks than are listed (the CRD
	// defaults it to 1 whether or not there are any).
	limit := snapshot.DefaultMaxFallbacks
	if s.MaxFallbacks != nil {
		limit = int(*s.MaxFallbacks)
	}
	routes := append([]snapshot.Route{a.Primary}, a.Fallbacks...)
	res := AliasResult{Alias: keyformat.Redact(name), Primary: routeString(a.Primary), Fallback: routesString(a.Fallbacks[:min(max(limit, 0), len(a.Fallbacks))])}

	// Accepted: the alias on its own, as if every provider it names existed.
	res.Accepted = isTrue(v1alpha1.ReasonAccepted, "alias %q is valid", keyformat.Redact(name))
	if err := aliasTimeouts(&a, s.Timeouts); err != nil {
		res.Accepted = isFalse(v1alpha1.ReasonInvalidSpec, "%v", err)
	} else {
		n := min(max(limit, 0), len(a.Fallbacks))
		a.MaxFallbacks = &n
		trial := snapshot.Snapshot{Aliases: []snapshot.Alias{a}}
		for _, r := range routes {
			if !slices.ContainsFunc(trial.Providers, func(q snapshot.Provider) bool { return q.Name == r.Provider }) {
				trial.Providers = append(trial.Providers, snapshot.Provider{Name: r.Provider, Protocol: snapshot.ProtocolOpenAI, BaseURL: "http://provider.invalid"})
			}
		}
		trial.Normalize()
		if err := trial.Validate(); err != nil {
			res.Accepted = isFalse(v1alpha1.ReasonInvalidSpec, "%s", oneLine(err))
		}
	}
	// Only a valid alias claims its public name: an invalid older one must
	// not keep a valid newer one from being served.
	if res.Accepted.Status {
		if prev, taken := owner[name]; taken {
			res.Accepted = isFalse(v1alpha1.ReasonAliasConflict, "alias %q is already claimed by the older ModelAlias %q", keyformat.Redact(name), prev)
		} else {
			owner[name] = id
		}
	}

	// ResolvedRefs: which routes have a served provider. The alias is served
	// through those that do, in their configured order; a broken fallback (or
	// primary) must not take the working routes down with it.
	var working []snapshot.Route
	var problems []string
	missing := false
	for i, r := range routes {
		if _, ok := served[r.Provider]; ok {
			working = append(working, r)
			continue
		}
		role := "primary"
		if i > 0 {
			role = fmt.Sprintf("fallback %d", i)
		}
		pr, known := providers[r.Provider]
		switch {
		case !known:
			missing = true
			problems = append(problems, fmt.Sprintf("%s %s: ProviderEndpoint %q not found%s", role, routeString(r), r.Provider, scope))
		default:
			problems = append(problems, fmt.Sprintf("%s %s: ProviderEndpoint %q is not ready (%s)", role, routeString(r), r.Provider, notReadyReason(pr.Result)))
		}
	}
	reason := v1alpha1.ReasonProviderNotReady
	if missing {
		reason = v1alpha1.ReasonProviderNotFound
	}
	switch {
	case len(problems) == 0:
		res.ResolvedRefs = isTrue(v1alpha1.ReasonResolvedRefs, "every route's ProviderEndpoint is ready")
	case len(working) > 0:
		res.ResolvedRefs = isFalse(reason, "%s; the alias is served through the other %d of its %d routes", strings.Join(problems, "; "), len(working), len(routes))
	default:
		res.ResolvedRefs = isFalse(reason, "%s; no route works, so the alias is not served", strings.Join(problems, "; "))
	}
	if !res.Accepted.Status || len(working) == 0 {
		return a, res
	}

	a.Primary, a.Fallbacks = working[0], working[1:]
	n := min(max(limit, 0), len(a.Fallbacks))
	a.MaxFallbacks = &n
	trial := snapshot.Snapshot{Aliases: []snapshot.Alias{a}}
	for _, r := range working {
		if p := served[r.Provider]; !slices.ContainsFunc(trial.Providers, func(q snapshot.Provider) bool { return q.Name == p.Name }) {
			trial.Providers = append(trial.Providers, p)
		}
	}
	trial.Normalize()
	if err := trial.Validate(); err != nil {
		// The checks above with stand-in providers passed, so this is a bug;
		// say so rather than publish a snapshot every gateway refuses.
		res.Accepted = isFalse(v1alpha1.ReasonInvalidSpec, "%s", oneLine(err))
		return a, res
	}
	served0 := trial.Aliases[0]
	for _, r := range append([]snapshot.Route{served0.Primary}, served0.AllowedFallbacks()...) {
		res.Routes = append(res.Routes, v1alpha1.ResolvedRoute{Provider: r.Provider, Model: keyformat.Redact(r.Model), BaseURL: served[r.Provider].BaseURL})
	}
	res.InSnapshot = true
	return a, res
}

// aliasTimeouts copies the timeouts into a. Every timeout is bounded by the
// total deadline anyway, so an attempt longer than total is cut to it (the
// CRD defaults attempt to 20s whatever total is), and a short total with
// the attempt unset means "one attempt may use it all".
func aliasTimeouts(a *snapshot.Alias, t *v1alpha1.AliasTimeouts) error {
	if t == nil {
		return nil
	}
	err := errors.Join(
		setMs(&a.Timeouts.TotalMs, "timeouts.total", t.Total),
		setMs(&a.Timeouts.AttemptMs, "timeouts.attempt", t.Attempt),
		setMs(&a.Timeouts.FirstChunkMs, "timeouts.firstChunk", t.FirstChunk),
		setMs(&a.Timeouts.IdleMs, "timeouts.idle", t.Idle))
	if err != nil {
		return err
	}
	total := cmp.Or(a.Timeouts.TotalMs, snapshot.DefaultTotalMs)
	attempt := cmp.Or(a.Timeouts.AttemptMs, snapshot.DefaultAttemptMs)
	if attempt > total {
		a.Timeouts.AttemptMs = total
	}
	return nil
}

// notReadyReason is why a provider is not in the snapshot.
func notReadyReason(r Result) string {
	if !r.Accepted.Status {
		return r.Accepted.Reason
	}
	return r.ResolvedRefs.Reason
}

// compileKeyIn is compileKey in the compilation: the key's group counts it
// (groups is changed) and says whether it exists, the clock decides its
// rotation and expiry warning, and the result names the object it was
// compiled from. The full compile and the patch (compileincr.go) compile
// each key through it.
func compileKeyIn(clock *keyClock, gk *v1alpha1.GatewayKey, m *keyMemo, aliases map[string]bool, prefixOwner, hashOwner map[string]string, currency *currencyOwner, groups map[string]GroupResult) (snapshot.Key, KeyResult) {
	k, res := compileKey(clock.now, gk, m, aliases, prefixOwner, hashOwner, currency)
	groupResult(&k, &res, groups)
	res.Rotation = clock.rotation(m.key.Previous, m.previousFingerprint)
	res.ExpiringSoon = clock.expiringSoon(m.key.ExpiresAt)
	res.compiledFrom(&gk.ObjectMeta)
	return k, res
}

func compileKey(now time.Time, gk *v1alpha1.GatewayKey, m *keyMemo, aliases map[string]bool, prefixOwner, hashOwner map[string]string, currency *currencyOwner) (snapshot.Key, KeyResult) {
	s := gk.Spec
	k := m.key
	res := KeyResult{Fingerprint: m.fingerprint}

	// Accepted: the key on its own, then its claim on its prefixes and
	// hashes, its previous key's too (only valid keys claim, the older
	// first).
	res.Accepted = keyValid
	if m.invalid != "" {
		res.Accepted = isFalse(v1alpha1.ReasonInvalidSpec, "%s", m.invalid)
	} else if field, prev := claimedBefore(prefixOwner, hashOwner, &k); prev != "" {
		res.Accepted = isFalse(v1alpha1.ReasonKeyConflict, "%s is already used by the older GatewayKey %q", field, prev)
	} else if why := currency.budgetMismatch(k.Budget); why != "" {
		res.Accepted = isFalse(v1alpha1.ReasonInvalidSpec, "%s", why)
	} else {
		claim(prefixOwner, hashOwner, &k)
		if k.Budget != nil {
			currency.claimBudget(fmt.Sprintf("GatewayKey %q", k.ID), k.Budget)
		}
	}

	// ResolvedRefs: models naming aliases that are not served are left out of
	// this key's entry (the snapshot refuses dangling names); requests for
	// them fail as unknown models either way, and they come back when the
	// alias does. The key itself always stays: a key whose aliases are all
	// broken still authenticates, so its callers get 403 model_not_allowed
	// (the model is the problem), never 401 invalid_api_key.
	var dropped []string
	for _, m := range k.Models {
		if m != snapshot.AllModels && !aliases[m] {
			dropped = append(dropped, m)
		}
	}
	servedModels := k.Models // shared with the memo: never written
	if len(dropped) > 0 {
		servedModels = slices.DeleteFunc(slices.Clone(k.Models), func(m string) bool { return slices.Contains(dropped, m) })
	}
	switch {
	case len(dropped) == 0:
		res.ResolvedRefs = keyResolved
	case len(servedModels) > 0:
		res.ResolvedRefs = isFalse(v1alpha1.ReasonAliasNotFound, "no served alias for %s; the key works for its other models", quoteList(dropped))
	default:
		res.ResolvedRefs = isFalse(v1alpha1.ReasonAliasNotFound, "none of the key's models is served: %s; the key authenticates, and its requests get 403 model_not_allowed until one is", quoteList(dropped))
	}
	k.Models = servedModels
	res.InSnapshot = res.Accepted.Status
	if !res.InSnapshot {
		return k, res
	}
	// Disabled and expired keys stay in the snapshot: the gateway can tell a
	// refused key from an unknown one in its logs and usage records.
	switch {
	case s.Disabled:
		res.Refused = &Condition{Reason: v1alpha1.ReasonDisabled, Message: "the key is disabled: the gateways answer 401 key_disabled"}
	case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
		res.Refused = &Condition{Reason: v1alpha1.ReasonExpired, Message: fmt.Sprintf("the key expired at %s: the gateways answer 401 key_expired", k.ExpiresAt.Format(time.RFC3339))}
	}
	return k, res
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

// secretKeys lists a Secret's data keys with a non-empty value, sorted: all
// Compile needs of a Secret (an empty value is no credential). In the
// controller's cache every value is replaced by a marker (stripSecret), so
// this sees presence, never content; a change of it recompiles.
func secretKeys(s *corev1.Secret) []string {
	keys := make([]string, 0, len(s.Data)+len(s.StringData))
	for k, v := range s.Data {
		if len(v) > 0 {
			keys = append(keys, k)
		}
	}
	for k, v := range s.StringData {
		if v != "" {
			keys = appendUnique(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
