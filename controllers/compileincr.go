package controllers

import (
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// Compiling a one-key change at 50,000 GatewayKeys compiled every key again
// (claims on prefix and hash, statuses, the snapshot's checks across keys,
// its version): about 0.25 s of CPU of the second from apply to served.
// When nothing but GatewayKeys changed since the memo's last compilation,
// patch compiles only the keys that changed and patches that compilation;
// whatever it cannot show to give exactly what Compile gives is compiled in
// full instead.
//
// One key's outcome depends on another's only through claims: a valid key
// claims its prefix and hash unless an older valid key claimed one of them
// first (and a budget may claim the namespace's currency: see apply). A key
// whose prefix and hash no other valid key has, before the change or after
// it, neither loses a claim nor takes one away, whatever its age: it
// compiles on its own, and every other key compiles as before. patch takes
// only such changes; a change that shares a prefix or hash with another
// valid key (a conflict before, after, or in between) is compiled in full.
// The winners' tokens are the last round's claims, the losers' are kept in
// lost.
//
// The last compilation's snapshot and statuses are the very ones Compile
// returned, and patch changes them in place: copying 50,000 keys and key
// statuses for a one-key change cost more than compiling it (a map of
// 50,000 statuses alone took 20 ms to clone). So what a Compile with a memo
// returns holds until the next Compile with that memo. The reconciler, the
// memo's one user, compiles one round at a time: it publishes a round's
// snapshot within the round, and the statuses it keeps for later rounds
// (Reconciler.compiled) are cleared as soon as it compiles again.

// lastRound is the last compilation, as patch needs it.
type lastRound struct {
	inputs inputsSeen
	now    time.Time
	slots  keySlots
	claims
	// lost counts, per token, the valid keys that claimed nothing (an
	// older key had their prefix or hash, or their budget is in another
	// currency).
	lost    map[token]int
	snap    snapshot.Snapshot
	st      Statuses
	patcher *snapshot.KeyPatcher
}

// claims is what the keys are compiled against: the served aliases, the
// currency before any key's budget, and who claimed each prefix and hash.
type claims struct {
	aliasServed            map[string]bool
	currency               currencyOwner
	prefixOwner, hashOwner map[string]string
}

type token struct {
	hash  bool
	value string
}

// seal seals the full compilation, keeping what patching it needs.
func (m *CompileMemo) seal(snap *snapshot.Snapshot) (*snapshot.KeyPatcher, error) {
	if m == nil {
		return nil, snapshot.SealCheckedKeysWith(snap, nil)
	}
	return snapshot.SealCheckedKeysPatchable(snap, m.piece)
}

// remember keeps the full compilation just made for the next patch when
// every object can be told from its next version (a UID and a generation,
// one object per name) and the snapshot is valid.
func (m *CompileMemo) remember(in Inputs, snap snapshot.Snapshot, st Statuses, c claims, p *snapshot.KeyPatcher) {
	if m == nil {
		return
	}
	m.last = nil
	if st.Invalid != nil || p == nil {
		return
	}
	seen, ok := seeInputs(&in)
	if !ok {
		return
	}
	slots, valid, ok := m.slotKeys(in.Namespace, in.OwnerLabels, in.Keys)
	if !ok {
		return
	}
	lost := map[token]int{}
	if valid > len(snap.Keys) { // else every valid key claimed, none lost
		for name, res := range st.Keys {
			if e := m.keys[name]; !res.InSnapshot && e != nil && e.invalid == "" {
				countTokens(lost, &e.key, 1)
			}
		}
	}
	m.last = &lastRound{inputs: seen, now: in.Now, slots: slots, claims: c, lost: lost, snap: snap, st: st, patcher: p}
}

// keySlots give each key of the last round a slot in dense arrays: a walk
// over the keys marks there the ones it finds, and the keys deleted are
// found by sweeping them, not by visiting 50,000 memo entries.
type keySlots struct {
	seen  []uint64 // by slot, the stamp of the walk that last found its key
	names []string // by slot; "" when free
	free  []int32
}

// slotKeys gives each key a slot, when every key has the memo entry of its
// UID, generation and owner labels, under a name no other key has, and the
// memo has no other entry; valid counts the keys that passed ValidateKey.
func (m *CompileMemo) slotKeys(home string, ownerLabels []string, keys []v1alpha1.GatewayKey) (_ keySlots, valid int, ok bool) {
	stamp := m.nextStamp()
	s := keySlots{seen: make([]uint64, len(keys)), names: make([]string, len(keys))}
	for i := range keys {
		gk := &keys[i]
		name := objectID(home, gk)
		e := m.keys[name]
		if e == nil || !e.describes(gk, ownerLabels) || gk.UID == "" || gk.Generation == 0 {
			return keySlots{}, 0, false
		}
		if int(e.slot) < i && s.seen[e.slot] == stamp && s.names[e.slot] == name {
			return keySlots{}, 0, false // two keys of one name
		}
		e.slot, s.seen[i], s.names[i] = int32(i), stamp, name
		if e.invalid == "" {
			valid++
		}
	}
	return s, valid, len(keys) == len(m.keys)
}

func (s *keySlots) take(name string) int32 {
	if n := len(s.free); n > 0 {
		slot := s.free[n-1]
		s.free = s.free[:n-1]
		s.names[slot] = name
		return slot
	}
	s.seen, s.names = append(s.seen, 0), append(s.names, name)
	return int32(len(s.names) - 1)
}

func (s *keySlots) release(slot int32) {
	s.names[slot] = ""
	s.free = append(s.free, slot)
}

func (m *CompileMemo) nextStamp() uint64 {
	m.stamp++
	return m.stamp
}

func countTokens(lost map[token]int, k *snapshot.Key, n int) {
	ts := tokensOf(k)
	for _, t := range ts.t[:ts.n] {
		if lost[t] += n; lost[t] <= 0 {
			delete(lost, t)
		}
	}
}

func (r *lastRound) holdsLost(k *snapshot.Key) bool {
	ts := tokensOf(k)
	for _, t := range ts.t[:ts.n] {
		if r.lost[t] > 0 {
			return true
		}
	}
	return false
}

// patch is Compile(in) made by patching the last compilation; ok=false:
// compile in full (which remembers afresh).
func (m *CompileMemo) patch(in Inputs) (_ snapshot.Snapshot, _ Statuses, ok bool) {
	if m == nil || m.last == nil {
		return snapshot.Snapshot{}, Statuses{}, false
	}
	last := m.last
	// Forgotten whatever happens: a patch that gives up halfway has
	// changed it already.
	m.last = nil
	if !last.keysAlone(&in, m.nextStamp()) {
		return snapshot.Snapshot{}, Statuses{}, false
	}
	changes, next, ok := m.keyChanges(&in, &last.slots)
	if !ok || !last.apply(m, &in, changes) {
		return snapshot.Snapshot{}, Statuses{}, false
	}
	last.st.NextExpiry, last.now = next, in.Now
	m.last = last
	m.patches++
	return last.snap, last.st, true
}

// keysAlone: everything Compile reads but the keys is as last time, and no
// key's status has changed with the time since (NextExpiry: each key's
// Refused, rotation and expiry warning stand).
func (r *lastRound) keysAlone(in *Inputs, stamp uint64) bool {
	// Wall clocks: expiry is decided on them, and a monotonic reading
	// could say "later" when the wall clock went back.
	now, last := in.Now.Round(0), r.now.Round(0)
	if now.Before(last) || (r.st.NextExpiry != nil && !now.Before(*r.st.NextExpiry)) {
		return false
	}
	return r.inputs.same(in, stamp)
}

// keyChange is a key created, changed (another UID, generation or owner
// labels) or deleted since the last compilation.
type keyChange struct {
	name string
	gk   *v1alpha1.GatewayKey // nil: deleted
	old  *keyMemo             // nil: created
}

// keyChanges finds the keys that changed, and the next expiry as Compile
// computes it.
func (m *CompileMemo) keyChanges(in *Inputs, slots *keySlots) (changes []keyChange, next *time.Time, ok bool) {
	stamp := m.nextStamp()
	matched := 0
	created := map[string]bool{}
	for i := range in.Keys {
		gk := &in.Keys[i]
		if gk.UID == "" || gk.Generation == 0 {
			return nil, nil, false
		}
		name := objectID(in.Namespace, gk)
		switch e := m.keys[name]; {
		case e == nil:
			if created[name] {
				return nil, nil, false
			}
			created[name] = true
			changes = append(changes, keyChange{name: name, gk: gk})
		case slots.seen[e.slot] == stamp:
			return nil, nil, false // two keys of one name
		default:
			slots.seen[e.slot] = stamp
			matched++
			if !e.describes(gk, in.OwnerLabels) {
				changes = append(changes, keyChange{name: name, gk: gk, old: e})
			}
		}
		next = sooner(next, gk, in.Now, in.ExpiryWarning)
	}
	if matched < len(m.keys) {
		for slot, name := range slots.names {
			if name == "" || slots.seen[slot] == stamp {
				continue
			}
			old := m.keys[name]
			if old == nil {
				return nil, nil, false // cannot be: every key of the last round has its entry
			}
			changes = append(changes, keyChange{name: name, old: old})
		}
	}
	return changes, next, true
}

// apply compiles the changed keys into the last compilation; false: a
// change touches another key's outcome (or something is amiss), compile in
// full.
func (r *lastRound) apply(m *CompileMemo, in *Inputs, changes []keyChange) bool {
	// Until something before the keys sets the currency, the oldest
	// accepted budget of a key does: a key with a budget may then decide
	// every other budget's fate.
	if r.currency.currency == "" && slices.ContainsFunc(changes, hasBudget) {
		return false
	}
	var remove []string
	for _, c := range changes {
		if c.old != nil && !r.takeOut(m, c, &remove) {
			return false
		}
	}
	var put []snapshot.Key
	clock := newKeyClock(in.Now, in.ExpiryWarning)
	for _, c := range changes {
		if c.gk == nil {
			continue
		}
		k, ok := r.putIn(m, in, clock, c)
		if !ok {
			return false
		}
		if k != nil {
			put = append(put, *k)
		}
	}
	return r.patcher.PatchKeys(&r.snap, remove, put, m.piece) == nil
}

func hasBudget(c keyChange) bool {
	return (c.old != nil && c.old.key.Budget != nil) || (c.gk != nil && c.gk.Spec.Budget != nil)
}

// takeOut undoes what the key's last version did: its claims, its place
// in the snapshot and in its group's count, its status when deleted.
func (r *lastRound) takeOut(m *CompileMemo, c keyChange, remove *[]string) bool {
	res, ok := r.st.Keys[c.name]
	if !ok {
		return false
	}
	k := &c.old.key
	switch {
	case c.old.invalid != "":
		// claimed nothing, and no claim was decided by it
	case !res.InSnapshot:
		countTokens(r.lost, k, -1)
	case r.holdsLost(k), !ownsAll(r.prefixOwner, r.hashOwner, k, c.name):
		return false // some key lost to this one
	default:
		unclaim(r.prefixOwner, r.hashOwner, k)
	}
	if res.InSnapshot {
		*remove = append(*remove, k.ID)
		if gr, ok := r.st.Groups[k.Group]; ok {
			gr.Keys--
			r.st.Groups[k.Group] = gr
		}
	}
	if c.gk == nil {
		delete(r.st.Keys, c.name)
		delete(m.keys, c.name)
		r.slots.release(c.old.slot)
	}
	return true
}

// putIn compiles the key's new version as Compile does; k is its snapshot
// entry, nil when it is not served.
func (r *lastRound) putIn(m *CompileMemo, in *Inputs, clock *keyClock, c keyChange) (k *snapshot.Key, ok bool) {
	e := m.key(in.Namespace, in.OwnerLabels, c.gk)
	if c.old != nil {
		e.slot = c.old.slot
	} else {
		e.slot = r.slots.take(c.name)
	}
	valid := e.invalid == ""
	if valid && r.holdsLost(&e.key) {
		return nil, false
	}
	currency := r.currency
	// Changes r.st.Groups before it may give up: a patch that gives up
	// is forgotten (patch), and the full compile starts afresh.
	entry, res := compileKeyIn(clock, c.gk, e, r.aliasServed, r.prefixOwner, r.hashOwner, &currency, r.st.Groups)
	if currency != r.currency {
		return nil, false
	}
	if valid && !res.InSnapshot {
		if res.Accepted.Reason != v1alpha1.ReasonInvalidSpec {
			return nil, false // a conflict: another key has its prefix or hash
		}
		countTokens(r.lost, &e.key, 1) // a budget in another currency
	}
	if res.InSnapshot {
		res.Digest = m.digest(&entry)
		k = &entry
	}
	r.st.Keys[c.name] = res
	return k, true
}

// inputsSeen is what Compile read besides the keys. Providers, aliases
// and groups are known by UID and generation: their specs change only with
// the generation (the watches rely on it too), and a name or creation time
// never changes for one UID; a group's owner labels, which change without
// a new generation, are kept too. Secrets and Services are small: copied.
type inputsSeen struct {
	namespace     string
	limits        snapshot.Limits
	expiryWarning time.Duration
	ownerLabels   []string
	objects       map[objectRef]*objectSeen
	secrets       map[string][]string
	services      map[string][]int32
}

type objectSeen struct {
	uid        types.UID
	generation int64
	owners     string // a group's ownersKey
	stamp      uint64 // the round that last saw it
}

// ownersSeen is what of an object's labels Compile reads: a group's owner
// labels, nothing of the other kinds.
func ownersSeen(in *Inputs, k objectRef, meta *metav1.ObjectMeta) string {
	if k.Kind != "BudgetGroup" || len(in.OwnerLabels) == 0 {
		return ""
	}
	return ownersKey(meta.Labels, in.OwnerLabels)
}

func seeInputs(in *Inputs) (inputsSeen, bool) {
	s := inputsSeen{namespace: in.Namespace, limits: in.Limits, expiryWarning: in.ExpiryWarning, ownerLabels: slices.Clone(in.OwnerLabels),
		objects: map[objectRef]*objectSeen{}, secrets: cloneLists(in.Secrets), services: cloneLists(in.Services)}
	ok := eachObject(in, func(k objectRef, meta *metav1.ObjectMeta) bool {
		if meta.UID == "" || meta.Generation == 0 || s.objects[k] != nil {
			return false
		}
		s.objects[k] = &objectSeen{uid: meta.UID, generation: meta.Generation, owners: ownersSeen(in, k, meta)}
		return true
	})
	return s, ok
}

// same: in's providers, aliases, groups, Secrets, Services, limits,
// options and namespace are those seen.
func (s *inputsSeen) same(in *Inputs, stamp uint64) bool {
	if in.Namespace != s.namespace || in.Limits != s.limits || in.ExpiryWarning != s.expiryWarning || !slices.Equal(in.OwnerLabels, s.ownerLabels) ||
		!maps.EqualFunc(in.Secrets, s.secrets, slices.Equal) || !maps.EqualFunc(in.Services, s.services, slices.Equal) {
		return false
	}
	n := 0
	return eachObject(in, func(k objectRef, meta *metav1.ObjectMeta) bool {
		o := s.objects[k]
		if o == nil || o.uid != meta.UID || o.generation != meta.Generation || o.stamp == stamp || o.owners != ownersSeen(in, k, meta) {
			return false
		}
		o.stamp = stamp
		n++
		return true
	}) && n == len(s.objects)
}

// eachObject calls f with every provider, alias and group until it says
// false; it returns whether none did.
func eachObject(in *Inputs, f func(objectRef, *metav1.ObjectMeta) bool) bool {
	for i := range in.Providers {
		if m := &in.Providers[i].ObjectMeta; !f(objectRef{"ProviderEndpoint", objectID(in.Namespace, m)}, m) {
			return false
		}
	}
	for i := range in.Aliases {
		if m := &in.Aliases[i].ObjectMeta; !f(objectRef{"ModelAlias", objectID(in.Namespace, m)}, m) {
			return false
		}
	}
	for i := range in.Groups {
		if m := &in.Groups[i].ObjectMeta; !f(objectRef{"BudgetGroup", objectID(in.Namespace, m)}, m) {
			return false
		}
	}
	return true
}

func cloneLists[V any](m map[string][]V) map[string][]V {
	c := make(map[string][]V, len(m))
	for k, v := range m {
		c[k] = slices.Clone(v)
	}
	return c
}
