package testutil

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/llmgw/llmgw/api/snapshot"
)

// SnapshotConfigMaps are the ConfigMaps that publish s under head in ns, as
// the controller writes them (api/snapshot/shard.go): the parts, then the
// head. s is sealed (Encode) on the way.
func SnapshotConfigMaps(ns, head string, s *snapshot.Snapshot, shardBytes int) (parts []*corev1.ConfigMap, headCM *corev1.ConfigMap, err error) {
	if _, err := snapshot.Encode(s); err != nil {
		return nil, nil, err
	}
	h, ps, err := snapshot.Split(s, snapshot.SplitOptions{Head: head, ShardBytes: shardBytes})
	if err != nil {
		return nil, nil, err
	}
	labels := map[string]string{snapshot.SnapshotLabel: head, snapshot.ComponentLabel: snapshot.ComponentValue}
	immutable := true
	for _, p := range ps {
		parts = append(parts, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: ns, Labels: labels,
				Annotations: map[string]string{snapshot.PartHashAnnotation: p.SHA256}},
			Immutable:  &immutable,
			BinaryData: map[string][]byte{snapshot.PartKey: p.Data},
		})
	}
	body, err := json.Marshal(h)
	if err != nil {
		return nil, nil, err
	}
	headCM = &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: head, Namespace: ns, Labels: labels,
			Annotations: map[string]string{snapshot.VersionAnnotation: h.Version}},
		Data: map[string]string{snapshot.HeadKey: string(body)},
	}
	return parts, headCM, nil
}

// PublishSnapshot writes s under head in ns the way the controller does:
// every part that does not exist yet, then the head (created or replaced).
// Old parts are left alone. It returns the version.
func PublishSnapshot(ctx context.Context, cs kubernetes.Interface, ns, head string, s *snapshot.Snapshot) (string, error) {
	parts, h, err := SnapshotConfigMaps(ns, head, s, 0)
	if err != nil {
		return "", err
	}
	for _, p := range parts {
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("creating part %s: %w", p.Name, err)
		}
	}
	return h.Annotations[snapshot.VersionAnnotation], PutHead(ctx, cs, h)
}

// PutHead creates or replaces a head ConfigMap (data and labels).
func PutHead(ctx context.Context, cs kubernetes.Interface, h *corev1.ConfigMap) error {
	cur, err := cs.CoreV1().ConfigMaps(h.Namespace).Get(ctx, h.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cs.CoreV1().ConfigMaps(h.Namespace).Create(ctx, h, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	cur.Data, cur.Labels, cur.Annotations = h.Data, h.Labels, h.Annotations
	_, err = cs.CoreV1().ConfigMaps(h.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
	return err
}

// ReadSnapshot assembles the snapshot published under head the way a
// gateway does (api/snapshot: head, parts checked against their hashes,
// assembly), seals it, and checks that it has the head's version. get
// fetches one ConfigMap by name.
func ReadSnapshot(get func(name string) (*corev1.ConfigMap, error), head string) (*snapshot.Snapshot, error) {
	cm, err := get(head)
	if err != nil {
		return nil, err
	}
	h, err := snapshot.ParseHead([]byte(cm.Data[snapshot.HeadKey]))
	if err != nil {
		return nil, err
	}
	if v := cm.Annotations[snapshot.VersionAnnotation]; v != h.Version {
		return nil, fmt.Errorf("head annotation says %s, its data %s", v, h.Version)
	}
	read := func(ref snapshot.PartRef) ([]byte, error) {
		p, err := get(ref.Name)
		if err != nil {
			return nil, err
		}
		if p.Immutable == nil || !*p.Immutable || p.Labels[snapshot.SnapshotLabel] != head {
			return nil, fmt.Errorf("part %s is not immutable or not labelled %s", ref.Name, snapshot.Selector(head))
		}
		return snapshot.ReadPart(ref, p.BinaryData[snapshot.PartKey])
	}
	raw, err := read(h.Config)
	if err != nil {
		return nil, err
	}
	config, err := snapshot.ParseConfigPart(raw)
	if err != nil {
		return nil, err
	}
	shards := make([][]snapshot.Key, len(h.Keys))
	for i, ref := range h.Keys {
		if raw, err = read(ref); err != nil {
			return nil, err
		}
		if shards[i], err = snapshot.ParseKeyPart(raw); err != nil {
			return nil, err
		}
	}
	s, err := snapshot.Assemble(h, config, shards)
	if err != nil {
		return nil, err
	}
	if _, err := snapshot.Encode(s); err != nil {
		return nil, err
	}
	if s.Version != h.Version {
		return nil, fmt.Errorf("the parts assemble to %s, the head says %s", s.Version, h.Version)
	}
	return s, nil
}
