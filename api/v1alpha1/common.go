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

// ConditionReady is the one condition every llmgw object carries: whether the
// object is part of the snapshot the gateways serve.
const ConditionReady = "Ready"

// Reasons of the Ready condition. They are API: tests, docs and alerts match on them.
const (
	// ReasonCompiled: the object is in the current snapshot.
	ReasonCompiled = "Compiled"
	// ReasonInvalidSpec: the spec passed schema validation but not the snapshot's
	// own checks (the message says which).
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonSecretNotFound: the credential Secret does not exist.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonSecretKeyNotFound: the Secret exists but lacks the referenced key.
	ReasonSecretKeyNotFound = "SecretKeyNotFound"
	// ReasonProviderNotFound: a route names a ProviderEndpoint that does not exist.
	ReasonProviderNotFound = "ProviderNotFound"
	// ReasonProviderNotReady: a route names a ProviderEndpoint that exists but is
	// not in the snapshot.
	ReasonProviderNotReady = "ProviderNotReady"
	// ReasonAliasConflict: an older ModelAlias already serves the same public name.
	ReasonAliasConflict = "AliasConflict"
	// ReasonKeyConflict: an older GatewayKey already uses the same prefix or hash.
	ReasonKeyConflict = "KeyConflict"
	// ReasonDisabled: the key is in the snapshot, marked disabled (the gateway answers 401).
	ReasonDisabled = "Disabled"
	// ReasonExpired: the key is in the snapshot but past expiresAt (the gateway answers 401).
	ReasonExpired = "Expired"
)

// CommonStatus is the part of every status the controller maintains.
type CommonStatus struct {
	// ObservedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready says whether the object is served, and why not.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ReasonAliasNotFound: none of the key's models names a served alias.
const ReasonAliasNotFound = "AliasNotFound"
