package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GatewayKeySpec is a client key, by hash only: the plaintext is shown once to
// the operator by `llmgw keys create` and never stored in the cluster.
//
// +kubebuilder:validation:XValidation:rule="!self.keyHash.startsWith('lgw_')",message="keyHash must be the sha256: hash of the key, never the plaintext key",fieldPath=".keyHash",reason=FieldValueInvalid
type GatewayKeySpec struct {
	// KeyHash is "sha256:" + 64 lowercase hex of SHA-256 of the whole key.
	// CEL rather than a pattern, and the plaintext check sits on the spec:
	// the API server quotes a failing string field's value in its error, and
	// a pasted plaintext key must not be echoed into terminals and CI logs.
	// +kubebuilder:validation:MaxLength=71
	// +kubebuilder:validation:XValidation:rule="self.startsWith('lgw_') || self.matches('^sha256:[0-9a-f]{64}$')",message="keyHash must be sha256: followed by 64 lowercase hex characters"
	KeyHash string `json:"keyHash"`

	// KeyPrefix is the key's non-secret prefix, "lgw_" + 10 of [a-z0-9].
	// +kubebuilder:validation:MaxLength=14
	// +kubebuilder:validation:Pattern=`^lgw_[a-z0-9]{10}$`
	KeyPrefix string `json:"keyPrefix"`

	// Models lists the public alias names the key may use; ["*"] allows all.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=256
	// +kubebuilder:validation:items:Pattern=`^(\*|[A-Za-z0-9][A-Za-z0-9._:/@+-]*)$`
	// +kubebuilder:validation:XValidation:rule="!('*' in self) || size(self) == 1",message="'*' must be the only entry when present"
	Models []string `json:"models"`

	// RateLimit is a per-key token bucket (defaults: 60 per minute, burst 10).
	// +optional
	RateLimit *RateLimit `json:"rateLimit,omitempty"`

	// Disabled keys are refused (401) but stay listed, so usage stays attributable.
	// +optional
	Disabled bool `json:"disabled,omitempty"`

	// ExpiresAt: from then on the key is refused (401).
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`
}

// RateLimit is a token bucket refilled at requestsPerMinute, holding at most burst.
type RateLimit struct {
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	RequestsPerMinute int32 `json:"requestsPerMinute,omitempty"`

	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	Burst int32 `json:"burst,omitempty"`
}

// GatewayKeyStatus is what the controller made of the GatewayKey.
type GatewayKeyStatus struct {
	CommonStatus `json:",inline"`

	// Fingerprint is a short irreversible id of the key (first 12 hex of
	// SHA-256 of keyHash), the one usage records carry.
	// +optional
	Fingerprint string `json:"fingerprint,omitempty"`
}

// GatewayKey authorizes a client (by key hash) to use some aliases, with a rate limit.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gk,categories=llmgw
// +kubebuilder:printcolumn:name="Prefix",type=string,JSONPath=`.spec.keyPrefix`
// +kubebuilder:printcolumn:name="Fingerprint",type=string,JSONPath=`.status.fingerprint`
// +kubebuilder:printcolumn:name="Disabled",type=boolean,JSONPath=`.spec.disabled`
// +kubebuilder:printcolumn:name="Expires",type=string,JSONPath=`.spec.expiresAt`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GatewayKey struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GatewayKeySpec   `json:"spec"`
	Status GatewayKeyStatus `json:"status,omitempty"`
}

// GatewayKeyList is a list of GatewayKeys.
//
// +kubebuilder:object:root=true
type GatewayKeyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GatewayKey `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GatewayKey{}, &GatewayKeyList{})
}
