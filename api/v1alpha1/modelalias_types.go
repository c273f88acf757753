package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ModelAliasSpec is a public model name and the routes that serve it.
//
// +kubebuilder:validation:XValidation:rule="!has(self.fallbacks) || !self.fallbacks.exists(f, f.provider == self.primary.provider && f.model == self.primary.model)",message="a fallback must differ from the primary route"
// +kubebuilder:validation:XValidation:rule="!has(self.maxFallbacks) || self.maxFallbacks <= (has(self.fallbacks) ? size(self.fallbacks) : 0)",message="maxFallbacks must not exceed the number of fallbacks"
type ModelAliasSpec struct {
	// Alias is the model name clients send. Defaults to metadata.name; set it
	// when the public name has characters an object name cannot (upper case, '/', ':').
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$`
	Alias string `json:"alias,omitempty"`

	// Primary is tried first.
	Primary Route `json:"primary"`

	// Fallbacks are tried in order when the primary fails before anything was
	// sent to the client (timeout, 429, 5xx, connection failure).
	// +optional
	// +listType=map
	// +listMapKey=provider
	// +listMapKey=model
	// +kubebuilder:validation:MaxItems=3
	Fallbacks []Route `json:"fallbacks,omitempty"`

	// MaxFallbacks caps how many fallbacks one request may try (default: 1, or 0
	// without fallbacks).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3
	MaxFallbacks *int32 `json:"maxFallbacks,omitempty"`

	// Timeouts bound one request to this alias.
	// +optional
	Timeouts *AliasTimeouts `json:"timeouts,omitempty"`
}

// Route is a ProviderEndpoint (same namespace) and the provider's own model name.
type Route struct {
	// Provider is the name of a ProviderEndpoint.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Provider string `json:"provider"`

	// Model is the upstream model name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^\S+$`
	Model string `json:"model"`
}

// AliasTimeouts bound one request (defaults: total 60s, attempt 20s, firstChunk 10s, idle 15s).
//
// +kubebuilder:validation:XValidation:rule="!has(self.attempt) || !has(self.total) || !self.attempt.matches('^([0-9]{1,5}(h|m|s|ms)){1,4}$') || !self.total.matches('^([0-9]{1,5}(h|m|s|ms)){1,4}$') || duration(self.attempt) <= duration(self.total)",message="attempt must not exceed total"
type AliasTimeouts struct {
	// Total bounds the whole request, all attempts included.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]{1,5}(h|m|s|ms)){1,4}$') || (duration(self) >= duration('1ms') && duration(self) <= duration('1h'))",message="total must be between 1ms and 1h"
	Total Duration `json:"total,omitempty"`

	// Attempt bounds one provider attempt.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]{1,5}(h|m|s|ms)){1,4}$') || (duration(self) >= duration('1ms') && duration(self) <= duration('1h'))",message="attempt must be between 1ms and 1h"
	Attempt Duration `json:"attempt,omitempty"`

	// FirstChunk bounds the wait for the first streamed content chunk.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]{1,5}(h|m|s|ms)){1,4}$') || (duration(self) >= duration('1ms') && duration(self) <= duration('1h'))",message="firstChunk must be between 1ms and 1h"
	FirstChunk Duration `json:"firstChunk,omitempty"`

	// Idle bounds the gap between two chunks of an established stream.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]{1,5}(h|m|s|ms)){1,4}$') || (duration(self) >= duration('1ms') && duration(self) <= duration('1h'))",message="idle must be between 1ms and 1h"
	Idle Duration `json:"idle,omitempty"`
}

// ResolvedRoute is a route as compiled into the snapshot.
type ResolvedRoute struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// +optional
	BaseURL string `json:"baseURL,omitempty"`
}

// ModelAliasStatus is what the controller made of the ModelAlias.
type ModelAliasStatus struct {
	CommonStatus `json:",inline"`

	// Alias is the public name in effect (spec.alias or metadata.name).
	// +optional
	Alias string `json:"alias,omitempty"`

	// Primary is "provider/model" of the primary route (for kubectl get).
	// +optional
	Primary string `json:"primary,omitempty"`

	// Fallback lists the fallbacks a request may use, "provider/model,...".
	// +optional
	Fallback string `json:"fallback,omitempty"`

	// Routes are the resolved routes, primary first, when the alias is served.
	// +optional
	// +kubebuilder:validation:MaxItems=4
	Routes []ResolvedRoute `json:"routes,omitempty"`
}

// ModelAlias is a public model name routed to a primary provider model with
// ordered fallbacks.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ma,categories=llmgw
// +kubebuilder:printcolumn:name="Alias",type=string,JSONPath=`.status.alias`
// +kubebuilder:printcolumn:name="Primary",type=string,JSONPath=`.status.primary`
// +kubebuilder:printcolumn:name="Fallback",type=string,JSONPath=`.status.fallback`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ModelAlias struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ModelAliasSpec   `json:"spec"`
	Status ModelAliasStatus `json:"status,omitempty"`
}

// ModelAliasList is a list of ModelAliases.
//
// +kubebuilder:object:root=true
type ModelAliasList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ModelAlias `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ModelAlias{}, &ModelAliasList{})
}
