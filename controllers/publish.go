package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/llmgw/llmgw/api/snapshot"
)

// Publishing writes a snapshot as immutable part ConfigMaps plus the head
// (api/snapshot/shard.go), in that order, so that a head never names a part
// that does not exist yet; a gateway assembles only a head whose parts all
// match. Parts are named by content: a new key creates one shard and updates
// the head. Parts that neither the new head nor the one it replaces name are
// deleted after the head moved, so a gateway still assembling the previous
// generation finds it complete until the next write.

var (
	snapshotBytes = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "llmgw_controller_snapshot_bytes",
		Help: "Compressed bytes of the published snapshot's parts (all of them, not what the last write sent).",
	})
	snapshotParts = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "llmgw_controller_snapshot_parts",
		Help: "Parts of the published snapshot (the config part and the key shards).",
	})
	partWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "llmgw_controller_snapshot_part_writes_total",
		Help: "Part ConfigMaps created and deleted, and the compressed bytes created.",
	}, []string{"op"})
)

func init() { metrics.Registry.MustRegister(snapshotBytes, snapshotParts, partWrites) }

// delivery is what the publisher remembers between reconciles.
type delivery struct {
	// ShardBytes is the uncompressed JSON a key shard aims at (0: the
	// snapshot package's default); tests make it small to get many parts.
	ShardBytes int

	mu sync.Mutex
	// headRV is the resourceVersion of the head as this process last wrote
	// it: its own write's watch event needs no reconcile.
	headRV string
	// current names the parts of the head now published.
	current map[string]bool
}

// publish writes snap (sealed by Encode) unless the head already says its
// version. A *snapshot.TooLargeError comes before any write.
func (r *Reconciler) publish(ctx context.Context, log logr.Logger, snap *snapshot.Snapshot) error {
	start := time.Now()
	var cm corev1.ConfigMap
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.ConfigMapName}, &cm)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading ConfigMap %s: %w", r.ConfigMapName, err)
	}
	var prev *snapshot.Head
	if exists {
		// An unreadable head (edited by hand) is rewritten; its parts are
		// then compressed again rather than trusted.
		prev, _ = snapshot.ParseHead([]byte(cm.Data[snapshot.HeadKey]))
	}
	head, parts, err := snapshot.Split(snap, snapshot.SplitOptions{Head: r.ConfigMapName, Previous: prev, ShardBytes: r.delivery.ShardBytes,
		KeyPiece: r.memo.compactPiece})
	if err != nil {
		return fmt.Errorf("splitting snapshot %s into ConfigMaps: %w", snap.Version, err)
	}
	split := time.Since(start)
	have, err := r.listParts(ctx)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if p.Data == nil && have[p.Name] != p.SHA256 {
			// The previous head names it, but it is gone or damaged (someone
			// deleted it): compress everything again.
			if head, parts, err = snapshot.Split(snap, snapshot.SplitOptions{Head: r.ConfigMapName, ShardBytes: r.delivery.ShardBytes,
				KeyPiece: r.memo.compactPiece}); err != nil {
				return fmt.Errorf("splitting snapshot %s into ConfigMaps: %w", snap.Version, err)
			}
			break
		}
	}
	created, sent := 0, 0
	for _, p := range parts {
		if sha, ok := have[p.Name]; ok {
			if sha != p.SHA256 {
				return fmt.Errorf("ConfigMap %s exists with other content (annotation %s=%q); delete it", p.Name, snapshot.PartHashAnnotation, sha)
			}
			continue
		}
		if err := r.Client.Create(ctx, r.partConfigMap(p), client.FieldOwner(FieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating snapshot part %s: %w", p.Name, err)
		}
		created++
		sent += len(p.Data)
	}
	partWrites.WithLabelValues("create").Add(float64(created))
	partWrites.WithLabelValues("create_bytes").Add(float64(sent))

	total := 0
	current := map[string]bool{}
	for _, ref := range head.Parts() {
		total += ref.Bytes
		current[ref.Name] = true
	}
	snapshotBytes.Set(float64(total))
	snapshotParts.Set(float64(len(current)))

	body, err := json.Marshal(head)
	if err != nil {
		return fmt.Errorf("encoding the snapshot head: %w", err)
	}
	before := cm.DeepCopy()
	if !exists {
		cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: r.ConfigMapName}}
	}
	r.label(&cm, snap.Version)
	cm.Data, cm.BinaryData = map[string]string{snapshot.HeadKey: string(body)}, nil
	switch {
	case !exists:
		err = r.Client.Create(ctx, &cm, client.FieldOwner(FieldOwner))
	case headEqual(before, &cm):
		r.delivery.remember(cm.ResourceVersion, current)
		return nil
	default:
		err = r.Client.Update(ctx, &cm, client.FieldOwner(FieldOwner))
	}
	if err != nil {
		return fmt.Errorf("writing ConfigMap %s: %w", r.ConfigMapName, err)
	}
	r.delivery.remember(cm.ResourceVersion, current)
	r.mu.Lock()
	r.writes++
	burst := r.burstStart
	r.mu.Unlock()
	snapshotWrites.Inc()
	if !burst.IsZero() {
		publishSeconds.Observe(r.now().Sub(burst).Seconds())
	}

	keep := maps.Clone(current)
	if prev != nil {
		for _, ref := range prev.Parts() {
			keep[ref.Name] = true
		}
	}
	deleted := r.collect(ctx, log, have, keep)
	log.Info("published snapshot", "configMap", r.ConfigMapName, "version", snap.Version, "keys", len(snap.Keys),
		"keyShards", len(head.Keys), "bytes", total, "partsCreated", created, "bytesSent", sent+len(body), "partsDeleted", deleted,
		"splitMs", split.Milliseconds(), "publishMs", time.Since(start).Milliseconds())
	return nil
}

// listParts maps the parts that exist to their content hash annotation:
// metadata only, uncached, so a part deleted a moment ago is not trusted.
func (r *Reconciler) listParts(ctx context.Context) (map[string]string, error) {
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := r.APIReader.List(ctx, &list, client.InNamespace(r.Namespace),
		client.MatchingLabels{snapshot.SnapshotLabel: r.ConfigMapName}); err != nil {
		return nil, fmt.Errorf("listing the snapshot's ConfigMaps: %w", err)
	}
	have := make(map[string]string, len(list.Items))
	for _, o := range list.Items {
		if o.Name != r.ConfigMapName {
			have[o.Name] = o.Annotations[snapshot.PartHashAnnotation]
		}
	}
	return have, nil
}

// collect deletes the parts not in keep; a failure is logged and left for
// the next write (a stale part costs etcd space, not correctness).
func (r *Reconciler) collect(ctx context.Context, log logr.Logger, have map[string]string, keep map[string]bool) int {
	n := 0
	for name := range have {
		if keep[name] {
			continue
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: name}}
		if err := r.Client.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
			log.Error(err, "deleting an old snapshot part; retried after the next write", "configMap", name)
			continue
		}
		n++
	}
	partWrites.WithLabelValues("delete").Add(float64(n))
	return n
}

func (r *Reconciler) partConfigMap(p snapshot.Part) *corev1.ConfigMap {
	immutable := true
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: p.Name,
			Annotations: map[string]string{snapshot.PartHashAnnotation: p.SHA256}},
		Immutable:  &immutable,
		BinaryData: map[string][]byte{snapshot.PartKey: p.Data},
	}
	r.labels(cm)
	return cm
}

func (r *Reconciler) labels(cm *corev1.ConfigMap) {
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels[ManagedByLabel] = ManagedByValue
	cm.Labels[snapshot.ComponentLabel] = snapshot.ComponentValue
	cm.Labels[snapshot.SnapshotLabel] = r.ConfigMapName
}

func (r *Reconciler) label(cm *corev1.ConfigMap, version string) {
	r.labels(cm)
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[snapshot.VersionAnnotation] = version
}

func headEqual(a, b *corev1.ConfigMap) bool {
	return maps.Equal(a.Data, b.Data) && len(a.BinaryData) == 0 &&
		maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations)
}

func (d *delivery) remember(rv string, current map[string]bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.headRV, d.current = rv, current
}

// snapshotEvents filters the snapshot ConfigMaps' events (metadata only):
// the head's, but not the echo of this process's own write, and a part's
// deletion while the published head names it. The controller's own part
// creations and its garbage collection need no compile.
func (r *Reconciler) snapshotEvents() builder.Predicates {
	relevant := func(o client.Object) bool {
		r.delivery.mu.Lock()
		defer r.delivery.mu.Unlock()
		if o.GetName() == r.ConfigMapName {
			return o.GetResourceVersion() != r.delivery.headRV
		}
		return false
	}
	return builder.WithPredicates(predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return relevant(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool { return relevant(e.ObjectNew) },
		DeleteFunc: func(e event.DeleteEvent) bool {
			r.delivery.mu.Lock()
			defer r.delivery.mu.Unlock()
			return e.Object.GetName() == r.ConfigMapName || r.delivery.current[e.Object.GetName()]
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	})
}

// snapshotSelector selects the head and the parts in the manager's cache.
func snapshotSelector(head string) labels.Selector {
	return labels.SelectorFromSet(labels.Set{snapshot.SnapshotLabel: head})
}
