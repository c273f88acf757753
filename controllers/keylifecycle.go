package controllers

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// A key's lifecycle as its status tells it: a rotation (spec.previous) and
// its grace, and an expiry coming (ExpiringSoon). Both change with the time
// alone, so Compile decides them at Inputs.Now and the reconciler runs again
// at the next moment one of them changes (Statuses.NextExpiry).

// DefaultKeyExpiryWarning is how long before a key's expiresAt the
// controller starts warning (--key-expiry-warning).
const DefaultKeyExpiryWarning = 7 * 24 * time.Hour

// keyClock decides what of a key's status depends on the time alone, at
// one compilation's Now. The ExpiringSoon conditions that name no time are
// made once per compilation: a Sprintf for each of 50,000 keys would be a
// measurable part of it.
type keyClock struct {
	now time.Time
	// window is --key-expiry-warning; 0 turns ExpiringSoon off.
	window                time.Duration
	never, later, expired *Condition
}

func newKeyClock(now time.Time, window time.Duration) *keyClock {
	c := &keyClock{now: now, window: window}
	if window > 0 {
		c.never = &Condition{Reason: v1alpha1.ReasonNotExpiringSoon, Message: "the key does not expire"}
		c.later = &Condition{Reason: v1alpha1.ReasonNotExpiringSoon, Message: fmt.Sprintf("the key expires more than %s from now", window)}
		c.expired = &Condition{Reason: v1alpha1.ReasonNotExpiringSoon, Message: "the key has expired (see the Ready condition)"}
	}
	return c
}

// expiringSoon is the ExpiringSoon condition of a key expiring at
// expiresAt (nil: never): True from window before it until it; nil when
// the warning is off. The messages name absolute times only, so that a
// condition does not change (and get written again) with every compile.
func (c *keyClock) expiringSoon(expiresAt *time.Time) *Condition {
	switch {
	case c.window <= 0:
		return nil
	case expiresAt == nil:
		return c.never
	case !c.now.Before(*expiresAt):
		return c.expired
	case c.now.Before(expiresAt.Add(-c.window)):
		return c.later
	}
	return &Condition{Status: true, Reason: v1alpha1.ReasonExpiresSoon,
		Message: fmt.Sprintf("the key expires at %s, within %s: the gateways then answer 401 key_expired; rotate it (llmgw keys rotate) or move spec.expiresAt", expiresAt.UTC().Format(time.RFC3339), c.window)}
}

// rotation is the status.rotation of a key whose previous key is prev
// (nil: none), fingerprinted fp.
func (c *keyClock) rotation(prev *snapshot.PreviousKey, fp string) *v1alpha1.KeyRotationStatus {
	if prev == nil {
		return nil
	}
	return &v1alpha1.KeyRotationStatus{PreviousFingerprint: fp, GraceEndsAt: metav1.NewTime(prev.Until), InGrace: prev.Accepts(c.now)}
}

// sooner is next, or the first moment after now at which gk's status
// changes by the time alone when that comes before next: its expiresAt,
// the start of its expiry warning (window before it), and the end of its
// previous key's grace. Statuses.NextExpiry is the soonest of them all.
func sooner(next *time.Time, gk *v1alpha1.GatewayKey, now time.Time, window time.Duration) *time.Time {
	consider := func(t time.Time) {
		if t.After(now) && (next == nil || t.Before(*next)) {
			u := t.UTC()
			next = &u
		}
	}
	if e := gk.Spec.ExpiresAt; e != nil {
		consider(e.Time)
		if window > 0 {
			consider(e.Add(-window))
		}
	}
	if p := gk.Spec.Previous; p != nil {
		consider(p.AcceptedUntil.Time)
	}
	return next
}
