package controllers

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/llmgw/llmgw/api/gatewaystatus"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// Programmed says whether every ready gateway replica serves an object as it
// is now. The gateways report the snapshot version they run; a replica still
// running an older version serves every object that has not changed since
// that version was published, so a new key does not send the 50,000 others
// back to Pending. publications keeps what that needs: for every object, the
// first publication from which on the published snapshots carried its
// current entry, and for each recent version, its latest publication.

// objectRef names one object of the watched namespaces (Name: objectID).
type objectRef struct{ Kind, Name string }

type mark struct {
	digest string
	seq    int64
}

// keepVersions bounds the versions remembered. A replica running a version
// older than all of them serves nothing as far as Programmed is concerned
// until it catches up, which it does within a second unless it refuses.
const keepVersions = 64

// publications is the controller's memory of what it published; it starts
// empty after a restart, and the first publication (or the finding that the
// ConfigMap already holds the compiled version) fills it.
type publications struct {
	seq      int64
	versions map[string]int64
	marks    map[objectRef]mark
}

// published records that version is in the ConfigMap, carrying the entries
// whose digests are given (every object in the snapshot).
func (p *publications) published(version string, digests map[objectRef]string) {
	if p.versions == nil {
		p.versions, p.marks = map[string]int64{}, map[objectRef]mark{}
	}
	if p.seq == 0 || p.versions[version] != p.seq {
		p.seq++
		p.versions[version] = p.seq
		for len(p.versions) > keepVersions {
			oldest, min := "", p.seq
			for v, s := range p.versions {
				if s < min {
					oldest, min = v, s
				}
			}
			delete(p.versions, oldest)
		}
	}
	for ref, d := range digests {
		if m, ok := p.marks[ref]; !ok || m.digest != d {
			p.marks[ref] = mark{digest: d, seq: p.seq}
		}
	}
	for ref := range p.marks {
		if _, ok := digests[ref]; !ok {
			delete(p.marks, ref)
		}
	}
}

// since is the publication from which on the published snapshots carry the
// object's entry with this digest; 0 when the published snapshot does not.
func (p *publications) since(ref objectRef, digest string) int64 {
	m, ok := p.marks[ref]
	if !ok || digest == "" || m.digest != digest {
		return 0
	}
	return m.seq
}

// seqOf is the latest publication of version, 0 when unknown.
func (p *publications) seqOf(version string) int64 {
	if version == "" {
		return 0
	}
	return p.versions[version]
}

// replica is one gateway Pod and what it reported.
type replica struct {
	Name  string
	Ready bool
	// Report is nil when the replica has not reported since its container
	// started (or its entry does not parse).
	Report *gatewaystatus.Report
}

// fleet is every live gateway Pod.
type fleet struct {
	// Selector is the label selector that found them, for messages.
	Selector string
	Replicas []replica
}

// newFleet pairs the gateway Pods with their entries in the status
// ConfigMap. Terminating and finished Pods are left out; an entry written
// before the Pod's newest container started comes from an earlier process
// and is ignored (same node, same clock).
func newFleet(selector string, pods []corev1.Pod, data map[string]string) fleet {
	f := fleet{Selector: selector}
	for i := range pods {
		pod := &pods[i]
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		r := replica{Name: pod.Name, Ready: podReady(pod)}
		if raw, ok := data[pod.Name]; ok {
			if rep, err := gatewaystatus.Parse(raw); err == nil && !rep.At.Before(containersStarted(pod)) {
				r.Report = &rep
			}
		}
		f.Replicas = append(f.Replicas, r)
	}
	slices.SortFunc(f.Replicas, func(a, b replica) int { return strings.Compare(a.Name, b.Name) })
	return f
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// containersStarted is when the newest running container of pod started
// (metav1.Time has one-second resolution; the zero time when unknown).
func containersStarted(pod *corev1.Pod) time.Time {
	var t time.Time
	for _, cs := range pod.Status.ContainerStatuses {
		if r := cs.State.Running; r != nil && r.StartedAt.After(t) {
			t = r.StartedAt.Time
		}
	}
	return t
}

// programmedCondition decides Programmed for one object: res is what Compile
// made of it, since its publication mark (0: the published snapshot does not
// carry it as it is now), writeErr why the last write failed (nil: it did
// not), f the gateways and seqOf the publication of a version.
func programmedCondition(res Result, since int64, writeErr error, f fleet, seqOf func(string) int64) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionProgrammed, Status: metav1.ConditionFalse}
	set := func(reason, format string, args ...any) metav1.Condition {
		c.Reason, c.Message = reason, fmt.Sprintf(format, args...)
		return c
	}
	switch {
	case !res.Accepted.Status:
		return set(v1alpha1.ReasonNotAccepted, "not in the snapshot: %s", res.Accepted.Message)
	case !res.InSnapshot:
		return set(v1alpha1.ReasonRefsNotResolved, "not in the snapshot: %s", res.ResolvedRefs.Message)
	case since == 0 && writeErr != nil:
		return set(v1alpha1.ReasonSnapshotWriteFailed, "the snapshot with this object as it is now could not be written (retrying): %v", writeErr)
	case since == 0:
		return set(v1alpha1.ReasonPending, "the snapshot with this object as it is now is not published yet")
	case len(f.Replicas) == 0:
		c.Status = metav1.ConditionUnknown
		return set(v1alpha1.ReasonNoGateways, "no gateway Pod matches %s: nothing serves the snapshot", f.Selector)
	}
	var ready, serving int
	var waiting []string
	refusal := ""
	for _, r := range f.Replicas {
		rep := r.Report
		serves := rep != nil && seqOf(rep.Version) >= since
		if !serves && refusal == "" && rep != nil && rep.Refused() && (rep.RefusedVersion == "" || seqOf(rep.RefusedVersion) >= since) {
			what := "a snapshot it could not read"
			if rep.RefusedVersion != "" {
				what = "snapshot " + shortVersion(rep.RefusedVersion)
			}
			refusal = fmt.Sprintf("gateway replica %s refused %s and keeps serving its previous one: %s", r.Name, what, rep.RefusedReason)
		}
		if !r.Ready {
			continue
		}
		ready++
		if serves {
			serving++
		} else {
			waiting = append(waiting, r.Name)
		}
	}
	switch {
	case refusal != "":
		return set(v1alpha1.ReasonSnapshotRefused, "%s", refusal)
	case ready == 0:
		return set(v1alpha1.ReasonPending, "none of the %d gateway replicas is ready", len(f.Replicas))
	case serving < ready:
		return set(v1alpha1.ReasonPending, "%d of %d ready gateway replicas serve it; waiting for %s", serving, ready, strings.Join(waiting, ", "))
	}
	c.Status = metav1.ConditionTrue
	return set(v1alpha1.ReasonProgrammed, "every ready gateway replica serves it")
}

// readyCondition sums up: the reason of the first condition that is not
// True, Disabled/Expired for a key the gateways refuse, Degraded for an
// object served although some references do not resolve.
func readyCondition(res Result, programmed metav1.Condition) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse}
	switch {
	case !res.Accepted.Status:
		c.Reason, c.Message = res.Accepted.Reason, res.Accepted.Message
	case !res.InSnapshot:
		c.Reason, c.Message = res.ResolvedRefs.Reason, res.ResolvedRefs.Message
	case programmed.Status != metav1.ConditionTrue:
		c.Status, c.Reason, c.Message = programmed.Status, programmed.Reason, programmed.Message
	case res.Refused != nil:
		c.Reason, c.Message = res.Refused.Reason, res.Refused.Message
	case !res.ResolvedRefs.Status:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.ReasonDegraded, "served, but: "+res.ResolvedRefs.Message
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.ReasonServing, "every ready gateway replica serves it"
	}
	return c
}

// shortVersion keeps messages readable: "sha256:" and 12 hex digits.
func shortVersion(v string) string {
	if len(v) > len("sha256:")+12 {
		return v[:len("sha256:")+12]
	}
	return v
}

// digests are the entry digests of every object in the snapshot.
func (st Statuses) digests() map[objectRef]string {
	d := make(map[objectRef]string, len(st.Providers)+len(st.Aliases)+len(st.Keys))
	for n, r := range st.Providers {
		if r.InSnapshot {
			d[objectRef{"ProviderEndpoint", n}] = r.Digest
		}
	}
	for n, r := range st.Aliases {
		if r.InSnapshot {
			d[objectRef{"ModelAlias", n}] = r.Digest
		}
	}
	for n, r := range st.Keys {
		if r.InSnapshot {
			d[objectRef{"GatewayKey", n}] = r.Digest
		}
	}
	for n, r := range st.Groups {
		if r.InSnapshot {
			d[objectRef{"BudgetGroup", n}] = r.Digest
		}
	}
	return d
}
