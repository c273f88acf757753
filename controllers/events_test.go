package controllers

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/llmgw/llmgw/api/v1alpha1"
)

func TestTransitions(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: "msg of " + reason}
	}
	T, F, U := metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown
	healthy := []metav1.Condition{
		cond(v1alpha1.ConditionAccepted, T, v1alpha1.ReasonAccepted),
		cond(v1alpha1.ConditionResolvedRefs, T, v1alpha1.ReasonResolvedRefs),
		cond(v1alpha1.ConditionProgrammed, T, v1alpha1.ReasonProgrammed),
		cond(v1alpha1.ConditionReady, T, v1alpha1.ReasonServing),
	}
	pending := append([]metav1.Condition{}, healthy...)
	pending[2] = cond(v1alpha1.ConditionProgrammed, F, v1alpha1.ReasonPending)
	pending[3] = cond(v1alpha1.ConditionReady, F, v1alpha1.ReasonPending)
	broken := append([]metav1.Condition{}, healthy...)
	broken[1] = cond(v1alpha1.ConditionResolvedRefs, F, v1alpha1.ReasonProviderNotFound)
	broken[2] = cond(v1alpha1.ConditionProgrammed, F, v1alpha1.ReasonRefsNotResolved)
	broken[3] = cond(v1alpha1.ConditionReady, F, v1alpha1.ReasonProviderNotFound)
	disabled := append([]metav1.Condition{}, healthy...)
	disabled[3] = cond(v1alpha1.ConditionReady, F, v1alpha1.ReasonDisabled)
	noGateways := append([]metav1.Condition{}, healthy...)
	noGateways[2] = cond(v1alpha1.ConditionProgrammed, U, v1alpha1.ReasonNoGateways)

	cases := []struct {
		name     string
		old, new []metav1.Condition
		want     []string // type/reason of each Event
	}{
		{"a new healthy object: Pending then Programmed is how it starts", nil, pending, nil},
		{"it gets served", pending, healthy, []string{"Normal/Programmed"}},
		{"nothing changed", healthy, healthy, nil},
		{"a new broken object says what is wrong", nil, broken, []string{"Warning/ProviderNotFound", "Warning/RefsNotResolved"}},
		{"a provider goes away", healthy, broken, []string{"Warning/ProviderNotFound", "Warning/RefsNotResolved"}},
		{"and comes back", broken, healthy, []string{"Normal/ResolvedRefs", "Normal/Programmed"}},
		{"a key is disabled: only Ready says so", healthy, disabled, []string{"Normal/Disabled"}},
		{"and enabled again", disabled, healthy, []string{"Normal/Serving"}},
		{"a new disabled key", nil, disabled, []string{"Normal/Disabled"}},
		{"no gateways", nil, noGateways, []string{"Warning/NoGateways"}},
		{"an upgrade from the Ready-only status adds conditions without news", []metav1.Condition{cond(v1alpha1.ConditionReady, T, "Compiled")}, healthy, nil},
	}
	for _, c := range cases {
		var got []string
		for _, e := range transitions(stateOf(c.old), c.new) {
			got = append(got, e.Type+"/"+e.Reason)
			if !strings.Contains(e.Note, "msg of "+e.Reason) || len(e.Note) > maxNote {
				t.Errorf("%s: note %q", c.name, e.Note)
			}
			if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
				t.Errorf("%s: type %q", c.name, e.Type)
			}
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s: events %v, want %v", c.name, got, c.want)
		}
	}
	long := []metav1.Condition{{Type: v1alpha1.ConditionAccepted, Status: F, Reason: v1alpha1.ReasonInvalidSpec, Message: strings.Repeat("x", 5000)}}
	if e := transitions(condSet{}, long); len(e) != 1 || len(e[0].Note) > maxNote {
		t.Fatalf("a long message must be cut to the Event limit: %+v", e)
	}
}

// TestEventBudget: past maxNormalEventsPerRound a round's Normal Events are
// summed up in one Event; Warnings are all recorded.
func TestEventBudget(t *testing.T) {
	rec := events.NewFakeRecorder(1000)
	b := eventBudget{recorder: rec, normal: maxNormalEventsPerRound}
	key := &v1alpha1.GatewayKey{}
	for range maxNormalEventsPerRound + 40 {
		b.record(key, "GatewayKey", transition{Type: corev1.EventTypeNormal, Reason: v1alpha1.ReasonProgrammed, Note: "Programmed True"})
	}
	for range 3 {
		b.record(key, "GatewayKey", transition{Type: corev1.EventTypeWarning, Reason: v1alpha1.ReasonSnapshotRefused, Note: "Programmed False"})
	}
	b.record(&v1alpha1.ModelAlias{}, "ModelAlias", transition{Type: corev1.EventTypeNormal, Reason: v1alpha1.ReasonPending, Note: "Programmed False"})
	b.summarize(&corev1.ConfigMap{})
	close(rec.Events)
	var normal, warning int
	var summary string
	for e := range rec.Events {
		switch {
		case strings.HasPrefix(e, "Normal TransitionsSummarized"):
			summary = e
		case strings.HasPrefix(e, "Normal"):
			normal++
		case strings.HasPrefix(e, "Warning"):
			warning++
		}
	}
	if normal != maxNormalEventsPerRound || warning != 3 {
		t.Fatalf("%d Normal and %d Warning Events recorded, want %d and 3", normal, warning, maxNormalEventsPerRound)
	}
	if !strings.Contains(summary, "40 GatewayKey Programmed, 1 ModelAlias Pending") {
		t.Fatalf("summary %q", summary)
	}
}
