package source

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/llmgw/llmgw/api/gatewaystatus"
	"github.com/llmgw/llmgw/api/snapshot"
)

// In Kubernetes mode each gateway replica reports the snapshot version it
// runs, and the last one it refused and why, into its own key of the status
// ConfigMap (package gatewaystatus), so that the controller's Programmed
// condition says what the gateways really serve. Reporting never delays an
// apply: the sink wrapper only records the state, and a goroutine writes it.

// reportRecheck is how often the reporter checks that its entry is still
// there (someone deleted the ConfigMap, the controller created it again): a
// GET, which unlike a periodic write wakes no controller.
const reportRecheck = time.Minute

// reporter writes one replica's entry with JSON merge patches.
type reporter struct {
	client    kubernetes.Interface
	namespace string
	configMap string
	pod       string
	log       *slog.Logger
	recheck   time.Duration
	now       func() time.Time

	mu      sync.Mutex
	current gatewaystatus.Report // At is zero until there is something to say
	kick    chan struct{}
}

// Retry bounds of a report the API server did not take.
const (
	retryMin = 500 * time.Millisecond
	retryMax = 30 * time.Second
)

func newReporter(client kubernetes.Interface, namespace, configMap, pod string, log *slog.Logger) *reporter {
	return &reporter{client: client, namespace: namespace, configMap: configMap, pod: pod, log: log,
		recheck: reportRecheck, now: time.Now, kick: make(chan struct{}, 1)}
}

// applied records that version runs now; an earlier refusal is over.
func (r *reporter) applied(version string) {
	r.set(gatewaystatus.Report{Version: version})
}

// refused records that the replica keeps running `running` after refusing
// `version` ("" when no version could be read) because of err.
func (r *reporter) refused(running, version string, err error) {
	r.set(gatewaystatus.Report{Version: running, RefusedVersion: version, RefusedReason: gatewaystatus.ShortReason(err)})
}

// set makes next the current state. The same state again (a resync, a
// retried refusal) keeps its time and writes nothing.
func (r *reporter) set(next gatewaystatus.Report) {
	r.mu.Lock()
	prev := r.current
	prev.At = time.Time{}
	if prev == next && !r.current.At.IsZero() {
		r.mu.Unlock()
		return
	}
	next.At = r.now()
	r.current = next
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// run writes the current state whenever it changes, retrying with backoff
// (the ConfigMap may not exist yet: the controller creates it), and checks
// every recheck that its entry is still the one it wrote.
func (r *reporter) run(ctx context.Context) {
	written := ""
	backoff := retryMin
	failing := false
	t := time.NewTimer(r.recheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
		case <-t.C:
			if written != "" {
				if cur, err := r.read(ctx); err == nil && cur != written {
					written = "" // gone or overwritten: write it again
				}
			}
		}
		r.mu.Lock()
		rep := r.current
		r.mu.Unlock()
		wait := r.recheck
		if !rep.At.IsZero() {
			value, err := rep.Encode()
			switch {
			case err != nil:
				r.log.Error("encoding the gateway status report", "error", err)
			case value == written:
			default:
				if err := r.write(ctx, value); err != nil {
					if !failing {
						r.log.Warn("could not report the running snapshot version; retrying", "configmap", r.configMap, "pod", r.pod, "error", err)
					}
					failing = true
					wait = backoff
					backoff = min(2*backoff, retryMax)
				} else {
					if failing {
						r.log.Info("reporting the running snapshot version again", "configmap", r.configMap, "pod", r.pod)
					}
					written, failing, backoff = value, false, retryMin
				}
			}
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(wait)
	}
}

func (r *reporter) write(ctx context.Context, value string) error {
	patch, err := gatewaystatus.MergePatch(r.pod, value)
	if err != nil {
		return err
	}
	_, err = r.client.CoreV1().ConfigMaps(r.namespace).Patch(ctx, r.configMap, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "llmgw-gateway"})
	if err != nil {
		return fmt.Errorf("patching ConfigMap %s/%s: %w", r.namespace, r.configMap, err)
	}
	return nil
}

// read returns the replica's entry as stored ("" when it or the ConfigMap is gone).
func (r *reporter) read(ctx context.Context) (string, error) {
	cm, err := r.client.CoreV1().ConfigMaps(r.namespace).Get(ctx, r.configMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading ConfigMap %s/%s: %w", r.namespace, r.configMap, err)
	}
	return cm.Data[r.pod], nil
}

// reportingSink is the Sink the Kube source feeds when it reports: every
// apply and every refusal also goes to the reporter.
type reportingSink struct {
	Sink
	rep *reporter
}

func (s reportingSink) Apply(ctx context.Context, snap *snapshot.Snapshot) error {
	return s.report(snap.Version, s.Sink.Apply(ctx, snap))
}

func (s reportingSink) ApplySealed(ctx context.Context, snap *snapshot.Snapshot) error {
	return s.report(snap.Version, applySealed(ctx, s.Sink, snap))
}

// report tells the controller what became of version.
func (s reportingSink) report(version string, err error) error {
	if err != nil {
		s.rep.refused(s.Sink.Version(), version, err)
	} else {
		s.rep.applied(s.Sink.Version())
	}
	return err
}

func (s reportingSink) ReportReloadError(err error) {
	s.Sink.ReportReloadError(err)
	s.rep.refused(s.Sink.Version(), "", err)
}

// reporting wraps sink so that it reports into cfg.StatusConfigMap as
// cfg.PodName, and starts the writer; without both names it is sink itself.
func (k *Kube) reporting(ctx context.Context, sink Sink) Sink {
	if k.cfg.StatusConfigMap == "" || k.cfg.PodName == "" {
		return sink
	}
	rep := newReporter(k.client, k.cfg.Namespace, k.cfg.StatusConfigMap, k.cfg.PodName, k.log)
	go rep.run(ctx)
	return reportingSink{Sink: sink, rep: rep}
}
