package controllers

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	"github.com/llmgw/llmgw/api/v1alpha1"
)

// Events tell `kubectl describe` what happened to an object: one per
// transition of Accepted, ResolvedRefs or Programmed (status or reason), with
// the new reason as the Event's reason and the condition's message as its
// note, so a user sees what to act on. Ready repeats those, so only what it
// alone says gets an Event: a key turning Disabled or Expired, and back.

// eventAction is the events.k8s.io "action" of every Event the controller
// records: what it did when it noticed.
const eventAction = "Compile"

// maxNote is the events.k8s.io limit on an Event's note.
const maxNote = 1024

// condState is the part of a condition a transition is about.
type condState struct {
	Status metav1.ConditionStatus
	Reason string
}

// conditionOrder is the order conditions are written and Events recorded.
var conditionOrder = []string{v1alpha1.ConditionAccepted, v1alpha1.ConditionResolvedRefs, v1alpha1.ConditionProgrammed, v1alpha1.ConditionReady}

// condSet is an object's conditions, in conditionOrder.
type condSet [4]condState

// stateOf reads conds; a condition not there stays zero (never seen).
func stateOf(conds []metav1.Condition) condSet {
	var s condSet
	for i, t := range conditionOrder {
		for _, c := range conds {
			if c.Type == t {
				s[i] = condState{c.Status, c.Reason}
			}
		}
	}
	return s
}

// transition is one Event to record.
type transition struct {
	Type, Reason, Note string
}

// transitions lists the Events for going from old to conds. A condition
// that first appears True, or Programmed first appearing Pending, is how
// every healthy object starts (or how it looks after an upgrade that added
// the condition): no Event.
func transitions(old condSet, conds []metav1.Condition) []transition {
	var out []transition
	for i, t := range conditionOrder {
		var c *metav1.Condition
		for j := range conds {
			if conds[j].Type == t {
				c = &conds[j]
			}
		}
		if c == nil {
			continue
		}
		prev := old[i]
		known := prev.Status != ""
		if known && prev.Status == c.Status && prev.Reason == c.Reason {
			continue
		}
		if t == v1alpha1.ConditionReady {
			// Only what Ready alone says: a key the gateways refuse on purpose.
			if !refusedKey(c.Reason) && (!known || !refusedKey(prev.Reason)) {
				continue
			}
		} else if !known && (c.Status == metav1.ConditionTrue || c.Reason == v1alpha1.ReasonPending) {
			continue
		}
		typ := corev1.EventTypeWarning
		if c.Status == metav1.ConditionTrue || c.Reason == v1alpha1.ReasonPending || t == v1alpha1.ConditionReady {
			typ = corev1.EventTypeNormal
		}
		out = append(out, transition{Type: typ, Reason: c.Reason, Note: truncate(fmt.Sprintf("%s %s: %s", t, c.Status, c.Message), maxNote)})
	}
	return out
}

func refusedKey(reason string) bool {
	return reason == v1alpha1.ReasonDisabled || reason == v1alpha1.ReasonExpired
}

// maxNormalEventsPerRound caps the Normal Events one status round records.
// Creating 50,000 keys at once turned into one "Programmed" Event per key:
// tens of thousands of Events queued behind the client's rate limiter (a
// goroutine each, 1.5 GB), competing with status writes for the API
// server. Past the cap, a round's Normal Events are counted and summed up
// in one Event on the snapshot ConfigMap; Warnings, which ask a user to
// act, are always recorded.
const maxNormalEventsPerRound = 100

// eventBudget records a round's Events within maxNormalEventsPerRound.
type eventBudget struct {
	recorder   events.EventRecorder
	normal     int               // Normal Events still allowed this round
	suppressed map[[2]string]int // kind, reason → Normal Events not recorded
}

func (b *eventBudget) record(obj runtime.Object, kind string, e transition) {
	if b.recorder == nil {
		return
	}
	if e.Type == corev1.EventTypeNormal {
		if b.normal <= 0 {
			if b.suppressed == nil {
				b.suppressed = map[[2]string]int{}
			}
			b.suppressed[[2]string{kind, e.Reason}]++
			return
		}
		b.normal--
	}
	b.recorder.Eventf(obj, nil, e.Type, e.Reason, eventAction, "%s", e.Note)
}

// summarize records one Event on obj for what the round left out.
func (b *eventBudget) summarize(obj runtime.Object) {
	if b.recorder == nil || len(b.suppressed) == 0 || obj == nil {
		return
	}
	var parts []string
	keys := slices.SortedFunc(maps.Keys(b.suppressed), func(a, b [2]string) int { return strings.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) })
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s %s", b.suppressed[k], k[0], k[1]))
	}
	b.recorder.Eventf(obj, nil, corev1.EventTypeNormal, "TransitionsSummarized", eventAction,
		"%s", truncate(fmt.Sprintf("more than %d objects changed in one round; not recorded one by one: %s (their conditions say the same)",
			maxNormalEventsPerRound, strings.Join(parts, ", ")), maxNote))
}
