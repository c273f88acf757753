package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GatewayKeySpec is a client key, by hash only: `llmgw keys create` shows the
// plaintext key once, and only its hash is stored in the cluster.
//
// +kubebuilder:validation:XValidation:rule="!self.keyHash.startsWith('lgw_')",message="keyHash must be the sha256: hash of the key, never the plaintext key",fieldPath=".keyHash",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.previous) || self.previous.keyPrefix != self.keyPrefix",message="previous.keyPrefix must differ from keyPrefix: a rotated key has a new prefix",fieldPath=".previous.keyPrefix",reason=FieldValueInvalid
type GatewayKeySpec struct {
	// CEL rather than a pattern, and the plaintext check sits on the spec: the
	// API server quotes a failing string field's value in its error, and a
	// pasted plaintext key must not be echoed into terminals and CI logs.

	// KeyHash is "sha256:" followed by the 64 lowercase hex digits of the
	// SHA-256 of the whole key, as `llmgw keys create` prints it. Never the
	// key itself: a plaintext key is refused.
	// +kubebuilder:validation:MaxLength=71
	// +kubebuilder:validation:XValidation:rule="self.startsWith('lgw_') || self.matches('^sha256:[0-9a-f]{64}$')",message="keyHash must be sha256: followed by 64 lowercase hex characters"
	KeyHash string `json:"keyHash"`

	// KeyPrefix is the key's non-secret beginning, "lgw_" and 10 characters
	// of [a-z0-9]; it identifies the key in logs and usage records.
	// +kubebuilder:validation:MaxLength=14
	// +kubebuilder:validation:Pattern=`^lgw_[a-z0-9]{10}$`
	KeyPrefix string `json:"keyPrefix"`

	// Models lists the model names (ModelAlias public names) the key may use;
	// ["*"] allows every alias. A name no alias serves does not stop the key
	// from working with the others (see the ResolvedRefs condition).
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=256
	// +kubebuilder:validation:items:Pattern=`^(\*|[A-Za-z0-9][A-Za-z0-9._:/@+-]*)$`
	// +kubebuilder:validation:XValidation:rule="!('*' in self) || size(self) == 1",message="'*' must be the only entry when present"
	Models []string `json:"models"`

	// RateLimit limits the key's chat requests (default: 60 a minute,
	// bursts of up to 10). Requests over it get 429 and never reach a
	// provider. With the gateways' shared quota store it holds across all
	// gateway replicas; without it each replica counts on its own.
	// +optional
	// +kubebuilder:default={}
	RateLimit *RateLimit `json:"rateLimit,omitempty"`

	// TokensPerMinute limits the tokens (input and output) of the key's chat
	// requests per minute. Each request reserves its input tokens plus its
	// max_tokens (or the gateways' default when it sets none) before any
	// provider is called, and is charged what it really used when it ends;
	// a request that does not fit gets 429 tokens_per_minute_exceeded.
	// Unset: no token limit.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000000
	TokensPerMinute int64 `json:"tokensPerMinute,omitempty"`

	// Budget limits what the key's requests may cost per day or month
	// (429 budget_exceeded once spent). Unset: no budget of its own.
	// +optional
	Budget *Budget `json:"budget,omitempty"`

	// Group names a BudgetGroup in this namespace whose token limit and
	// budget the key shares with the group's other keys, on top of its own.
	// While the group does not exist (or is not accepted) the key's chat
	// requests are refused with 403 budget_group_missing.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Group string `json:"group,omitempty"`

	// Disabled keys are refused with 401 key_disabled but stay listed, so
	// their usage records stay attributable.
	// +optional
	// +kubebuilder:default=false
	Disabled bool `json:"disabled,omitempty"`

	// ExpiresAt is when the key stops working: from then on it is refused
	// with 401 key_expired. Unset: the key does not expire. The controller
	// warns ahead of it (condition ExpiringSoon, Event KeyExpiringSoon;
	// its --key-expiry-warning sets how far ahead).
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`

	// Previous is the key this one replaced (`llmgw keys rotate` fills it
	// in): until previous.acceptedUntil the gateways accept the previous
	// key too, as this very key (same name, usage history, limits and
	// budgets), so clients can move to the new key without an outage; from
	// then on they refuse it with 401 key_rotated. Remove it once the grace
	// has ended, or rotate again. Unset: the key replaced none.
	// +optional
	Previous *PreviousKey `json:"previous,omitempty"`
}

// PreviousKey is a rotated-out key, by hash only, and when the gateways stop
// accepting it.
//
// The plaintext check sits on this object, not on keyHash, for the reason
// given on GatewayKeySpec: a failing string field's value is quoted back.
//
// +kubebuilder:validation:XValidation:rule="!self.keyHash.startsWith('lgw_')",message="previous.keyHash must be the sha256: hash of the previous key, never the plaintext key",fieldPath=".keyHash",reason=FieldValueInvalid
type PreviousKey struct {
	// KeyHash is the previous key's hash, as its GatewayKey had it in
	// keyHash: "sha256:" followed by 64 lowercase hex digits. Never the
	// key itself: a plaintext key is refused.
	// +kubebuilder:validation:MaxLength=71
	// +kubebuilder:validation:XValidation:rule="self.startsWith('lgw_') || self.matches('^sha256:[0-9a-f]{64}$')",message="previous.keyHash must be sha256: followed by 64 lowercase hex characters"
	KeyHash string `json:"keyHash"`

	// KeyPrefix is the previous key's prefix ("lgw_" and 10 characters of
	// [a-z0-9]), as its GatewayKey had it in keyPrefix; it must differ
	// from this key's keyPrefix.
	// +kubebuilder:validation:MaxLength=14
	// +kubebuilder:validation:Pattern=`^lgw_[a-z0-9]{10}$`
	KeyPrefix string `json:"keyPrefix"`

	// AcceptedUntil is when the gateways stop accepting the previous key
	// (RFC 3339, e.g. "2026-07-01T00:00:00Z"): the end of the grace period
	// in which clients move to the new key. status.rotation says whether
	// the grace is still running.
	AcceptedUntil metav1.Time `json:"acceptedUntil"`
}

// RateLimit is a token bucket: it refills at requestsPerMinute and holds at
// most burst requests.
type RateLimit struct {
	// RequestsPerMinute is the sustained rate allowed.
	// +optional
	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	RequestsPerMinute int32 `json:"requestsPerMinute,omitempty"`

	// Burst is how many requests may come at once after a quiet period.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	Burst int32 `json:"burst,omitempty"`
}

// GatewayKeyStatus says whether the gateways accept the key.
type GatewayKeyStatus struct {
	CommonStatus `json:",inline"`

	// Fingerprint is a short id of the key that reveals nothing about it
	// (the first 12 hex digits of the SHA-256 of keyHash); usage records
	// carry the same one.
	// +optional
	Fingerprint string `json:"fingerprint,omitempty"`

	// Rotation describes spec.previous while the key has one: the previous
	// key's fingerprint and whether the gateways still accept it.
	// +optional
	Rotation *KeyRotationStatus `json:"rotation,omitempty"`
}

// KeyRotationStatus is the state of a key's rotation (spec.previous).
type KeyRotationStatus struct {
	// PreviousFingerprint is the fingerprint of the previous key (of
	// spec.previous.keyHash), as its usage records and its GatewayKey's
	// status.fingerprint showed it.
	// +optional
	PreviousFingerprint string `json:"previousFingerprint,omitempty"`

	// GraceEndsAt is spec.previous.acceptedUntil: when the gateways stop
	// accepting the previous key.
	GraceEndsAt metav1.Time `json:"graceEndsAt"`

	// InGrace is true before graceEndsAt, while the gateways accept the
	// previous key wherever they accept this one (see Ready); false once
	// they answer it 401 key_rotated.
	InGrace bool `json:"inGrace"`
}

// The ExpiringSoon condition of a GatewayKey and its reasons: True while the
// key's expiresAt is within the controller's --key-expiry-warning and not
// yet past. Absent when the warning is turned off (0).
const (
	ConditionExpiringSoon = "ExpiringSoon"
	// ReasonExpiresSoon: expiresAt is within the warning window (True).
	ReasonExpiresSoon = "ExpiresSoon"
	// ReasonNotExpiringSoon: the key does not expire, expires later than
	// the window, or has expired already (see Ready) (False).
	ReasonNotExpiringSoon = "NotExpiringSoon"
)

// The reasons of the Events the controller records about a key's lifecycle
// (besides those of its condition transitions).
const (
	// EventKeyRotated (Normal): the controller saw a new spec.previous; the
	// note names both fingerprints and when the grace ends.
	EventKeyRotated = "KeyRotated"
	// EventRotationGraceEnded (Normal): spec.previous.acceptedUntil passed;
	// the gateways now refuse the previous key (401 key_rotated).
	EventRotationGraceEnded = "RotationGraceEnded"
	// EventKeyExpiringSoon (Warning): the key's expiresAt came within the
	// warning window (condition ExpiringSoon turned True).
	EventKeyExpiringSoon = "KeyExpiringSoon"
)

// GatewayKey lets a client that holds the key use some model aliases, within
// a rate limit, a token limit and a budget. Only the key's hash is stored.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gk,categories=llmgw
// +kubebuilder:printcolumn:name="Prefix",type=string,JSONPath=`.spec.keyPrefix`
// +kubebuilder:printcolumn:name="Fingerprint",type=string,JSONPath=`.status.fingerprint`
// +kubebuilder:printcolumn:name="Disabled",type=boolean,JSONPath=`.spec.disabled`
// +kubebuilder:printcolumn:name="Expires",type=string,JSONPath=`.spec.expiresAt`
// +kubebuilder:printcolumn:name="Rotation",type=boolean,JSONPath=`.status.rotation.inGrace`,description="true while the previous key of a rotation is still accepted"
// +kubebuilder:printcolumn:name="GraceEnds",type=string,JSONPath=`.status.rotation.graceEndsAt`,description="when the previous key of a rotation stops being accepted"
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="ResolvedRefs",type=string,JSONPath=`.status.conditions[?(@.type=="ResolvedRefs")].status`
// +kubebuilder:printcolumn:name="Programmed",type=string,JSONPath=`.status.conditions[?(@.type=="Programmed")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="ExpiringSoon",type=string,JSONPath=`.status.conditions[?(@.type=="ExpiringSoon")].status`,priority=1
// +kubebuilder:printcolumn:name="Group",type=string,JSONPath=`.spec.group`,priority=1
// +kubebuilder:printcolumn:name="TPM",type=integer,JSONPath=`.spec.tokensPerMinute`,priority=1
// +kubebuilder:printcolumn:name="Budget",type=string,JSONPath=`.spec.budget.amount`,priority=1
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
	register(&GatewayKey{}, &GatewayKeyList{})
}
