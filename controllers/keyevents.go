package controllers

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/llmgw/llmgw/api/v1alpha1"
)

// A key's lifecycle in its status, Events and metrics: status.rotation, the
// ExpiringSoon condition, the Events KeyRotated, RotationGraceEnded and
// KeyExpiringSoon (each once per rotation or warning), and two gauges.

var (
	keysExpiringSoon = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "llmgw_controller_keys_expiring_soon",
		Help: "GatewayKeys whose expiresAt is within --key-expiry-warning and not yet past (condition ExpiringSoon True).",
	})
	keysInRotationGrace = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "llmgw_controller_keys_in_rotation_grace",
		Help: "GatewayKeys whose previous key (spec.previous) is still accepted (status.rotation.inGrace).",
	})
)

func init() { metrics.Registry.MustRegister(keysExpiringSoon, keysInRotationGrace) }

// keyState is what the lifecycle Events are decided from: the controller's
// last decision for a key or, after a restart, what its status says (as
// for the conditions' Events: lastConditions).
type keyState struct {
	rotationFP string // status.rotation.previousFingerprint; "" without rotation
	inGrace    bool
	expiring   bool // ExpiringSoon True
}

func keyStateOf(res *KeyResult) keyState {
	var s keyState
	if r := res.Rotation; r != nil {
		s.rotationFP, s.inGrace = r.PreviousFingerprint, r.InGrace
	}
	s.expiring = res.ExpiringSoon != nil && res.ExpiringSoon.Status
	return s
}

func keyStateFromStatus(st *v1alpha1.GatewayKeyStatus) keyState {
	var s keyState
	if r := st.Rotation; r != nil {
		s.rotationFP, s.inGrace = r.PreviousFingerprint, r.InGrace
	}
	s.expiring = meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionExpiringSoon)
	return s
}

// keyTransitions lists the lifecycle Events for a key going from old to
// res: KeyRotated when its previous key is new, RotationGraceEnded when
// that key's grace is over (both for a rotation first seen after its
// grace), KeyExpiringSoon when its expiry warning starts.
func keyTransitions(old keyState, res *KeyResult) []transition {
	var out []transition
	if r := res.Rotation; r != nil && r.PreviousFingerprint != "" {
		ends := r.GraceEndsAt.UTC().Format(time.RFC3339)
		fresh := r.PreviousFingerprint != old.rotationFP
		if fresh {
			accepted := "is accepted until " + ends
			if !r.InGrace {
				accepted = "was accepted until " + ends + ", which has passed"
			}
			out = append(out, transition{Type: corev1.EventTypeNormal, Reason: v1alpha1.EventKeyRotated,
				Note: truncate(fmt.Sprintf("key rotated: previous key %s %s, alongside the new key %s", r.PreviousFingerprint, accepted, res.Fingerprint), maxNote)})
		}
		if !r.InGrace && (fresh || old.inGrace) {
			out = append(out, transition{Type: corev1.EventTypeNormal, Reason: v1alpha1.EventRotationGraceEnded,
				Note: truncate(fmt.Sprintf("the grace of previous key %s ended at %s: the gateways refuse it with 401 key_rotated; key %s stays", r.PreviousFingerprint, ends, res.Fingerprint), maxNote)})
		}
	}
	if e := res.ExpiringSoon; e != nil && e.Status && !old.expiring {
		out = append(out, transition{Type: corev1.EventTypeWarning, Reason: v1alpha1.EventKeyExpiringSoon, Note: truncate(e.Message, maxNote)})
	}
	return out
}

// keyLifecycle sets o's ExpiringSoon condition (removes it when the
// warning is off), records the lifecycle Events since the last decision
// (or since was, the status as read), and remembers this one.
// status.rotation is set by the caller.
func (p *statusPass) keyLifecycle(o *v1alpha1.GatewayKey, was *v1alpha1.GatewayKeyStatus, res *KeyResult) {
	if c := res.ExpiringSoon; c != nil {
		cond := fromCompile(v1alpha1.ConditionExpiringSoon, *c)
		cond.ObservedGeneration = o.Generation
		meta.SetStatusCondition(&o.Status.Conditions, cond)
	} else {
		meta.RemoveStatusCondition(&o.Status.Conditions, v1alpha1.ConditionExpiringSoon)
	}
	r := p.r
	r.mu.Lock()
	old, ok := r.keyStates[p.ref]
	if !ok {
		// The status as read is the last one written, unless the
		// controller decided since (then it is in keyStates).
		old = keyStateFromStatus(was)
	}
	if r.keyStates == nil {
		r.keyStates = map[objectRef]keyState{}
	}
	r.keyStates[p.ref] = keyStateOf(res)
	r.mu.Unlock()
	for _, e := range keyTransitions(old, res) {
		p.events.record(o, p.ref.Kind, e)
	}
}

// keyFields is a GatewayKey's own status fields in comparable form (the
// extra of wantedStatus).
type keyFields struct {
	fingerprint string
	rotation    bool
	previousFP  string
	graceEnds   int64
	inGrace     bool
	expiring    condKey
	hasExpiring bool
}

func keyFieldsOf(res *KeyResult) keyFields {
	f := keyFields{fingerprint: res.Fingerprint}
	if r := res.Rotation; r != nil {
		f.rotation, f.previousFP, f.graceEnds, f.inGrace = true, r.PreviousFingerprint, r.GraceEndsAt.UnixNano(), r.InGrace
	}
	if c := res.ExpiringSoon; c != nil {
		status := metav1.ConditionFalse
		if c.Status {
			status = metav1.ConditionTrue
		}
		f.hasExpiring, f.expiring = true, condKey{status, c.Reason, c.Message}
	}
	return f
}

// keyCounts counts the keys of one status pass for the gauges.
type keyCounts struct{ expiring, inGrace float64 }

func (c *keyCounts) add(res *KeyResult) {
	if res.ExpiringSoon != nil && res.ExpiringSoon.Status {
		c.expiring++
	}
	if res.Rotation != nil && res.Rotation.InGrace {
		c.inGrace++
	}
}

func (c *keyCounts) publish() {
	keysExpiringSoon.Set(c.expiring)
	keysInRotationGrace.Set(c.inGrace)
}
