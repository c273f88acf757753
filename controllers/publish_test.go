package controllers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/test/testutil"
)

// writeLog records the writes a fake API server sees.
type writeLog struct {
	mu  sync.Mutex
	ops []string // "create <name>", "update <name>", "delete <name>"
}

func (w *writeLog) add(op string, obj client.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ops = append(w.ops, op+" "+obj.GetName())
}

func (w *writeLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	ops := w.ops
	w.ops = nil
	return ops
}

func publisher(t testing.TB) (*Reconciler, client.Client, *writeLog) {
	t.Helper()
	scheme, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	log := &writeLog{}
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			log.add("create", obj)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			log.add("update", obj)
			return c.Update(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			log.add("delete", obj)
			return c.Delete(ctx, obj, opts...)
		},
	}).Build()
	r := &Reconciler{Client: c, APIReader: c, Namespace: "ns", ConfigMapName: snapshot.DefaultConfigMapName}
	r.delivery.ShardBytes = 4 << 10 // several shards from a few hundred keys
	return r, c, log
}

func sealedScale(t *testing.T, keys int) *snapshot.Snapshot {
	t.Helper()
	s := testutil.ScaleSnapshot(keys, 5)
	if _, err := snapshot.Encode(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func publishedBy(t *testing.T, c client.Client) *snapshot.Snapshot {
	t.Helper()
	s, err := testutil.ReadSnapshot(func(name string) (*corev1.ConfigMap, error) {
		var cm corev1.ConfigMap
		return &cm, c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, &cm)
	}, snapshot.DefaultConfigMapName)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func partNames(t *testing.T, c client.Client) []string {
	t.Helper()
	var l corev1.ConfigMapList
	if err := c.List(context.Background(), &l, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, cm := range l.Items {
		if cm.Name != snapshot.DefaultConfigMapName {
			n = append(n, cm.Name)
		}
	}
	slices.Sort(n)
	return n
}

// TestPublishWritesOnlyWhatChanged follows a snapshot through three
// versions: the first writes every part then the head; a one-key change
// writes one shard and the head and deletes nothing (a gateway may still be
// assembling the previous generation); the next change deletes the parts
// that neither it nor its predecessor name. The same version again writes
// nothing.
func TestPublishWritesOnlyWhatChanged(t *testing.T) {
	ctx := context.Background()
	r, c, log := publisher(t)
	s1 := sealedScale(t, 300)
	if err := r.publish(ctx, logr.Discard(), s1); err != nil {
		t.Fatal(err)
	}
	first := log.take()
	parts1 := partNames(t, c)
	// Every part, then the head: a head never names a part not written yet.
	if len(parts1) < 4 || len(first) != len(parts1)+1 || first[len(first)-1] != "create "+r.ConfigMapName {
		t.Fatalf("first publication: %v (parts %v)", first, parts1)
	}
	if got := publishedBy(t, c); got.Version != s1.Version {
		t.Fatalf("published %s, want %s", got.Version, s1.Version)
	}

	if err := r.publish(ctx, logr.Discard(), s1); err != nil {
		t.Fatal(err)
	}
	if ops := log.take(); len(ops) != 0 || r.Writes() != 1 {
		t.Fatalf("the same version again wrote %v (writes %d)", ops, r.Writes())
	}

	s2 := s1.Clone()
	s2.Keys[10].Disabled = !s2.Keys[10].Disabled
	s2.Version = ""
	if _, err := snapshot.Encode(s2); err != nil {
		t.Fatal(err)
	}
	if err := r.publish(ctx, logr.Discard(), s2); err != nil {
		t.Fatal(err)
	}
	second := log.take()
	if len(second) != 2 || second[0][:6] != "create" || second[1] != "update "+r.ConfigMapName {
		t.Fatalf("one key changed: %v, want one part created and the head updated", second)
	}
	if got := publishedBy(t, c); got.Version != s2.Version {
		t.Fatalf("published %s, want %s", got.Version, s2.Version)
	}
	if n := len(partNames(t, c)); n != len(parts1)+1 {
		t.Fatalf("%d parts after the second version, want the previous generation kept (%d)", n, len(parts1)+1)
	}

	s3 := s2.Clone()
	s3.Keys[200].Disabled = !s3.Keys[200].Disabled
	s3.Version = ""
	if _, err := snapshot.Encode(s3); err != nil {
		t.Fatal(err)
	}
	slotOf := func(id string) int { return snapshot.ShardOf(id, len(parts1)-1) }
	if slotOf(s3.Keys[200].ID) == slotOf(s3.Keys[10].ID) {
		t.Fatal("fixture: pick keys in different shards")
	}
	if err := r.publish(ctx, logr.Discard(), s3); err != nil {
		t.Fatal(err)
	}
	third := log.take()
	var deletes int
	for _, op := range third {
		if op[:6] == "delete" {
			deletes++
		}
	}
	// s1's shard of key 10 is named by neither s3 nor s2: collected, after
	// the head moved.
	if deletes != 1 || len(third) != 3 || third[2][:6] != "delete" {
		t.Fatalf("third version: %v, want a create, the head update and one delete", third)
	}
	if got := publishedBy(t, c); got.Version != s3.Version {
		t.Fatalf("published %s, want %s", got.Version, s3.Version)
	}
}

// TestPublishRepairsADeletedPart: a part the head names but that is gone is
// written again, although the head already says this version.
func TestPublishRepairsADeletedPart(t *testing.T) {
	ctx := context.Background()
	r, c, log := publisher(t)
	s := sealedScale(t, 100)
	if err := r.publish(ctx, logr.Discard(), s); err != nil {
		t.Fatal(err)
	}
	victim := partNames(t, c)[1]
	if err := c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: victim}}); err != nil {
		t.Fatal(err)
	}
	log.take()
	if err := r.publish(ctx, logr.Discard(), s); err != nil {
		t.Fatal(err)
	}
	if ops := log.take(); !slices.Equal(ops, []string{"create " + victim}) {
		t.Fatalf("repair wrote %v, want only %s created", ops, victim)
	}
	publishedBy(t, c)
}

// TestPublishTooLargeWritesNothing: a snapshot that cannot fit is refused
// with a *snapshot.TooLargeError before any write.
func TestPublishTooLargeWritesNothing(t *testing.T) {
	ctx := context.Background()
	r, c, log := publisher(t)
	s := sealedScale(t, 10)
	rng := rand.New(rand.NewPCG(5, 5))
	for i := range 5000 {
		model := make([]byte, 200)
		for j := range model {
			model[j] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[rng.IntN(62)]
		}
		s.Aliases = append(s.Aliases, snapshot.Alias{Name: fmt.Sprintf("big-%05d", i), Primary: snapshot.Route{Provider: "vendor-00", Model: string(model)}})
	}
	s.Version = ""
	if _, err := snapshot.Encode(s); err != nil {
		t.Fatal(err)
	}
	err := r.publish(ctx, logr.Discard(), s)
	var tl *snapshot.TooLargeError
	if !errors.As(err, &tl) || tl.Part != "config" {
		t.Fatalf("want a TooLargeError for the config part, got %v", err)
	}
	if ops := log.take(); len(ops) != 0 || len(partNames(t, c)) != 0 {
		t.Fatalf("writes before refusing: %v", ops)
	}
}
