package controllers

import (
	"context"
	"errors"
	"flag"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestSettle: compile only after Debounce of quiet, or DebounceMax after the
// first event of a burst, whichever comes first.
func TestSettle(t *testing.T) {
	now := time.Unix(1000, 0)
	r := &Reconciler{Debounce: 200 * time.Millisecond, DebounceMax: time.Second, Now: func() time.Time { return now }}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()

	if w := r.settle(); w != 0 {
		t.Fatalf("no pending events: want 0, got %v", w)
	}
	r.touch(q, true)
	now = now.Add(50 * time.Millisecond)
	if w := r.settle(); w != 150*time.Millisecond {
		t.Fatalf("50ms after the only event: want 150ms, got %v", w)
	}
	// A steady stream of events every 100ms never goes quiet: DebounceMax cuts in.
	for range 9 {
		now = now.Add(100 * time.Millisecond)
		r.touch(q, true)
	}
	now = now.Add(50 * time.Millisecond) // 1s after the first event
	if w := r.settle(); w != 0 {
		t.Fatalf("DebounceMax reached: want 0, got %v", w)
	}
	if w := r.settle(); w != 0 {
		t.Fatalf("burst consumed: want 0, got %v", w)
	}
}

func TestStripSecret(t *testing.T) {
	in := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "n", UID: types.UID("u"), ResourceVersion: "7",
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"stringData":{"k":"v"}}`}},
		Data: map[string][]byte{"apiKey": []byte("sk-secret"), "blank": {}},
	}
	out, err := stripSecret(in)
	if err != nil {
		t.Fatal(err)
	}
	s := out.(*corev1.Secret)
	if s.Name != "s" || s.Namespace != "n" || s.ResourceVersion != "7" {
		t.Fatalf("identity lost: %+v", s.ObjectMeta)
	}
	// Presence survives, content does not: a set value becomes the marker,
	// an empty one nil, and only the set one counts as a credential.
	if v, ok := s.Data["apiKey"]; !ok || string(v) != string(secretValuePresent) {
		t.Fatalf("want key kept, value replaced by the marker: %q", s.Data)
	}
	if v, ok := s.Data["blank"]; !ok || v != nil {
		t.Fatalf("want the empty value kept empty: %q", s.Data)
	}
	if got := secretKeys(s); len(got) != 1 || got[0] != "apiKey" {
		t.Fatalf("secretKeys of the stripped Secret: %v, want [apiKey]", got)
	}
	if len(s.Annotations) != 0 {
		t.Fatalf("annotations may repeat the secret: %v", s.Annotations)
	}
	if _, err := stripSecret("tombstone"); err != nil {
		t.Fatal(err)
	}
}

func TestMainFlags(t *testing.T) {
	if err := Main(context.Background(), []string{"--help"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: want flag.ErrHelp, got %v", err)
	}
	if err := Main(context.Background(), []string{"extra"}); err == nil {
		t.Fatal("positional arguments must be refused")
	}
}

// TestReusable: a round compiles again after an input event, after the
// next key expiry, and when nothing was compiled yet; a round after only a
// gateway event (a report, a Pod) reuses the last compilation.
func TestReusable(t *testing.T) {
	now := time.Unix(1000, 0)
	expiry := now.Add(time.Minute)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	cases := []struct {
		name     string
		compiled *compilation
		input    bool
		later    time.Duration
		reuse    bool
	}{
		{"nothing compiled yet", nil, false, 0, false},
		{"a gateway report", &compilation{}, false, 0, true},
		{"a GatewayKey changed", &compilation{}, true, 0, false},
		{"a report before the next expiry", &compilation{st: Statuses{NextExpiry: &expiry}}, false, 59 * time.Second, true},
		{"a report after the next expiry", &compilation{st: Statuses{NextExpiry: &expiry}}, false, time.Minute, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			at := now
			r := &Reconciler{Now: func() time.Time { return at }, compiled: c.compiled}
			r.touch(q, c.input)
			at = at.Add(c.later)
			if got := r.reusable() != nil; got != c.reuse {
				t.Fatalf("reuse %v, want %v", got, c.reuse)
			}
			if c.input && r.reusable() == nil {
				t.Fatal("the input event was consumed by its round; the next may reuse")
			}
		})
	}
}
