package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/llmgw/llmgw/api/snapshot"
)

// A published snapshot is a head ConfigMap and immutable part ConfigMaps,
// all labelled snapshot.SnapshotLabel=<head> (api/snapshot/shard.go). One
// informer watches them with that label selector; whenever something
// changed, the assembler looks at the head and the parts it names, and hands
// a snapshot on only when every part is there with the hash the head says:
// never a half-assembled one. Decoded parts are kept by name and hash, so a
// one-key change decodes one shard, not 50,000 keys.

// partWaitReport is how long a head may name parts that are missing or do
// not match before the gateway reports it (health, reload-failed metric, the
// controller's Programmed condition): the parts are written before the head,
// so a wait longer than a few watch events means they are gone or damaged.
const partWaitReport = 30 * time.Second

type decodedPart struct {
	sha    string
	config *snapshot.Snapshot // the config part, or
	keys   []snapshot.Key     // a key shard
}

type assembler struct {
	namespace, head string
	store           cache.Store
	apply           func(*snapshot.Snapshot)
	reject          func(error)
	log             *slog.Logger
	now             func() time.Time
	waitReport      time.Duration

	parts   map[string]decodedPart // by part name
	decodes int                    // parts decoded so far
	// handed is the head version last handed to apply, or whose assembly
	// was rejected; the same head again is not assembled again unless
	// something was rejected since (so a good snapshot seen again clears
	// an earlier rejection, as the sink's Apply rule wants).
	handed   string
	rejected bool
	// broken is a head version whose parts are complete but do not
	// assemble; it is not tried again.
	broken   string
	headSeen bool
	// waiting is the head version whose parts are awaited, since when, and
	// whether that wait was reported already.
	waiting      string
	waitingSince time.Time
	waitReported bool
}

// watchParts runs an informer on the head `name` and its parts in namespace
// until ctx ends, handing each assembled snapshot to apply and each
// unreadable head or part, a deleted head, or parts awaited longer than
// waitReport to reject (the caller keeps its last good snapshot). It returns
// once the informer has synced and the first assembly was tried (or ctx
// ended), leaving the watch running.
func watchParts(ctx context.Context, cs kubernetes.Interface, namespace, name string,
	apply func(*snapshot.Snapshot), reject func(error), log *slog.Logger, waitReport time.Duration) error {
	lw := cache.NewFilteredListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", namespace,
		func(o *metav1.ListOptions) { o.LabelSelector = snapshot.Selector(name) })
	kick := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	store, informer := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    &corev1.ConfigMap{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    poke,
			UpdateFunc: func(_, obj any) { poke(obj) },
			DeleteFunc: poke,
		},
	})
	if waitReport <= 0 {
		waitReport = partWaitReport
	}
	a := &assembler{namespace: namespace, head: name, store: store, apply: apply, reject: reject, log: log,
		now: time.Now, waitReport: waitReport, parts: map[string]decodedPart{}}
	go informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return fmt.Errorf("watching the snapshot ConfigMaps %s/%s: %w", namespace, snapshot.Selector(name), context.Cause(ctx))
	}
	// Events coalesce: a burst (the initial list, a new generation's parts
	// and head) costs one assembly, taken from the store's current state.
	// The ticker notices a wait that has lasted too long.
	select {
	case <-kick:
	default:
	}
	a.sync()
	go func() {
		t := time.NewTicker(max(waitReport/4, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-kick:
			case <-t.C:
				if a.waiting == "" {
					continue
				}
			}
			a.sync()
		}
	}()
	return nil
}

func (a *assembler) get(name string) (*corev1.ConfigMap, bool) {
	obj, ok, err := a.store.GetByKey(a.namespace + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	cm, ok := obj.(*corev1.ConfigMap)
	return cm, ok
}

func (a *assembler) fail(err error) {
	a.rejected = true
	a.reject(err)
}

// sync assembles the snapshot the head names if it is new and complete.
func (a *assembler) sync() {
	cm, ok := a.get(a.head)
	if !ok {
		if a.headSeen {
			a.headSeen = false
			a.fail(fmt.Errorf("snapshot ConfigMap %s/%s was deleted; keeping the running snapshot", a.namespace, a.head))
		}
		return
	}
	a.headSeen = true
	data, ok := cm.Data[snapshot.HeadKey]
	if !ok {
		a.failOnce(cm, fmt.Errorf("ConfigMap %s/%s has no %q key", a.namespace, a.head, snapshot.HeadKey))
		return
	}
	h, err := snapshot.ParseHead([]byte(data))
	if err != nil {
		a.failOnce(cm, fmt.Errorf("ConfigMap %s/%s: %w", a.namespace, a.head, err))
		return
	}
	if h.Version == a.handed && !a.rejected || h.Version == a.broken {
		return
	}
	t0 := time.Now()
	decodes := a.decodes
	snap, missing, err := a.assemble(h)
	switch {
	case err != nil:
		// Its parts match their hashes, so they are what the controller
		// wrote: trying again cannot help; a new head will.
		a.handed, a.broken, a.waiting = h.Version, h.Version, ""
		a.fail(fmt.Errorf("snapshot %s: %w", h.Version, err))
	case len(missing) > 0:
		a.wait(h.Version, missing)
	default:
		a.handed, a.rejected, a.waiting = h.Version, false, ""
		t1 := time.Now()
		a.apply(snap)
		a.prune(h)
		// The reload's cost, for operators and hack/scale: decoding and
		// assembling the new parts, then the sink's Apply (seal, build, swap).
		a.log.Info("snapshot assembled", "version", h.Version, "keys", len(snap.Keys), "parts", len(h.Keys)+1,
			"partsDecoded", a.decodes-decodes, "assembleMs", ms(t1.Sub(t0)), "applyMs", ms(time.Since(t1)))
	}
}

// failOnce rejects an unreadable head once per resourceVersion: a ticker
// pass must not report the same broken object again.
func (a *assembler) failOnce(cm *corev1.ConfigMap, err error) {
	v := "rv:" + cm.ResourceVersion
	if a.handed == v && a.rejected {
		return
	}
	a.handed, a.waiting = v, ""
	a.fail(err)
}

// wait records that version's parts are not all there; a wait that outlasts
// waitReport is logged and reported once.
func (a *assembler) wait(version string, missing []string) {
	if a.waiting != version {
		a.waiting, a.waitingSince, a.waitReported = version, a.now(), false
		return
	}
	if a.waitReported || a.now().Sub(a.waitingSince) < a.waitReport {
		return
	}
	a.waitReported = true
	if len(missing) > 5 {
		missing = append(missing[:5:5], fmt.Sprintf("and %d more", len(missing)-5))
	}
	err := fmt.Errorf("snapshot %s: waited %s for parts that are missing or do not match the head: %s; keeping the running snapshot",
		version, a.waitReport, strings.Join(missing, ", "))
	a.log.Error("snapshot parts missing", "version", version, "parts", missing, "waited", a.waitReport.String())
	a.fail(err)
}

// assemble decodes what is not cached yet. missing lists parts that are
// absent or whose data does not match the head's hash (a part being
// replaced: wait); err is a part that matches its hash but does not decode
// or belongs elsewhere (a controller bug or a hand-made part: refuse).
func (a *assembler) assemble(h *snapshot.Head) (*snapshot.Snapshot, []string, error) {
	var missing []string
	var errs []error
	for _, ref := range h.Parts() {
		if p, ok := a.parts[ref.Name]; ok && p.sha == ref.SHA256 {
			continue
		}
		cm, ok := a.get(ref.Name)
		if !ok {
			missing = append(missing, ref.Name)
			continue
		}
		raw, err := snapshot.ReadPart(ref, cm.BinaryData[snapshot.PartKey])
		if err != nil {
			missing = append(missing, ref.Name+" ("+err.Error()+")")
			continue
		}
		p := decodedPart{sha: ref.SHA256}
		if ref == h.Config {
			p.config, err = snapshot.ParseConfigPart(raw)
		} else if p.keys, err = snapshot.ParseKeyPart(raw); err == nil {
			// Each shard's keys are checked once, when decoded; sealing
			// the assembly checks only what spans the parts.
			err = snapshot.CheckKeyPart(p.keys)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ref.Name, err))
			continue
		}
		a.parts[ref.Name] = p
		a.decodes++
	}
	if len(missing) > 0 || len(errs) > 0 {
		return nil, missing, errors.Join(errs...)
	}
	shards := make([][]snapshot.Key, len(h.Keys))
	for i, ref := range h.Keys {
		shards[i] = a.parts[ref.Name].keys
	}
	snap, err := snapshot.Assemble(h, a.parts[h.Config.Name].config, shards)
	if err == nil {
		err = snapshot.SealAssembled(snap, h.Version)
	}
	return snap, nil, err
}

// prune forgets decoded parts that the applied head does not name.
func (a *assembler) prune(h *snapshot.Head) {
	names := h.Parts()
	for name := range a.parts {
		if !slices.ContainsFunc(names, func(r snapshot.PartRef) bool { return r.Name == name }) {
			delete(a.parts, name)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
