// Package kube feeds the gateway from the cluster: it watches the one
// snapshot ConfigMap through the API (not a mounted file, whose kubelet sync
// can take a minute) and resolves provider credentials from Secrets.
package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/llmgw/llmgw/gateway/snapshot"
)

// SnapshotKey is the ConfigMap data key holding the snapshot JSON.
const SnapshotKey = "snapshot.json"

// Watch runs an informer restricted to namespace/name until ctx ends. Every
// add or update hands the parsed snapshot to apply, or the parse error to
// reject; the caller keeps its last good snapshot on reject. It returns once
// the informer has synced (or ctx ended), leaving the watch running.
func Watch(ctx context.Context, cs kubernetes.Interface, namespace, name string,
	apply func(*snapshot.Snapshot), reject func(error)) error {
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", namespace,
		fields.OneTermEqualSelector("metadata.name", name))
	handle := func(obj any) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok || cm.Name != name {
			return
		}
		snap, err := Decode(cm)
		if err != nil {
			reject(err)
			return
		}
		apply(snap)
	}
	_, informer := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    &corev1.ConfigMap{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    handle,
			UpdateFunc: func(_, obj any) { handle(obj) },
			DeleteFunc: func(any) {
				reject(fmt.Errorf("snapshot ConfigMap %s/%s was deleted; keeping the running snapshot", namespace, name))
			},
		},
	})
	go informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return fmt.Errorf("watching ConfigMap %s/%s: %w", namespace, name, context.Cause(ctx))
	}
	return nil
}

// Decode parses the snapshot carried by a ConfigMap.
func Decode(cm *corev1.ConfigMap) (*snapshot.Snapshot, error) {
	data, ok := cm.Data[SnapshotKey]
	if !ok {
		return nil, fmt.Errorf("ConfigMap %s/%s has no %q key", cm.Namespace, cm.Name, SnapshotKey)
	}
	snap, err := snapshot.Parse([]byte(data))
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return snap, nil
}

// WaitFirst blocks until the first valid snapshot arrived, so the gateway
// never serves before it has configuration.
func WaitFirst(ctx context.Context, first <-chan struct{}, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-first:
		return nil
	case <-t.C:
		return errors.New("no valid snapshot arrived in time")
	case <-ctx.Done():
		return ctx.Err()
	}
}
