package snapshot

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Owner labels: a key's (and its group's) Kubernetes labels named by the
// controller's --owner-labels, or written in a snapshot file, copied onto
// every usage record so spend can be totalled by team or cost centre. They
// follow Kubernetes label syntax, so what the controller copies always
// validates.

// MaxOwners bounds the owner labels of one key or group.
const MaxOwners = 16

var (
	ownerName  = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	ownerPfx   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
	ownerValue = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`)
)

// ValidOwnerLabel says whether name is a Kubernetes label key
// ([prefix/]name, name at most 63 characters, prefix a DNS subdomain).
func ValidOwnerLabel(name string) bool {
	n := name
	if pfx, rest, ok := strings.Cut(name, "/"); ok {
		if pfx == "" || len(pfx) > 253 || !ownerPfx.MatchString(pfx) {
			return false
		}
		n = rest
	}
	return len(n) <= 63 && ownerName.MatchString(n)
}

func validateOwners(obj string, owners map[string]string) []error {
	var errs []error
	if len(owners) > MaxOwners {
		errs = append(errs, fmt.Errorf("%s: owners: at most %d labels, got %d", obj, MaxOwners, len(owners)))
	}
	for _, name := range slices.Sorted(maps.Keys(owners)) {
		v := owners[name]
		if !ValidOwnerLabel(name) {
			errs = append(errs, fmt.Errorf("%s: owners: %s is not a Kubernetes label key", obj, quote(name)))
		}
		if len(v) > 63 || !ownerValue.MatchString(v) {
			errs = append(errs, fmt.Errorf("%s: owners[%s]: %s is not a Kubernetes label value (at most 63 of [A-Za-z0-9-_.])", obj, name, quote(v)))
		}
	}
	return errs
}

// RecordOwners is what a key's usage records carry: its group's owner
// labels overlaid with its own (the key's win). nil when neither has any.
func RecordOwners(k *Key, g *Group) map[string]string {
	if g == nil || len(g.Owners) == 0 {
		return k.Owners
	}
	if len(k.Owners) == 0 {
		return g.Owners
	}
	out := maps.Clone(g.Owners)
	maps.Copy(out, k.Owners)
	return out
}
