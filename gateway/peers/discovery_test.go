package peers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

const (
	discNS  = "llmgw-system"
	discSTS = "llmgw-gateway"
)

func discSet(replicas *int32, ready int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: discNS, Name: discSTS},
		Spec:       appsv1.StatefulSetSpec{Replicas: replicas},
		Status:     appsv1.StatefulSetStatus{ReadyReplicas: ready},
	}
}

func discClaim(ns, name string, ann map[string]string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: ann}}
}

// discLog records what Discovery logs, to count messages.
type discLog struct {
	mu   sync.Mutex
	msgs []string // "LEVEL message key=value ..."
}

func (l *discLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.msgs)
}

func (l *discLog) count(line string) int {
	n := 0
	for _, m := range l.lines() {
		if m == line {
			n++
		}
	}
	return n
}

// discHandler writes to a discLog, keeping the attributes of With.
type discHandler struct {
	log   *discLog
	attrs string
}

func (h discHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h discHandler) WithGroup(string) slog.Handler            { return h }
func (h discHandler) WithAttrs(as []slog.Attr) slog.Handler {
	for _, a := range as {
		h.attrs += " " + a.String()
	}
	return h
}

func (h discHandler) Handle(_ context.Context, r slog.Record) error {
	s := r.Level.String() + " " + r.Message + h.attrs
	r.Attrs(func(a slog.Attr) bool {
		s += " " + a.String()
		return true
	})
	h.log.mu.Lock()
	defer h.log.mu.Unlock()
	h.log.msgs = append(h.log.msgs, s)
	return nil
}

// discClient is a second client on cs's objects that records its own
// requests: the Discovery's, apart from the test's writes through cs.
func discClient(cs *fake.Clientset) *fake.Clientset {
	dc := &fake.Clientset{}
	o := cs.Tracker()
	dc.AddReactor("*", "*", k8stesting.ObjectReaction(o))
	dc.AddWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if wa, ok := a.(k8stesting.WatchActionImpl); ok {
			opts = wa.ListOptions
		}
		w, err := o.Watch(a.GetResource(), a.GetNamespace(), opts)
		return err == nil, w, err
	})
	return dc
}

// startDiscovery runs a Discovery on cs's objects until the test ends, and
// checks at the end that it asked the API for nothing beyond its RBAC. It
// returns the Discovery's own client, whose action log holds its requests.
func startDiscovery(t *testing.T, cs *fake.Clientset) (*Discovery, *fake.Clientset, *discLog) {
	t.Helper()
	d, dc, log := newDiscovery(t, cs)
	if err := d.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return d, dc, log
}

func newDiscovery(t *testing.T, cs *fake.Clientset) (*Discovery, *fake.Clientset, *discLog) {
	t.Helper()
	log := &discLog{}
	dc := discClient(cs)
	d, err := NewDiscovery(DiscoveryConfig{Client: dc, Namespace: discNS, StatefulSet: discSTS,
		ClaimTemplate: "data", Logger: slog.New(discHandler{log: log})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { checkLeastPrivilege(t, dc.Actions()) })
	return d, dc, log
}

// eventually polls cond until it holds or a deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitMembership(t *testing.T, d *Discovery, what string, cond func(Membership) bool) Membership {
	t.Helper()
	var m Membership
	eventually(t, fmt.Sprintf("%s (last membership %+v)", what, d.Membership()), func() bool {
		m = d.Membership()
		return cond(m)
	})
	return m
}

// checkLeastPrivilege fails on any request outside the RBAC the coordinator
// grants: statefulsets get/list/watch of the one name (list and watch by
// field selector), claims list/watch/patch, all in the namespace.
func checkLeastPrivilege(t *testing.T, actions []k8stesting.Action) {
	t.Helper()
	byName := "metadata.name=" + discSTS
	for _, a := range actions {
		res, verb := a.GetResource().Resource, a.GetVerb()
		if a.GetNamespace() != discNS {
			t.Errorf("%s %s outside the namespace (%q)", verb, res, a.GetNamespace())
		}
		switch {
		case res == "statefulsets" && verb == "get":
			if n := a.(k8stesting.GetAction).GetName(); n != discSTS {
				t.Errorf("get of StatefulSet %q", n)
			}
		case res == "statefulsets" && verb == "list":
			if f := a.(k8stesting.ListAction).GetListRestrictions().Fields.String(); f != byName {
				t.Errorf("StatefulSet list with field selector %q, want %q", f, byName)
			}
		case res == "statefulsets" && verb == "watch":
			if f := a.(k8stesting.WatchAction).GetWatchRestrictions().Fields.String(); f != byName {
				t.Errorf("StatefulSet watch with field selector %q, want %q", f, byName)
			}
		case res == "persistentvolumeclaims" && (verb == "list" || verb == "watch" || verb == "patch"):
		default:
			t.Errorf("request outside the gateway's RBAC: %s %s", verb, res)
		}
	}
}

// discActions filters the requests the Discovery made (the test's own
// writes go through the same fake).
func discActions(cs *fake.Clientset, verb, resource string) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range cs.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			out = append(out, a)
		}
	}
	return out
}

func TestOrdinal(t *testing.T) {
	for _, tc := range []struct {
		pod  string
		want int
		ok   bool
	}{
		{"llmgw-gateway-0", 0, true},
		{"llmgw-gateway-2", 2, true},
		{"llmgw-gateway-12", 12, true},
		{"gw-7", 7, true},
		{"", 0, false},
		{"llmgw", 0, false},
		{"-1", 0, false},
		{"llmgw-gateway-", 0, false},
		{"llmgw-gateway-x", 0, false},
		{"llmgw-gateway-01", 0, false},
		{"llmgw-gateway-+1", 0, false},
		{"llmgw-gateway-1a", 0, false},
		{"llmgw-gateway-99999999999999999999999", 0, false},
	} {
		got, err := Ordinal(tc.pod)
		if tc.ok && (err != nil || got != tc.want) {
			t.Errorf("Ordinal(%q) = %d, %v; want %d", tc.pod, got, err, tc.want)
		}
		if !tc.ok && err == nil {
			t.Errorf("Ordinal(%q) = %d, want an error", tc.pod, got)
		}
	}
}

func TestClaimNames(t *testing.T) {
	if got := ClaimName("data", "llmgw-gateway-2"); got != "data-llmgw-gateway-2" {
		t.Errorf("ClaimName = %q", got)
	}
	for n := range 12 {
		claim := ClaimName("data", discSTS+"-"+strconv.Itoa(n))
		if got, err := ClaimOrdinal("data", discSTS, claim); err != nil || got != n {
			t.Errorf("ClaimOrdinal(%q) = %d, %v; want %d", claim, got, err, n)
		}
	}
	for _, claim := range []string{
		"data-llmgw-quota-store-0", // another StatefulSet
		"other-llmgw-gateway-3",    // another template
		"data-llmgw-gateway-x-0",   // a StatefulSet named llmgw-gateway-x
		"data-llmgw-gateway-",
		"data-llmgw-gateway-03",
		"data-llmgw-gateway-3-",
		"llmgw-gateway-3",
		"",
	} {
		if n, err := ClaimOrdinal("data", discSTS, claim); err == nil {
			t.Errorf("ClaimOrdinal(%q) = %d, want an error", claim, n)
		}
	}
}

func TestStaticMembership(t *testing.T) {
	for _, tc := range []struct {
		self     string
		replicas int
		want     Membership
	}{
		{"llmgw-gateway-1", 3, Membership{Known: true, Replicas: 3, Ready: 3,
			Members: []string{"llmgw-gateway-0", "llmgw-gateway-1", "llmgw-gateway-2"}}},
		{"llmgw-gateway-0", 1, Membership{Known: true, Replicas: 1, Ready: 1, Members: []string{"llmgw-gateway-0"}}},
		{"llmgw-gateway-0", 0, Membership{Known: true, Replicas: 1, Ready: 1, Members: []string{"llmgw-gateway-0"}}},
		{"laptop", 3, Membership{Known: true, Replicas: 1, Ready: 1, Members: []string{"laptop"}}},
	} {
		got := StaticMembership(tc.self, tc.replicas)
		if !equalMembership(got, tc.want) {
			t.Errorf("StaticMembership(%q, %d) = %+v, want %+v", tc.self, tc.replicas, got, tc.want)
		}
	}
	m := StaticMembership("llmgw-gateway-1", 3)
	if got := m.Others("llmgw-gateway-1"); !slices.Equal(got, []string{"llmgw-gateway-0", "llmgw-gateway-2"}) {
		t.Errorf("Others = %v", got)
	}
}

func equalMembership(a, b Membership) bool {
	return a.Known == b.Known && a.Replicas == b.Replicas && a.Ready == b.Ready &&
		slices.Equal(a.Members, b.Members) && slices.Equal(a.Stranded, b.Stranded)
}

func TestNewDiscoveryRejects(t *testing.T) {
	ok := DiscoveryConfig{Client: fake.NewClientset(), Namespace: discNS, StatefulSet: discSTS, ClaimTemplate: "data"}
	if _, err := NewDiscovery(ok); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for name, mutate := range map[string]func(*DiscoveryConfig){
		"no client":    func(c *DiscoveryConfig) { c.Client = nil },
		"no namespace": func(c *DiscoveryConfig) { c.Namespace = "" },
		"no sts":       func(c *DiscoveryConfig) { c.StatefulSet = "" },
		"no template":  func(c *DiscoveryConfig) { c.ClaimTemplate = "" },
	} {
		cfg := ok
		mutate(&cfg)
		if _, err := NewDiscovery(cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestDiscoveryUnknownUntilStatefulSetExists(t *testing.T) {
	cs := fake.NewClientset(discClaim(discNS, "data-llmgw-gateway-5", nil))
	d, _, _ := newDiscovery(t, cs)
	if m := d.Membership(); m.Known {
		t.Fatalf("before Start: %+v", m)
	}
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(t.Context()); err == nil {
		t.Error("a second Start did not fail")
	}
	// Synced, but no StatefulSet: nothing is known, and in particular no
	// claim is called stranded for want of a replica count.
	if m := d.Membership(); m.Known || m.Replicas != 0 || len(m.Members) != 0 || len(m.Stranded) != 0 {
		t.Fatalf("without the StatefulSet: %+v", m)
	}
	if _, err := cs.AppsV1().StatefulSets(discNS).Create(t.Context(), discSet(new(int32(2)), 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	m := waitMembership(t, d, "the StatefulSet", func(m Membership) bool { return m.Known })
	want := Membership{Known: true, Replicas: 2, Members: []string{"llmgw-gateway-0", "llmgw-gateway-1"},
		Stranded: []string{"data-llmgw-gateway-5"}}
	if !equalMembership(m, want) {
		t.Errorf("membership %+v, want %+v", m, want)
	}
}

func TestDiscoveryFollowsScale(t *testing.T) {
	cs := fake.NewClientset(discSet(new(int32(2)), 2))
	d, _, log := startDiscovery(t, cs)
	if m := d.Membership(); !m.Known || m.Replicas != 2 || m.Ready != 2 {
		t.Fatalf("after Start: %+v", m)
	}
	for _, step := range []struct {
		replicas *int32
		ready    int32
		want     []string
	}{
		{new(int32(3)), 2, []string{"llmgw-gateway-0", "llmgw-gateway-1", "llmgw-gateway-2"}},
		{new(int32(3)), 3, []string{"llmgw-gateway-0", "llmgw-gateway-1", "llmgw-gateway-2"}},
		{new(int32(1)), 1, []string{"llmgw-gateway-0"}},
		{new(int32(2)), 1, []string{"llmgw-gateway-0", "llmgw-gateway-1"}},
		{nil, 0, []string{"llmgw-gateway-0"}}, // spec.replicas unset means 1
		{new(int32(0)), 0, nil},               // scaled to zero: no members
	} {
		if _, err := cs.AppsV1().StatefulSets(discNS).Update(t.Context(), discSet(step.replicas, step.ready), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		m := waitMembership(t, d, fmt.Sprintf("members %v, ready %d", step.want, step.ready), func(m Membership) bool {
			return slices.Equal(m.Members, step.want) && m.Ready == int(step.ready)
		})
		if m.Replicas != len(step.want) || !m.Known {
			t.Errorf("membership %+v for members %v", m, step.want)
		}
	}
	// Each change logged once, however often Membership was called.
	for range 100 {
		d.Membership()
	}
	for _, line := range []string{
		"INFO gateway replicas discovered statefulset=llmgw-gateway replicas=2 ready=2",
		"INFO gateway replicas changed statefulset=llmgw-gateway from=2 to=3",
		"INFO gateway replicas changed statefulset=llmgw-gateway from=3 to=1",
		"INFO gateway replicas changed statefulset=llmgw-gateway from=1 to=2",
		"INFO gateway replicas changed statefulset=llmgw-gateway from=2 to=1",
		"INFO gateway replicas changed statefulset=llmgw-gateway from=1 to=0",
	} {
		if n := log.count(line); n != 1 {
			t.Errorf("%q logged %d times; log:\n%v", line, n, log.lines())
		}
	}
}

func TestMembershipIsACopy(t *testing.T) {
	cs := fake.NewClientset(discSet(new(int32(2)), 2), discClaim(discNS, "data-llmgw-gateway-2", nil))
	d, _, _ := startDiscovery(t, cs)
	m := d.Membership()
	m.Members[0], m.Stranded[0] = "x", "y"
	if m := d.Membership(); m.Members[0] != "llmgw-gateway-0" || m.Stranded[0] != "data-llmgw-gateway-2" {
		t.Errorf("a caller's change leaked into the membership: %+v", m)
	}
}

func TestDiscoveryStranded(t *testing.T) {
	var objs []runtime.Object
	for _, n := range []int{0, 1, 2, 3, 10} {
		objs = append(objs, discClaim(discNS, fmt.Sprintf("data-llmgw-gateway-%d", n), nil))
	}
	objs = append(objs,
		discSet(new(int32(2)), 2),
		discClaim(discNS, "data-llmgw-quota-store-0", nil),  // another StatefulSet
		discClaim(discNS, "other-llmgw-gateway-3", nil),     // another template
		discClaim(discNS, "data-llmgw-gateway-x-4", nil),    // a StatefulSet llmgw-gateway-x
		discClaim("elsewhere", "data-llmgw-gateway-7", nil), // another namespace
		discClaim(discNS, "data-llmgw-gateway-11", map[string]string{HandedOffAnnotation: "llmgw-gateway-0"}),
	)
	cs := fake.NewClientset(objs...)
	d, dc, log := startDiscovery(t, cs)
	d.now = func() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("x", 3600)) }
	claims := cs.CoreV1().PersistentVolumeClaims(discNS)

	// Sorted by ordinal, not by name: 10 after 3.
	if m := d.Membership(); !slices.Equal(m.Stranded, []string{"data-llmgw-gateway-2", "data-llmgw-gateway-3", "data-llmgw-gateway-10"}) {
		t.Fatalf("stranded %v", m.Stranded)
	}

	if err := d.MarkHandedOff(t.Context(), "data-llmgw-gateway-3", "llmgw-gateway-0", 42); err != nil {
		t.Fatal(err)
	}
	waitMembership(t, d, "-3 handed off", func(m Membership) bool {
		return slices.Equal(m.Stranded, []string{"data-llmgw-gateway-2", "data-llmgw-gateway-10"})
	})
	pvc, err := claims.Get(t.Context(), "data-llmgw-gateway-3", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantAnn := map[string]string{HandedOffAnnotation: "llmgw-gateway-0",
		HandedOffAtAnnotation: "2026-03-04T04:06:07Z", HandedOffRecordsAnnotation: "42"}
	for k, v := range wantAnn {
		if pvc.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q (all: %v)", k, pvc.Annotations[k], v, pvc.Annotations)
		}
	}

	if err := d.ClearHandedOff(t.Context(), "data-llmgw-gateway-3"); err != nil {
		t.Fatal(err)
	}
	waitMembership(t, d, "-3 stranded again", func(m Membership) bool {
		return slices.Contains(m.Stranded, "data-llmgw-gateway-3")
	})
	if pvc, err = claims.Get(t.Context(), "data-llmgw-gateway-3", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	for k := range wantAnn {
		if _, ok := pvc.Annotations[k]; ok {
			t.Errorf("annotation %s still there after ClearHandedOff", k)
		}
	}
	// Clearing twice, or a claim that does not exist, is no error.
	for _, c := range []string{"data-llmgw-gateway-3", "data-llmgw-gateway-9"} {
		if err := d.ClearHandedOff(t.Context(), c); err != nil {
			t.Errorf("ClearHandedOff(%s): %v", c, err)
		}
	}

	// A scale-up brings ordinal 2 and 3 back: theirs are no longer stranded.
	if _, err := cs.AppsV1().StatefulSets(discNS).Update(t.Context(), discSet(new(int32(4)), 2), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitMembership(t, d, "scale to 4", func(m Membership) bool {
		return m.Replicas == 4 && slices.Equal(m.Stranded, []string{"data-llmgw-gateway-10"})
	})
	// Deleting a stranded claim clears it too (its records are gone, which
	// is the operator's call).
	if err := claims.Delete(t.Context(), "data-llmgw-gateway-10", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitMembership(t, d, "-10 deleted", func(m Membership) bool { return len(m.Stranded) == 0 })

	for _, line := range []string{
		"WARN stranded ledger: a removed replica's volume holds records no replica serves (until its hand-off completes, or an import takes them) statefulset=llmgw-gateway claim=data-llmgw-gateway-2 namespace=llmgw-system",
		"INFO stranded ledger cleared statefulset=llmgw-gateway claim=data-llmgw-gateway-3 reason=handed off",
		"INFO stranded ledger cleared statefulset=llmgw-gateway claim=data-llmgw-gateway-2 reason=its replica is back",
		"INFO stranded ledger cleared statefulset=llmgw-gateway claim=data-llmgw-gateway-10 reason=the claim was deleted",
	} {
		if n := log.count(line); n != 1 {
			t.Errorf("%q logged %d times; log:\n%v", line, n, log.lines())
		}
	}
	// -3 became stranded twice (at start and after the clear): twice logged.
	if n := log.count("WARN stranded ledger: a removed replica's volume holds records no replica serves (until its hand-off completes, or an import takes them) statefulset=llmgw-gateway claim=data-llmgw-gateway-3 namespace=llmgw-system"); n != 2 {
		t.Errorf("-3 stranded logged %d times, want 2", n)
	}

	patches := discActions(dc, "patch", "persistentvolumeclaims")
	if len(patches) != 4 {
		t.Errorf("%d claim patches, want 4 (mark, clear ×3)", len(patches))
	}
	for _, a := range patches {
		if pt := a.(k8stesting.PatchAction).GetPatchType(); pt != "application/merge-patch+json" {
			t.Errorf("patch type %s", pt)
		}
	}
}

func TestHandOffRejects(t *testing.T) {
	cs := fake.NewClientset(discClaim(discNS, "data-llmgw-quota-store-0", nil), discClaim(discNS, "data-llmgw-gateway-2", nil))
	d, dc, _ := newDiscovery(t, cs)
	for name, call := range map[string]func() error{
		"another StatefulSet's claim": func() error {
			return d.MarkHandedOff(t.Context(), "data-llmgw-quota-store-0", "llmgw-gateway-0", 1)
		},
		"no receiver":        func() error { return d.MarkHandedOff(t.Context(), "data-llmgw-gateway-2", "", 1) },
		"negative records":   func() error { return d.MarkHandedOff(t.Context(), "data-llmgw-gateway-2", "llmgw-gateway-0", -1) },
		"clear another's":    func() error { return d.ClearHandedOff(t.Context(), "data-llmgw-quota-store-0") },
		"mark missing claim": func() error { return d.MarkHandedOff(t.Context(), "data-llmgw-gateway-9", "llmgw-gateway-0", 1) },
	} {
		if err := call(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// Only the missing claim got as far as the API.
	if n := len(discActions(dc, "patch", "persistentvolumeclaims")); n != 1 {
		t.Errorf("%d patches sent, want 1", n)
	}
}

func TestReplicasReadsLive(t *testing.T) {
	cs := fake.NewClientset(discSet(new(int32(3)), 3))
	d, dc, _ := startDiscovery(t, cs)
	// The API now says 1 (a scale-down the watch has not delivered): the
	// cache still says 3, Replicas says 1.
	dc.PrependReactor("get", "statefulsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, discSet(new(int32(1)), 3), nil
	})
	gets := len(discActions(dc, "get", "statefulsets"))
	if n, err := d.Replicas(t.Context()); err != nil || n != 1 {
		t.Errorf("Replicas = %d, %v; want 1", n, err)
	}
	if got := len(discActions(dc, "get", "statefulsets")); got != gets+1 {
		t.Errorf("%d gets for one Replicas call", got-gets)
	}
	if m := d.Membership(); m.Replicas != 3 {
		t.Errorf("the cache moved: %+v", m)
	}

	for _, tc := range []struct {
		name string
		objs []runtime.Object
		want int
		ok   bool
	}{
		{"unset replicas", []runtime.Object{discSet(nil, 0)}, 1, true},
		{"five", []runtime.Object{discSet(new(int32(5)), 0)}, 5, true},
		{"no StatefulSet", nil, 0, false},
	} {
		d, _, _ := newDiscovery(t, fake.NewClientset(tc.objs...)) // not started: no cache to read
		n, err := d.Replicas(t.Context())
		if tc.ok && (err != nil || n != tc.want) || !tc.ok && err == nil {
			t.Errorf("%s: Replicas = %d, %v", tc.name, n, err)
		}
	}
}

func TestStartRefused(t *testing.T) {
	for _, resource := range []string{"statefulsets", "persistentvolumeclaims"} {
		cs := fake.NewClientset(discSet(new(int32(2)), 2))
		d, dc, _ := newDiscovery(t, cs)
		dc.PrependReactor("*", resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", errors.New("rbac"))
		})
		// Refusal is reported at once, well before this deadline.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		err := d.Start(ctx)
		cancel()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s forbidden: Start = %v", resource, err)
		}
	}
}

func TestStartGivesUpWithContext(t *testing.T) {
	cs := fake.NewClientset(discSet(new(int32(2)), 2))
	d, dc, _ := newDiscovery(t, cs)
	dc.PrependReactor("list", "persistentvolumeclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("apiserver restarting")
	})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := d.Start(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Start = %v, want the context's deadline", err)
	}
	if m := d.Membership(); m.Known {
		t.Errorf("membership without sync: %+v", m)
	}
}

func TestDiscoveryKeepsMembershipWhileStatefulSetIsGone(t *testing.T) {
	cs := fake.NewClientset(discSet(new(int32(2)), 2), discClaim(discNS, "data-llmgw-gateway-3", nil))
	d, _, log := startDiscovery(t, cs)
	sets := cs.AppsV1().StatefulSets(discNS)
	// kubectl delete --cascade=orphan, to recreate it: the pods run on.
	if err := sets.Delete(t.Context(), discSTS, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone := "WARN gateway StatefulSet was deleted; keeping the last known membership statefulset=llmgw-gateway replicas=2"
	eventually(t, "the deletion to be seen", func() bool { return log.count(gone) == 1 })
	want := Membership{Known: true, Replicas: 2, Ready: 2, Members: []string{"llmgw-gateway-0", "llmgw-gateway-1"},
		Stranded: []string{"data-llmgw-gateway-3"}}
	if m := d.Membership(); !equalMembership(m, want) {
		t.Errorf("while gone: %+v, want %+v", m, want)
	}
	if _, err := sets.Create(t.Context(), discSet(new(int32(4)), 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitMembership(t, d, "the recreated StatefulSet", func(m Membership) bool {
		return m.Replicas == 4 && len(m.Stranded) == 0
	})
	for _, line := range []string{gone, "INFO gateway StatefulSet is back statefulset=llmgw-gateway"} {
		if n := log.count(line); n != 1 {
			t.Errorf("%q logged %d times; log:\n%v", line, n, log.lines())
		}
	}
}
