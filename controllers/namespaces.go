package controllers

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Objects may come from several namespaces: the controller's own (home),
// which holds the ProviderEndpoints and the snapshot, and the other watched
// namespaces, where teams keep their aliases, keys and budget groups.
//
// An object is named in the snapshot, in Statuses and in usage records by
// its name in the home namespace — so nothing changes for an installation
// that watches only its own — and by namespace/name elsewhere, so that
// team-a's key "ci" and team-b's key "ci" stay two keys. A slash cannot
// occur in an object name, so the two forms never collide.

// objectID is how the snapshot and Statuses name obj.
func objectID(home string, obj metav1.Object) string {
	return qualify(home, obj.GetNamespace(), obj.GetName())
}

// qualify names the object name of namespace ns, as objectID does; a
// reference from an object (a key's budget group) resolves in the
// referring object's namespace.
func qualify(home, ns, name string) string {
	if ns == "" || ns == home || name == "" {
		return name
	}
	return ns + "/" + name
}

// WatchedNamespaces is the set of namespaces the controller compiles: home
// first, then the others sorted, each once. Every name must be a valid
// namespace name (an RFC 1123 label): a typo would otherwise only show as
// objects that never get a status.
func WatchedNamespaces(home string, others []string) ([]string, error) {
	if strings.TrimSpace(home) == "" {
		return nil, errors.New("the controller's own namespace is required")
	}
	var set, errs []string
	for _, ns := range append([]string{home}, others...) {
		ns = strings.TrimSpace(ns)
		if ns == "" || slices.Contains(set, ns) {
			continue
		}
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, fmt.Sprintf("%q: %s", ns, strings.Join(msgs, "; ")))
			continue
		}
		set = append(set, ns)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("watched namespaces: %s", strings.Join(errs, ", "))
	}
	slices.Sort(set[1:])
	return set, nil
}

// providerScope is "" for an object of the home namespace, and where its
// provider references resolve otherwise: a user in a team namespace who
// names a ProviderEndpoint of their own learns why it is not found.
func providerScope(home string, obj metav1.Object) string {
	if ns := obj.GetNamespace(); ns == "" || ns == home {
		return ""
	}
	return " in namespace " + home + " (routes name the ProviderEndpoints of the controller's own namespace)"
}
