package controllers

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/llmgw/llmgw/api/snapshot"
)

// Owner labels: the controller's --owner-labels name label keys that Compile
// copies, when present, from each GatewayKey's and BudgetGroup's
// metadata.labels into the snapshot (Key.Owners, Group.Owners), and the
// gateways onto every usage record, so spend can be totalled by team or cost
// centre. Only those labels, nothing else of the object's metadata: a label
// is free for anyone who can edit the object, and the snapshot carries what
// the gateways need.
//
// Labels change without a new generation, so the memo (compilememo.go) and
// the patch (compileincr.go) compare an object's owner labels as well as its
// UID and generation, and the watches let a change of them through.

// OwnerLabelKeys checks and normalizes --owner-labels: each a Kubernetes
// label key, each once (sorted), at most snapshot.MaxOwners of them.
func OwnerLabelKeys(names []string) ([]string, error) {
	var out, bad []string
	for _, n := range names {
		n = strings.TrimSpace(n)
		switch {
		case n == "" || slices.Contains(out, n):
		case !snapshot.ValidOwnerLabel(n):
			bad = append(bad, fmt.Sprintf("%q", n))
		default:
			out = append(out, n)
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("owner labels: %s: not a Kubernetes label key ([prefix/]name: name at most 63 characters of [A-Za-z0-9-_.], starting and ending with a letter or digit; prefix a DNS subdomain)", strings.Join(bad, ", "))
	}
	if len(out) > snapshot.MaxOwners {
		return nil, fmt.Errorf("owner labels: %d given, at most %d (a usage record carries at most %d owner labels)", len(out), snapshot.MaxOwners, snapshot.MaxOwners)
	}
	slices.Sort(out)
	return out, nil
}

// ownersOf is the labels named in names that labels has (nil: none).
func ownersOf(labels map[string]string, names []string) map[string]string {
	var out map[string]string
	for _, n := range names {
		if v, ok := labels[n]; ok {
			if out == nil {
				out = make(map[string]string, len(names))
			}
			out[n] = v
		}
	}
	return out
}

// sameOwners says whether have is exactly ownersOf(labels, names), without
// making that map: the memo asks it of every key in every compilation.
func sameOwners(have, labels map[string]string, names []string) bool {
	n := 0
	for _, name := range names {
		v, ok := labels[name]
		if !ok {
			continue
		}
		n++
		if w, ok := have[name]; !ok || w != v {
			return false
		}
	}
	return n == len(have)
}

// ownersKey is ownersOf in a comparable form ("" when none).
func ownersKey(labels map[string]string, names []string) string {
	o := ownersOf(labels, names)
	if len(o) == 0 {
		return ""
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(o)) {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(o[k])
		b.WriteByte(0)
	}
	return b.String()
}

// ownerLabelsChanged lets through the updates that change one of the named
// labels (the watches otherwise see spec changes only).
func ownerLabelsChanged(names []string) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil {
				return false
			}
			return !maps.Equal(ownersOf(e.ObjectOld.GetLabels(), names), ownersOf(e.ObjectNew.GetLabels(), names))
		},
	}
}
