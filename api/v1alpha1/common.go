package v1alpha1

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Duration is a Go-style duration string ("1500ms", "2s", "1m30s"). A string
// rather than integer milliseconds because that is how Kubernetes APIs (e.g.
// Gateway API) spell timeouts, and CEL's duration() can bound it server-side.
// The pattern keeps to the units CEL and time.ParseDuration agree on; the bound rules
// check it again so that a malformed value gets one error, not a CEL type error too.
//
// +kubebuilder:validation:Pattern=`^([0-9]{1,5}(h|m|s|ms)){1,4}$`
// +kubebuilder:validation:MaxLength=32
type Duration string

// Milliseconds parses d; "" is 0 (unset).
func (d Duration) Milliseconds() (int, error) {
	if d == "" {
		return 0, nil
	}
	v, err := time.ParseDuration(string(d))
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: %w", string(d), err)
	}
	return int(v / time.Millisecond), nil
}

// The conditions every llmgw object carries, in the style of Gateway API.
// Their types and reasons are API: scripts, alerts, docs and tests match on
// them (docs/operations.md#status-of-the-resources lists them all).
const (
	// ConditionAccepted: the object itself is valid and owns what it claims
	// (an alias's public name, a key's prefix and hash).
	ConditionAccepted = "Accepted"
	// ConditionResolvedRefs: everything the object references exists and is
	// usable: a ProviderEndpoint's Service and port and its credential Secret
	// and key, a ModelAlias's ProviderEndpoints, a GatewayKey's aliases.
	ConditionResolvedRefs = "ResolvedRefs"
	// ConditionProgrammed: every ready gateway replica runs a snapshot that
	// contains the object as it is now; the gateways report what they run.
	ConditionProgrammed = "Programmed"
	// ConditionReady sums the three up for `kubectl wait --for=condition=Ready`:
	// True when the gateways serve the object (perhaps degraded), False with
	// the reason to act on otherwise.
	ConditionReady = "Ready"
)

// Reasons of Accepted.
const (
	// ReasonAccepted: the object is valid (Accepted=True).
	ReasonAccepted = "Accepted"
	// ReasonInvalidSpec: the spec passed schema validation but not the
	// gateway's own checks (the message says which).
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonAliasConflict: an older valid ModelAlias already claims the same
	// public name; this one is not served until that one goes or changes.
	ReasonAliasConflict = "AliasConflict"
	// ReasonKeyConflict: an older valid GatewayKey already uses the same
	// prefix or hash.
	ReasonKeyConflict = "KeyConflict"
	// ReasonNamespaceNotAllowed: a ProviderEndpoint outside the controller's
	// own namespace. Providers live where the gateways read their
	// credentials and call their Services; the other watched namespaces
	// hold aliases, keys and budget groups only.
	ReasonNamespaceNotAllowed = "NamespaceNotAllowed"
)

// Reasons of ResolvedRefs.
const (
	// ReasonResolvedRefs: every reference resolves (ResolvedRefs=True).
	ReasonResolvedRefs = "ResolvedRefs"
	// ReasonSecretNotFound: the credential Secret does not exist.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonSecretKeyNotFound: the Secret exists but lacks the referenced key.
	ReasonSecretKeyNotFound = "SecretKeyNotFound"
	// ReasonServiceNotFound: the in-cluster Service a ProviderEndpoint names
	// (spec.service) does not exist in its namespace.
	ReasonServiceNotFound = "ServiceNotFound"
	// ReasonServicePortNotFound: the Service exists but none of its ports is
	// the referenced port (the message lists the ports it has).
	ReasonServicePortNotFound = "ServicePortNotFound"
	// ReasonProviderNotFound: a route names a ProviderEndpoint that does not
	// exist. The alias is still served through its other routes, if any.
	ReasonProviderNotFound = "ProviderNotFound"
	// ReasonProviderNotReady: a route names a ProviderEndpoint that exists but
	// is not served itself (see that object's conditions). The alias is still
	// served through its other routes, if any.
	ReasonProviderNotReady = "ProviderNotReady"
	// ReasonAliasNotFound: some of the key's models name no served alias.
	// The key is still served for the others; with none left it is not.
	ReasonAliasNotFound = "AliasNotFound"
)

// Reasons of Programmed.
const (
	// ReasonProgrammed: every ready gateway replica runs a snapshot that
	// contains the object as it is now (Programmed=True).
	ReasonProgrammed = "Programmed"
	// ReasonPending: the snapshot with the object is published, but not every
	// ready gateway replica runs it yet (the message counts them), or no
	// replica is ready.
	ReasonPending = "Pending"
	// ReasonSnapshotRefused: a gateway replica refused the snapshot that
	// contains the object and keeps serving its previous one; the message
	// quotes the gateway's reason.
	ReasonSnapshotRefused = "SnapshotRefused"
	// ReasonSnapshotWriteFailed: the controller could not write the snapshot
	// that contains the object (the message quotes the API server's error);
	// it retries with backoff.
	ReasonSnapshotWriteFailed = "SnapshotWriteFailed"
	// ReasonNoGateways: no gateway Pod exists to serve the object
	// (Programmed=Unknown): the gateway is not deployed, or the controller's
	// --gateway-selector does not match its Pods.
	ReasonNoGateways = "NoGateways"
	// ReasonNotAccepted: the object is not in the snapshot because
	// Accepted is False.
	ReasonNotAccepted = "NotAccepted"
	// ReasonRefsNotResolved: the object is not in the snapshot because what
	// it needs does not resolve: an alias none of whose routes works, a key
	// none of whose models is served.
	ReasonRefsNotResolved = "RefsNotResolved"
)

// Reasons of Ready beyond those it takes over from the conditions above
// (when Ready is False its reason is the reason of the first condition that
// is not True: Accepted, then ResolvedRefs for an object left out of the
// snapshot, then Programmed).
const (
	// ReasonServing: the gateways serve the object as specified (Ready=True).
	ReasonServing = "Serving"
	// ReasonDegraded: the gateways serve the object, but some of its
	// references do not resolve (Ready=True; ResolvedRefs says which), e.g.
	// an alias serving through its remaining routes.
	ReasonDegraded = "Degraded"
	// ReasonDisabled: the gateways run the key as disabled: they answer 401.
	ReasonDisabled = "Disabled"
	// ReasonExpired: the gateways run the key past its expiresAt: they answer 401.
	ReasonExpired = "Expired"
)

// CommonStatus is the part of every status the controller maintains.
type CommonStatus struct {
	// ObservedGeneration is the metadata.generation the controller last
	// published completely: compiled, and the snapshot with it written.
	// Lower than metadata.generation while a change is being processed or
	// while the snapshot cannot be written (see the Programmed condition).
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Accepted (the object is valid), ResolvedRefs (what it
	// references exists), Programmed (every ready gateway replica serves it)
	// and Ready (all of that, for kubectl wait). Each condition's own
	// observedGeneration says which generation it describes.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
