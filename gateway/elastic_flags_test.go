package gateway

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/llmgw/llmgw/gateway/peers"
)

// The degraded divisor comes from the same discovery as the peer set: 0
// (keep the divisor) until the StatefulSet is read, then its ready
// replicas, at least 1.
func TestReadyFromDiscovery(t *testing.T) {
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gw"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)}, Status: appsv1.StatefulSetStatus{ReadyReplicas: 2}}
	api := fake.NewClientset()
	d, err := peers.NewDiscovery(peers.DiscoveryConfig{Client: api, Namespace: "ns", StatefulSet: "gw", ClaimTemplate: "data"})
	if err != nil {
		t.Fatal(err)
	}
	ready := readyFromDiscovery(d)
	if n := ready(t.Context()); n != 0 {
		t.Fatalf("before discovery: %d, want 0 (not known)", n)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := api.AppsV1().StatefulSets("ns").Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []int32{2, 0} {
		sts.Status.ReadyReplicas = want
		if _, err := api.AppsV1().StatefulSets("ns").Update(ctx, sts, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		for ready(ctx) != max(int(want), 1) {
			if ctx.Err() != nil {
				t.Fatalf("divisor %d, want %d", ready(ctx), max(want, 1))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
