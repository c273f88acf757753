package controllers

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/llmgw/llmgw/api/gatewaystatus"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// TestPublications: an object's mark moves only when its entry changes, so a
// replica running an older version still serves what did not change since.
func TestPublications(t *testing.T) {
	var p publications
	key, alias := objectRef{"GatewayKey", "k"}, objectRef{"ModelAlias", "a"}
	p.published("v1", map[objectRef]string{alias: "A1"})
	if got := p.since(alias, "A1"); got != 1 {
		t.Fatalf("alias after v1: since %d, want 1", got)
	}
	p.published("v2", map[objectRef]string{alias: "A1", key: "K1"}) // a new key
	if p.since(alias, "A1") != 1 || p.since(key, "K1") != 2 {
		t.Fatalf("after v2: alias since %d (want 1), key since %d (want 2)", p.since(alias, "A1"), p.since(key, "K1"))
	}
	p.published("v2", map[objectRef]string{alias: "A1", key: "K1"}) // the same again: no new publication
	if p.seqOf("v2") != 2 || p.seq != 2 {
		t.Fatalf("republishing v2: seq %d, seqOf(v2) %d", p.seq, p.seqOf("v2"))
	}
	p.published("v3", map[objectRef]string{alias: "A1", key: "K2"}) // the key changed
	if p.since(key, "K2") != 3 || p.since(key, "K1") != 0 || p.since(alias, "A1") != 1 {
		t.Fatalf("after v3: key since %d/%d, alias %d", p.since(key, "K2"), p.since(key, "K1"), p.since(alias, "A1"))
	}
	p.published("v1", map[objectRef]string{alias: "A1"}) // back to v1: the key is gone
	if p.seqOf("v1") != 4 || p.since(key, "K2") != 0 {
		t.Fatalf("v1 again: seqOf %d, key since %d", p.seqOf("v1"), p.since(key, "K2"))
	}
	if p.seqOf("never") != 0 || p.seqOf("") != 0 {
		t.Fatal("an unknown version must have no publication")
	}
	for i := range keepVersions + 10 {
		p.published(strings.Repeat("x", i+1), map[objectRef]string{alias: "A1"})
	}
	if len(p.versions) != keepVersions {
		t.Fatalf("%d versions kept, want %d", len(p.versions), keepVersions)
	}
}

func TestProgrammedCondition(t *testing.T) {
	served := Result{Accepted: Condition{Status: true, Reason: v1alpha1.ReasonAccepted}, ResolvedRefs: Condition{Status: true, Reason: v1alpha1.ReasonResolvedRefs}, InSnapshot: true, Digest: "d"}
	seqs := map[string]int64{"old": 1, "new": 2, "newer": 3}
	seqOf := func(v string) int64 { return seqs[v] }
	report := func(v string) *gatewaystatus.Report { return &gatewaystatus.Report{Version: v} }
	refused := func(v, rv string) *gatewaystatus.Report {
		return &gatewaystatus.Report{Version: v, RefusedVersion: rv, RefusedReason: "credential: Secret x not found"}
	}
	two := func(a, b *gatewaystatus.Report) fleet {
		return fleet{Selector: "app=gw", Replicas: []replica{{Name: "gw-0", Ready: true, Report: a}, {Name: "gw-1", Ready: true, Report: b}}}
	}
	cases := []struct {
		name     string
		res      Result
		since    int64
		writeErr error
		fleet    fleet
		want     string // status/reason
		message  string // a part of the message
	}{
		{"every replica runs the version", served, 2, nil, two(report("new"), report("new")), "True/Programmed", "every ready gateway replica"},
		{"a replica on a newer version", served, 2, nil, two(report("newer"), report("new")), "True/Programmed", ""},
		{"a replica on an older version that already carried the object", served, 1, nil, two(report("old"), report("new")), "True/Programmed", ""},
		{"a replica on an older version without it", served, 2, nil, two(report("old"), report("new")), "False/Pending", "1 of 2 ready gateway replicas serve it; waiting for gw-0"},
		{"a replica that has not reported", served, 2, nil, two(nil, report("new")), "False/Pending", "waiting for gw-0"},
		{"a replica running a version this controller never published", served, 1, nil, two(report("foreign"), report("new")), "False/Pending", "gw-0"},
		{"a replica refused the version with the object", served, 2, nil, two(refused("old", "new"), report("new")), "False/SnapshotRefused", "gw-0 refused snapshot new and keeps serving its previous one: credential: Secret x not found"},
		{"a replica could not read the snapshot at all", served, 2, nil, two(refused("old", ""), report("new")), "False/SnapshotRefused", "a snapshot it could not read"},
		{"a refusal of a version without the object is not about it", served, 3, nil, two(refused("old", "new"), report("newer")), "False/Pending", "waiting for gw-0"},
		{"a refusal by a replica that serves the object anyway", served, 1, nil, two(refused("old", "new"), report("new")), "True/Programmed", ""},
		{"a refusing replica that is not ready still counts", served, 2, nil,
			fleet{Replicas: []replica{{Name: "gw-0", Ready: true, Report: report("new")}, {Name: "gw-1", Report: refused("", "new")}}}, "False/SnapshotRefused", "gw-1"},
		{"a replica that is not ready is not waited for", served, 2, nil,
			fleet{Replicas: []replica{{Name: "gw-0", Ready: true, Report: report("new")}, {Name: "gw-1", Report: report("old")}}}, "True/Programmed", ""},
		{"no replica ready", served, 2, nil, fleet{Replicas: []replica{{Name: "gw-0", Report: report("new")}}}, "False/Pending", "none of the 1 gateway replicas is ready"},
		{"no gateway Pod at all", served, 2, nil, fleet{Selector: "app=gw"}, "Unknown/NoGateways", "no gateway Pod matches app=gw"},
		{"the write failed: an unchanged object is still served", served, 2, errors.New("boom"), two(report("new"), report("new")), "True/Programmed", ""},
		{"the write failed: a changed object is not", served, 0, errors.New("configmaps is forbidden"), two(report("new"), report("new")), "False/SnapshotWriteFailed", "configmaps is forbidden"},
		{"not accepted", Result{Accepted: Condition{Reason: v1alpha1.ReasonAliasConflict, Message: "claimed by x"}}, 0, nil, two(report("new"), report("new")), "False/NotAccepted", "not in the snapshot: claimed by x"},
		{"refs not resolved", Result{Accepted: served.Accepted, ResolvedRefs: Condition{Reason: v1alpha1.ReasonProviderNotFound, Message: "no route works"}}, 0, nil, fleet{}, "False/RefsNotResolved", "no route works"},
	}
	for _, c := range cases {
		got := programmedCondition(c.res, c.since, c.writeErr, c.fleet, seqOf)
		if s := string(got.Status) + "/" + got.Reason; s != c.want || !strings.Contains(got.Message, c.message) {
			t.Errorf("%s: got %s %q, want %s containing %q", c.name, s, got.Message, c.want, c.message)
		}
		if got.Type != v1alpha1.ConditionProgrammed {
			t.Errorf("%s: type %q", c.name, got.Type)
		}
	}
}

func TestReadyCondition(t *testing.T) {
	ok := Condition{Status: true, Reason: "x"}
	progTrue := metav1.Condition{Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonProgrammed}
	progPending := metav1.Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonPending, Message: "waiting"}
	progUnknown := metav1.Condition{Status: metav1.ConditionUnknown, Reason: v1alpha1.ReasonNoGateways}
	cases := []struct {
		name string
		res  Result
		prog metav1.Condition
		want string
	}{
		{"served", Result{Accepted: ok, ResolvedRefs: ok, InSnapshot: true}, progTrue, "True/Serving"},
		{"served through fewer routes", Result{Accepted: ok, ResolvedRefs: Condition{Reason: v1alpha1.ReasonProviderNotFound}, InSnapshot: true}, progTrue, "True/Degraded"},
		{"a disabled key the gateways run", Result{Accepted: ok, ResolvedRefs: ok, InSnapshot: true, Refused: &Condition{Reason: v1alpha1.ReasonDisabled}}, progTrue, "False/Disabled"},
		{"a disabled key not yet loaded", Result{Accepted: ok, ResolvedRefs: ok, InSnapshot: true, Refused: &Condition{Reason: v1alpha1.ReasonDisabled}}, progPending, "False/Pending"},
		{"invalid", Result{Accepted: Condition{Reason: v1alpha1.ReasonInvalidSpec}, ResolvedRefs: ok}, progTrue, "False/InvalidSpec"},
		{"left out for its references", Result{Accepted: ok, ResolvedRefs: Condition{Reason: v1alpha1.ReasonSecretNotFound}}, progTrue, "False/SecretNotFound"},
		{"not loaded yet", Result{Accepted: ok, ResolvedRefs: ok, InSnapshot: true}, progPending, "False/Pending"},
		{"no gateways", Result{Accepted: ok, ResolvedRefs: ok, InSnapshot: true}, progUnknown, "Unknown/NoGateways"},
	}
	for _, c := range cases {
		got := readyCondition(c.res, c.prog)
		if s := string(got.Status) + "/" + got.Reason; s != c.want || got.Type != v1alpha1.ConditionReady {
			t.Errorf("%s: got %s (%s), want %s", c.name, s, got.Type, c.want)
		}
	}
}

// TestNewFleet: terminating and finished Pods are no replicas; an entry
// written before the Pod's container started is an earlier process's.
func TestNewFleet(t *testing.T) {
	start := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	pod := func(name string, ready bool, phase corev1.PodPhase) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: phase,
			ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(start)}}}}}}
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
		return p
	}
	enc := func(r gatewaystatus.Report) string {
		s, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	terminating := pod("gw-3", true, corev1.PodRunning)
	terminating.DeletionTimestamp = &metav1.Time{Time: start}
	pods := []corev1.Pod{pod("gw-1", false, corev1.PodRunning), pod("gw-0", true, corev1.PodRunning), pod("gw-2", true, corev1.PodFailed), terminating, pod("gw-4", true, corev1.PodRunning)}
	data := map[string]string{
		"gw-0":     enc(gatewaystatus.Report{Version: "v", At: start.Add(time.Second)}),
		"gw-1":     enc(gatewaystatus.Report{Version: "stale", At: start.Add(-time.Second)}),
		"gw-4":     "not json",
		"gone-pod": enc(gatewaystatus.Report{Version: "v", At: start}),
	}
	f := newFleet("sel", pods, data)
	var names []string
	for _, r := range f.Replicas {
		names = append(names, r.Name)
	}
	if strings.Join(names, ",") != "gw-0,gw-1,gw-4" {
		t.Fatalf("replicas %v, want gw-0,gw-1,gw-4", names)
	}
	if r := f.Replicas[0]; !r.Ready || r.Report == nil || r.Report.Version != "v" {
		t.Errorf("gw-0: %+v", r)
	}
	if r := f.Replicas[1]; r.Ready || r.Report != nil {
		t.Errorf("gw-1: not ready, and its report predates its container: %+v", r)
	}
	if r := f.Replicas[2]; r.Report != nil {
		t.Errorf("gw-4: an unreadable entry is no report: %+v", r.Report)
	}
}
