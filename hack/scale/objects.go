package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
	"github.com/llmgw/llmgw/gateway/keys"
)

// runLabel marks every object this tool creates.
const runLabel = "llmgw.dev/scale"

type kube struct {
	c   config
	rc  *rest.Config
	cs  kubernetes.Interface
	cl  client.Client
	lim *pacer
}

// pacer lets calls through at a fixed rate (a token every 1/qps, at most a
// tenth of a second's worth banked).
type pacer struct {
	mu    sync.Mutex
	next  time.Time
	every time.Duration
	bank  time.Duration
}

func newPacer(qps float64) *pacer {
	every := time.Duration(float64(time.Second) / max(qps, 0.001))
	return &pacer{every: every, bank: max(every, 100*time.Millisecond)}
}

// Wait blocks until the caller's turn.
func (p *pacer) Wait(ctx context.Context) error {
	p.mu.Lock()
	now := time.Now()
	if p.next.Before(now.Add(-p.bank)) {
		p.next = now.Add(-p.bank)
	}
	at := p.next
	p.next = p.next.Add(p.every)
	p.mu.Unlock()
	if d := time.Until(at); d > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
	}
	return nil
}

func newKube(c config) (*kube, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.kubeconfig
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	// The tool's own pace is -qps; client-go's limiter must not be tighter.
	rc.QPS, rc.Burst = float32(c.qps*2+50), int(c.qps*2+100)
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	cl, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return &kube{c: c, rc: rc, cs: cs, cl: cl, lim: newPacer(c.qps)}, nil
}

func (k *kube) labels() map[string]string { return map[string]string{runLabel: k.c.run} }

func aliasName(i int) string { return fmt.Sprintf("scale-alias-%04d", i) }

func keyName(i int) string { return fmt.Sprintf("scale-key-%06d", i) }

// newKey makes a key as `llmgw keys create` does; the plaintext is returned
// for the samples and dropped for the bulk.
func (k *kube) newKey(name string, models []string) (string, *v1alpha1.GatewayKey, error) {
	plaintext, entry, err := keys.Create(keys.CreateOptions{ID: name, Models: models, RPM: 600, Burst: 100})
	if err != nil {
		return "", nil, err
	}
	gk, err := keys.GatewayKey(entry, k.c.namespace)
	if err != nil {
		return "", nil, err
	}
	gk.Labels = k.labels()
	return plaintext, gk, nil
}

// createAll creates n objects made by mk, -workers at a time at -qps; one
// that exists already counts as created.
func (k *kube) createAll(ctx context.Context, what string, n int, mk func(i int) (client.Object, error)) error {
	var next, done atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	stopProgress := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case <-t.C:
				d := done.Load()
				logf("  %s: %d/%d created (%.0f/s)", what, d, n, float64(d)/time.Since(start).Seconds())
			}
		}
	}()
	defer close(stopProgress)
	for range k.c.workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				obj, err := mk(i)
				if err == nil {
					err = k.lim.Wait(ctx)
				}
				if err == nil {
					err = k.cl.Create(ctx, obj)
					if apierrors.IsAlreadyExists(err) {
						err = nil
					}
				}
				if err != nil {
					once.Do(func() { firstErr = fmt.Errorf("creating %s %d: %w", what, i, err) })
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	logf("  %s: %d created in %s", what, n, time.Since(start).Round(time.Millisecond))
	return ctx.Err()
}

// cleanup deletes every object labelled with the run (DeleteAllOf: one call
// per kind) and waits until the published snapshot no longer has them.
func (k *kube) cleanup(ctx context.Context) error {
	logf("cleanup: deleting GatewayKeys and ModelAliases labelled %s=%s", runLabel, k.c.run)
	sel := client.MatchingLabels(k.labels())
	in := client.InNamespace(k.c.namespace)
	deadline := time.Now().Add(20 * time.Minute)
	for {
		// A delete-collection of 50,000 objects can outlast the request
		// (the API server resets the stream while it goes on deleting):
		// ask again until nothing is listed.
		err := errors.Join(
			k.cl.DeleteAllOf(ctx, &v1alpha1.GatewayKey{}, in, sel),
			k.cl.DeleteAllOf(ctx, &v1alpha1.ModelAlias{}, in, sel))
		var keys v1alpha1.GatewayKeyList
		var aliases v1alpha1.ModelAliasList
		lerr := errors.Join(k.cl.List(ctx, &keys, in, sel, client.Limit(1)), k.cl.List(ctx, &aliases, in, sel, client.Limit(1)))
		if err == nil && lerr == nil && len(keys.Items) == 0 && len(aliases.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cleanup: objects still listed after 20 minutes: %v", errors.Join(err, lerr))
		}
		if err != nil {
			logf("cleanup: %v; retrying", err)
		}
		time.Sleep(5 * time.Second)
	}
	logf("cleanup: done")
	return nil
}

// head reads the published head (nil when there is none yet).
func (k *kube) head(ctx context.Context) (*snapshot.Head, *corev1.ConfigMap, error) {
	cm, err := k.cs.CoreV1().ConfigMaps(k.c.namespace).Get(ctx, snapshot.DefaultConfigMapName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	h, err := snapshot.ParseHead([]byte(cm.Data[snapshot.HeadKey]))
	return h, cm, err
}

func headKeys(h *snapshot.Head) int {
	n := 0
	for _, r := range h.Keys {
		n += r.Keys
	}
	return n
}

func logf(format string, args ...any) {
	fmt.Printf("%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}
