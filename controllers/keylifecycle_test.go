package controllers

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

func TestExpiringSoon(t *testing.T) {
	now := goldenNow
	week := 7 * 24 * time.Hour
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	for _, tc := range []struct {
		name      string
		window    time.Duration
		expiresAt *time.Time
		want      string // status/reason, "" for no condition
		message   string // a part of the message
	}{
		{"warning off", 0, at(time.Hour), "", ""},
		{"never expires", week, nil, "false/NotExpiringSoon", "does not expire"},
		{"later than the window", week, at(week + time.Second), "false/NotExpiringSoon", "more than 168h0m0s from now"},
		{"exactly the window away", week, at(week), "true/ExpiresSoon", "2026-06-08T00:00:00Z"},
		{"within the window", week, at(time.Hour), "true/ExpiresSoon", "2026-06-01T01:00:00Z, within 168h0m0s"},
		{"a second left", week, at(time.Second), "true/ExpiresSoon", "key_expired"},
		{"expiring now", week, at(0), "false/NotExpiringSoon", "has expired"},
		{"expired", week, at(-time.Hour), "false/NotExpiringSoon", "has expired"},
		{"a short window", time.Minute, at(2 * time.Minute), "false/NotExpiringSoon", "more than 1m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newKeyClock(now, tc.window).expiringSoon(tc.expiresAt)
			got := ""
			if c != nil {
				got = fmt.Sprintf("%v/%s", c.Status, c.Reason)
			}
			if got != tc.want {
				t.Fatalf("condition %q, want %q", got, tc.want)
			}
			if c != nil && !strings.Contains(c.Message, tc.message) {
				t.Errorf("message %q lacks %q", c.Message, tc.message)
			}
		})
	}
}

func TestRotationStatus(t *testing.T) {
	until := goldenNow.Add(time.Hour)
	prev := &snapshot.PreviousKey{Prefix: "lgw_old0000000", Hash: keyformat.Hash("old"), Until: until}
	for _, tc := range []struct {
		name string
		now  time.Time
		prev *snapshot.PreviousKey
		want *v1alpha1.KeyRotationStatus
	}{
		{"no previous key", goldenNow, nil, nil},
		{"in grace", goldenNow, prev, &v1alpha1.KeyRotationStatus{PreviousFingerprint: "fp", GraceEndsAt: metav1.NewTime(until), InGrace: true}},
		{"a moment before the end", until.Add(-time.Nanosecond), prev, &v1alpha1.KeyRotationStatus{PreviousFingerprint: "fp", GraceEndsAt: metav1.NewTime(until), InGrace: true}},
		{"at the end", until, prev, &v1alpha1.KeyRotationStatus{PreviousFingerprint: "fp", GraceEndsAt: metav1.NewTime(until)}},
		{"after it", until.Add(time.Hour), prev, &v1alpha1.KeyRotationStatus{PreviousFingerprint: "fp", GraceEndsAt: metav1.NewTime(until)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := newKeyClock(tc.now, 0).rotation(tc.prev, "fp")
			if (got == nil) != (tc.want == nil) || (got != nil && (*got != *tc.want)) {
				t.Fatalf("rotation %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestSoonerKeyChanges: the reconciler comes back at the first moment a
// key's status changes with the time alone.
func TestSoonerKeyChanges(t *testing.T) {
	now := goldenNow
	day := 24 * time.Hour
	mt := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
	key := func(expires *metav1.Time, until *metav1.Time) *v1alpha1.GatewayKey {
		gk := &v1alpha1.GatewayKey{Spec: v1alpha1.GatewayKeySpec{ExpiresAt: expires}}
		if until != nil {
			gk.Spec.Previous = &v1alpha1.PreviousKey{KeyHash: keyformat.Hash("old"), KeyPrefix: "lgw_old0000000", AcceptedUntil: *until}
		}
		return gk
	}
	for _, tc := range []struct {
		name   string
		gk     *v1alpha1.GatewayKey
		window time.Duration
		next   *time.Time
		want   time.Duration // from now; -1: nil
	}{
		{"nothing ahead", key(nil, nil), 7 * day, nil, -1},
		{"expiry, warning off", key(mt(10*day), nil), 0, nil, 10 * day},
		{"the warning starts first", key(mt(10*day), nil), 7 * day, nil, 3 * day},
		{"within the warning: the expiry", key(mt(2*day), nil), 7 * day, nil, 2 * day},
		{"expired: nothing", key(mt(-day), nil), 7 * day, nil, -1},
		{"the grace ends first", key(mt(10*day), mt(time.Hour)), 7 * day, nil, time.Hour},
		{"grace over: the warning", key(mt(10*day), mt(-time.Hour)), 7 * day, nil, 3 * day},
		{"an earlier next stays", key(mt(10*day), nil), 7 * day, new(now.Add(time.Minute)), time.Minute},
		{"a later next gives way", key(nil, mt(time.Hour)), 7 * day, new(now.Add(day)), time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sooner(tc.next, tc.gk, now, tc.window)
			switch {
			case tc.want < 0 && got != nil:
				t.Fatalf("next %v, want none", got)
			case tc.want >= 0 && (got == nil || !got.Equal(now.Add(tc.want))):
				t.Fatalf("next %v, want now+%v", got, tc.want)
			}
		})
	}
}

func TestKeyTransitions(t *testing.T) {
	ends := metav1.NewTime(goldenNow.Add(time.Hour))
	rotation := func(fp string, inGrace bool) *v1alpha1.KeyRotationStatus {
		return &v1alpha1.KeyRotationStatus{PreviousFingerprint: fp, GraceEndsAt: ends, InGrace: inGrace}
	}
	soon := &Condition{Status: true, Reason: v1alpha1.ReasonExpiresSoon, Message: "the key expires at X"}
	later := &Condition{Reason: v1alpha1.ReasonNotExpiringSoon, Message: "later"}
	for _, tc := range []struct {
		name string
		old  keyState
		res  KeyResult
		want []string
	}{
		{"a plain key", keyState{}, KeyResult{}, nil},
		{"rotated", keyState{}, KeyResult{Rotation: rotation("aaa", true)}, []string{"Normal/KeyRotated"}},
		{"still in grace", keyState{rotationFP: "aaa", inGrace: true}, KeyResult{Rotation: rotation("aaa", true)}, nil},
		{"grace ended", keyState{rotationFP: "aaa", inGrace: true}, KeyResult{Rotation: rotation("aaa", false)}, []string{"Normal/RotationGraceEnded"}},
		{"grace ended before", keyState{rotationFP: "aaa"}, KeyResult{Rotation: rotation("aaa", false)}, nil},
		{"rotated again", keyState{rotationFP: "aaa"}, KeyResult{Rotation: rotation("bbb", true)}, []string{"Normal/KeyRotated"}},
		{"a rotation first seen after its grace", keyState{}, KeyResult{Rotation: rotation("aaa", false)}, []string{"Normal/KeyRotated", "Normal/RotationGraceEnded"}},
		{"previous removed", keyState{rotationFP: "aaa", inGrace: true}, KeyResult{}, nil},
		{"an invalid previous hash has no fingerprint", keyState{}, KeyResult{Rotation: rotation("", true)}, nil},
		{"expiring soon", keyState{}, KeyResult{ExpiringSoon: soon}, []string{"Warning/KeyExpiringSoon"}},
		{"still expiring soon", keyState{expiring: true}, KeyResult{ExpiringSoon: soon}, nil},
		{"not soon", keyState{}, KeyResult{ExpiringSoon: later}, nil},
		{"extended", keyState{expiring: true}, KeyResult{ExpiringSoon: later}, nil},
		{"all at once", keyState{}, KeyResult{Rotation: rotation("aaa", true), ExpiringSoon: soon}, []string{"Normal/KeyRotated", "Warning/KeyExpiringSoon"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.res.Fingerprint = "newfp"
			var got []string
			for _, e := range keyTransitions(tc.old, &tc.res) {
				got = append(got, e.Type+"/"+e.Reason)
				if len(e.Note) == 0 || len(e.Note) > maxNote {
					t.Errorf("note %q", e.Note)
				}
				if e.Reason == v1alpha1.EventKeyRotated && (!strings.Contains(e.Note, tc.res.Rotation.PreviousFingerprint) || !strings.Contains(e.Note, "newfp") || !strings.Contains(e.Note, ends.UTC().Format(time.RFC3339))) {
					t.Errorf("KeyRotated note %q lacks a fingerprint or the grace end", e.Note)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("events %v, want %v", got, tc.want)
			}
			// The next round, from what this one decided: nothing new.
			if again := keyTransitions(keyStateOf(&tc.res), &tc.res); len(again) > 0 {
				t.Errorf("the same decision again records %+v", again)
			}
		})
	}
}

// TestKeyStateFromStatus: after a restart the status says what was decided,
// so no Event is recorded twice.
func TestKeyStateFromStatus(t *testing.T) {
	res := KeyResult{Rotation: &v1alpha1.KeyRotationStatus{PreviousFingerprint: "aaa", GraceEndsAt: metav1.NewTime(goldenNow), InGrace: true},
		ExpiringSoon: &Condition{Status: true, Reason: v1alpha1.ReasonExpiresSoon, Message: "m"}}
	st := v1alpha1.GatewayKeyStatus{Rotation: res.Rotation.DeepCopy()}
	st.Conditions = []metav1.Condition{fromCompile(v1alpha1.ConditionExpiringSoon, *res.ExpiringSoon)}
	if got, want := keyStateFromStatus(&st), keyStateOf(&res); got != want {
		t.Fatalf("state from status %+v, want %+v", got, want)
	}
}

func TestOwnerLabelKeys(t *testing.T) {
	many := make([]string, snapshot.MaxOwners+1)
	for i := range many {
		many[i] = fmt.Sprintf("l%02d", i)
	}
	for _, tc := range []struct {
		name string
		in   []string
		want []string
		err  string
	}{
		{"none", nil, nil, ""},
		{"sorted, trimmed, once", []string{"team", " example.com/cost-center", "team", ""}, []string{"example.com/cost-center", "team"}, ""},
		{"a space", []string{"cost center"}, nil, `"cost center": not a Kubernetes label key`},
		{"an empty prefix", []string{"/team"}, nil, `"/team"`},
		{"too long", []string{strings.Repeat("a", 64)}, nil, "not a Kubernetes label key"},
		{"upper-case prefix", []string{"Example.com/team"}, nil, `"Example.com/team"`},
		{"too many", many, nil, fmt.Sprintf("%d given, at most %d", len(many), snapshot.MaxOwners)},
		{"exactly enough", many[:snapshot.MaxOwners], many[:snapshot.MaxOwners], ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := OwnerLabelKeys(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("%v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestOwnersOf(t *testing.T) {
	names := []string{"example.com/cost-center", "team"}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   map[string]string
	}{
		{"no labels", nil, nil},
		{"none of them", map[string]string{"app": "x"}, nil},
		{"only the named", map[string]string{"team": "a", "app": "x", "example.com/cost-center": "cc-1"}, map[string]string{"team": "a", "example.com/cost-center": "cc-1"}},
		{"an empty value is a value", map[string]string{"team": ""}, map[string]string{"team": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ownersOf(tc.labels, names)
			if !maps.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Fatalf("ownersOf %v, want %v", got, tc.want)
			}
			if !sameOwners(tc.want, tc.labels, names) {
				t.Error("sameOwners(ownersOf(labels), labels) is false")
			}
			changed := maps.Clone(tc.labels)
			if changed == nil {
				changed = map[string]string{}
			}
			changed["team"] += "-2"
			if sameOwners(tc.want, changed, names) {
				t.Error("sameOwners misses a changed owner label")
			}
			if tc.want != nil {
				fewer := maps.Clone(tc.labels)
				delete(fewer, "team")
				if sameOwners(tc.want, fewer, names) {
					t.Error("sameOwners misses a removed owner label")
				}
			}
		})
	}
}

func TestOwnerLabelsChangedPredicate(t *testing.T) {
	p := ownerLabelsChanged([]string{"team"})
	obj := func(labels map[string]string) *v1alpha1.GatewayKey {
		return &v1alpha1.GatewayKey{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	}
	for _, tc := range []struct {
		name     string
		old, new map[string]string
		want     bool
	}{
		{"no labels", nil, nil, false},
		{"another label", map[string]string{"app": "a"}, map[string]string{"app": "b"}, false},
		{"added", nil, map[string]string{"team": "a"}, true},
		{"changed", map[string]string{"team": "a"}, map[string]string{"team": "b"}, true},
		{"removed", map[string]string{"team": "a"}, map[string]string{}, true},
	} {
		if got := p.Update(event.UpdateEvent{ObjectOld: obj(tc.old), ObjectNew: obj(tc.new)}); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// lifecycleInputs is a namespace with a rotated key, a key with owner
// labels in a group with owner labels, and keys expiring at various times.
func lifecycleInputs() Inputs {
	n := 0
	meta := func(name string, labels map[string]string) metav1.ObjectMeta {
		n++
		return metav1.ObjectMeta{Name: name, Namespace: "llmgw-system", UID: types.UID(fmt.Sprintf("uid-%d", n)), Generation: 1,
			CreationTimestamp: metav1.NewTime(goldenNow.Add(-time.Duration(n) * time.Hour)), Labels: labels}
	}
	key := func(name string, labels map[string]string) v1alpha1.GatewayKey {
		return v1alpha1.GatewayKey{ObjectMeta: meta(name, labels), Spec: v1alpha1.GatewayKeySpec{
			KeyPrefix: "lgw_" + (name + "0000000000")[:10], KeyHash: keyformat.Hash(name), Models: []string{"*"}}}
	}
	expires := func(gk v1alpha1.GatewayKey, d time.Duration) v1alpha1.GatewayKey {
		t := metav1.NewTime(goldenNow.Add(d))
		gk.Spec.ExpiresAt = &t
		return gk
	}
	rotated := key("rotated", nil)
	// Given in another zone: the snapshot holds UTC.
	until := metav1.NewTime(goldenNow.Add(48 * time.Hour).In(time.FixedZone("CEST", 2*3600)))
	rotated.Spec.Previous = &v1alpha1.PreviousKey{KeyHash: keyformat.Hash("rotated-old"), KeyPrefix: "lgw_rotatedold", AcceptedUntil: until}
	owned := key("owned", map[string]string{"team": "a", "example.com/cost-center": "cc-1", "app": "not-an-owner-label"})
	owned.Spec.Group = "platform"
	return Inputs{
		Namespace: "llmgw-system", Now: goldenNow, Secrets: map[string][]string{}, Services: map[string][]int32{},
		ExpiryWarning: 7 * 24 * time.Hour, OwnerLabels: []string{"example.com/cost-center", "team"},
		Groups: []v1alpha1.BudgetGroup{
			{ObjectMeta: meta("platform", map[string]string{"team": "platform", "tier": "gold"}), Spec: v1alpha1.BudgetGroupSpec{TokensPerMinute: 1000}},
			{ObjectMeta: meta("unlabelled", nil), Spec: v1alpha1.BudgetGroupSpec{TokensPerMinute: 1000}},
		},
		Keys: []v1alpha1.GatewayKey{rotated, owned, key("plain", map[string]string{"app": "x"}),
			expires(key("soon", nil), 6*24*time.Hour), expires(key("later", nil), 8*24*time.Hour), expires(key("expired", nil), -time.Hour)},
	}
}

func TestCompileRotationOwnersAndExpiry(t *testing.T) {
	in := lifecycleInputs()
	snap, st := Compile(in)
	if st.Invalid != nil {
		t.Fatal(st.Invalid)
	}
	for id, res := range st.Keys {
		if !res.InSnapshot {
			t.Fatalf("key %s is not served: %+v", id, res.Accepted)
		}
	}
	keys := map[string]snapshot.Key{}
	for _, k := range snap.Keys {
		keys[k.ID] = k
	}
	want := &snapshot.PreviousKey{Prefix: "lgw_rotatedold", Hash: keyformat.Hash("rotated-old"), Until: goldenNow.Add(48 * time.Hour)}
	if p := keys["rotated"].Previous; p == nil || *p != *want || p.Until.Location() != time.UTC {
		t.Errorf("rotated key's previous %+v, want %+v in UTC", p, want)
	}
	if r := st.Keys["rotated"].Rotation; r == nil || !r.InGrace || r.PreviousFingerprint != keyformat.Fingerprint(keyformat.Hash("rotated-old")) || !r.GraceEndsAt.Equal(&metav1.Time{Time: want.Until}) {
		t.Errorf("rotated key's status.rotation %+v", r)
	}
	if keys["plain"].Previous != nil || st.Keys["plain"].Rotation != nil {
		t.Error("a key never rotated has a previous key")
	}

	if got := keys["owned"].Owners; !maps.Equal(got, map[string]string{"team": "a", "example.com/cost-center": "cc-1"}) {
		t.Errorf("owned key's owners %v: want the named labels only", got)
	}
	for _, id := range []string{"plain", "rotated"} {
		if o := keys[id].Owners; o != nil {
			t.Errorf("key %s has owners %v without owner labels", id, o)
		}
	}
	groups := map[string]snapshot.Group{}
	for _, g := range snap.Groups {
		groups[g.Name] = g
	}
	if got := groups["platform"].Owners; !maps.Equal(got, map[string]string{"team": "platform"}) {
		t.Errorf("group owners %v, want team only", got)
	}
	if o := groups["unlabelled"].Owners; o != nil {
		t.Errorf("unlabelled group's owners %v", o)
	}

	for id, want := range map[string]string{"soon": "true/ExpiresSoon", "later": "false/NotExpiringSoon", "expired": "false/NotExpiringSoon", "plain": "false/NotExpiringSoon"} {
		c := st.Keys[id].ExpiringSoon
		if c == nil || fmt.Sprintf("%v/%s", c.Status, c.Reason) != want {
			t.Errorf("key %s ExpiringSoon %+v, want %s", id, c, want)
		}
	}
	// The next change by the time alone: "later"'s warning starts in a day.
	if st.NextExpiry == nil || !st.NextExpiry.Equal(goldenNow.Add(24*time.Hour)) {
		t.Errorf("next expiry %v, want in a day (the later key's warning)", st.NextExpiry)
	}

	in.ExpiryWarning = 0
	_, st = Compile(in)
	for id, res := range st.Keys {
		if res.ExpiringSoon != nil {
			t.Errorf("key %s has ExpiringSoon with the warning off", id)
		}
	}
	in.OwnerLabels = nil
	snap, _ = Compile(in)
	for _, k := range snap.Keys {
		if k.Owners != nil {
			t.Errorf("key %s has owners without --owner-labels", k.ID)
		}
	}
}

// TestCompileOwnerLabelChanges: a label change (no new generation)
// recompiles the key or group it is on when the label is an owner label —
// with the memo, patched or in full, exactly as afresh — and changes
// nothing when it is not.
func TestCompileOwnerLabelChanges(t *testing.T) {
	in := lifecycleInputs()
	memo := NewCompileMemo()
	sameCompile(t, "as created", in, memo)
	version := func() string { fresh := in; fresh.Memo = nil; s, _ := Compile(fresh); return s.Version }
	v0 := version()

	relabel := func(m *metav1.ObjectMeta, k, v string) {
		m.Labels = maps.Clone(m.Labels)
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels[k] = v
	}
	in.Keys = slices.Clone(in.Keys)
	relabel(&in.Keys[2].ObjectMeta, "app", "y") // "plain": not an owner label
	sameCompile(t, "another label", in, memo)
	if v := version(); v != v0 {
		t.Fatalf("a label that is no owner label changed the version")
	}

	relabel(&in.Keys[1].ObjectMeta, "team", "b") // "owned"
	if !sameCompile(t, "a key's owner label", in, memo) {
		t.Error("a key's owner label change was not patched")
	}
	v1 := version()
	if v1 == v0 {
		t.Fatal("a key's owner label change left the version")
	}
	withMemo := in
	withMemo.Memo = memo
	if s, _ := Compile(withMemo); s.Version != v1 || !maps.Equal(keyByID(s, "owned").Owners, map[string]string{"team": "b", "example.com/cost-center": "cc-1"}) {
		t.Errorf("with the memo: version %s owners %v", s.Version, keyByID(s, "owned").Owners)
	}

	in.Groups = slices.Clone(in.Groups)
	relabel(&in.Groups[0].ObjectMeta, "team", "platform-2")
	sameCompile(t, "a group's owner label", in, memo)
	if v := version(); v == v1 {
		t.Fatal("a group's owner label change left the version")
	}
}

func keyByID(s snapshot.Snapshot, id string) snapshot.Key {
	for _, k := range s.Keys {
		if k.ID == id {
			return k
		}
	}
	return snapshot.Key{}
}

// TestKeyFlagsCheckedAtStartup: a bad --owner-labels or a negative
// --key-expiry-warning stops the controller before it connects anywhere,
// saying which value is wrong.
func TestKeyFlagsCheckedAtStartup(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--owner-labels=team,cost center"}, []string{"--owner-labels", `"cost center"`, "not a Kubernetes label key"}},
		{[]string{"--owner-labels=team", "--owner-labels=-team"}, []string{"--owner-labels", `"-team"`}},
		{[]string{"--key-expiry-warning=-1h"}, []string{"--key-expiry-warning", "-1h0m0s is negative"}},
	} {
		err := Main(t.Context(), tc.args)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("Main(%v) = %v, want an error with %q", tc.args, err, w)
			}
		}
	}
	_, _, err := NewManager(nil, Options{Namespace: "llmgw-system", OwnerLabels: []string{"a b"}}, logr.Discard())
	if err == nil || !strings.Contains(err.Error(), `--owner-labels: owner labels: "a b"`) {
		t.Errorf("NewManager with a bad owner label: %v", err)
	}
}
