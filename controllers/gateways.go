package controllers

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultGatewaySelector matches the gateway StatefulSet's Pods in
// config/gateway and charts/llmgw.
const DefaultGatewaySelector = "app.kubernetes.io/name=llmgw,app.kubernetes.io/component=gateway"

// GatewayStatusComponent labels the ConfigMap the gateways report into.
const GatewayStatusComponent = "gateway-status"

// GatewayWatch finds the gateway replicas — Pods matching Selector, from the
// manager's cache — and what they report, from the status ConfigMap in a
// cache of its own (the manager's ConfigMap informer is pinned by a field
// selector to the snapshot's name, so that RBAC can pin it too).
type GatewayWatch struct {
	Namespace string
	ConfigMap string
	Selector  labels.Selector
	// selectorText is the selector as the user wrote it, for messages.
	selectorText string

	client client.Client
	cache  cache.Cache
	log    logr.Logger
}

// cacheRunnable makes the manager start the cache with its other caches,
// before any controller waits on it.
type cacheRunnable struct{ cache.Cache }

func (c cacheRunnable) GetCache() cache.Cache { return c.Cache }

// newGatewayWatch registers the status ConfigMap's cache with mgr. The Pod
// informer is the manager's (restricted to selector in NewManager).
func newGatewayWatch(mgr ctrl.Manager, namespace, configMap, selectorText string, log logr.Logger) (*GatewayWatch, error) {
	selector, err := labels.Parse(selectorText)
	if err != nil {
		return nil, fmt.Errorf("gateway selector %q: %w", selectorText, err)
	}
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme:            mgr.GetScheme(),
		Mapper:            mgr.GetRESTMapper(),
		HTTPClient:        mgr.GetHTTPClient(),
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {Field: fields.OneTermEqualSelector("metadata.name", configMap)},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the gateway status cache: %w", err)
	}
	if err := mgr.Add(cacheRunnable{c}); err != nil {
		return nil, fmt.Errorf("adding the gateway status cache: %w", err)
	}
	return &GatewayWatch{Namespace: namespace, ConfigMap: configMap, Selector: selector, selectorText: selectorText,
		client: mgr.GetClient(), cache: c, log: log}, nil
}

// fleet lists the gateway Pods and pairs them with their reports. It
// creates the status ConfigMap when it is missing: the gateways may only
// patch it (their Role cannot create, which resourceNames cannot limit).
func (g *GatewayWatch) fleet(ctx context.Context) (fleet, error) {
	var pods corev1.PodList
	if err := g.client.List(ctx, &pods, client.InNamespace(g.Namespace), client.MatchingLabelsSelector{Selector: g.Selector}); err != nil {
		return fleet{}, fmt.Errorf("listing gateway Pods: %w", err)
	}
	var cm corev1.ConfigMap
	err := g.cache.Get(ctx, client.ObjectKey{Namespace: g.Namespace, Name: g.ConfigMap}, &cm)
	switch {
	case apierrors.IsNotFound(err):
		create := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: g.Namespace, Name: g.ConfigMap,
			Labels: map[string]string{ManagedByLabel: ManagedByValue, ComponentLabel: GatewayStatusComponent}}}
		// Not fatal: without it no replica has reported, which Programmed says.
		if err := g.client.Create(ctx, create, client.FieldOwner(FieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
			g.log.Error(err, "creating the gateway status ConfigMap", "configMap", g.ConfigMap)
		}
	case err != nil:
		return fleet{}, fmt.Errorf("reading ConfigMap %s: %w", g.ConfigMap, err)
	}
	return newFleet(g.selectorText, pods.Items, cm.Data), nil
}
