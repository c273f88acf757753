package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ModelAliasSpec is a public model name and the routes that serve it.
//
// +kubebuilder:validation:XValidation:rule="!has(self.fallbacks) || !self.fallbacks.exists(f, f.provider == self.primary.provider && f.model == self.primary.model)",message="a fallback must differ from the primary route"
type ModelAliasSpec struct {
	// Alias is the model name clients send. Defaults to metadata.name; set it
	// when the public name has characters an object name cannot (upper case, '/', ':').
	// When two ModelAliases ask for one name, the older valid one gets it.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$`
	Alias string `json:"alias,omitempty"`

	// Primary is tried first.
	Primary Route `json:"primary"`

	// Fallbacks are tried in order when the previous route fails before
	// anything was sent to the client (timeout, 429, 5xx, connection
	// failure); never after a provider's 400, 401 or 403. A route whose
	// ProviderEndpoint is missing or not ready is skipped: the alias is
	// served through the routes that work (ResolvedRefs says which do not).
	// +optional
	// +listType=map
	// +listMapKey=provider
	// +listMapKey=model
	// +kubebuilder:validation:MaxItems=3
	Fallbacks []Route `json:"fallbacks,omitempty"`

	// MaxFallbacks caps how many fallbacks one request may try after the
	// primary (default 1). A request never tries more fallbacks than are
	// listed, so 1 with no fallbacks means none.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3
	MaxFallbacks *int32 `json:"maxFallbacks,omitempty"`

	// Timeouts bound one request to this alias (defaults: total 60s,
	// attempt 20s, firstChunk 10s, idle 15s).
	// +optional
	// +kubebuilder:default={}
	Timeouts *AliasTimeouts `json:"timeouts,omitempty"`
}

// Route is a ProviderEndpoint (same namespace) and the provider's own model name.
type Route struct {
	// Provider is the name of a ProviderEndpoint in this namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Provider string `json:"provider"`

	// Model is the model name the provider knows (sent upstream as is).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^\S+$`
	Model string `json:"model"`
}

// AliasTimeouts bound one request. Every timeout is at most total: an
// attempt, a wait for the first chunk or an idle gap longer than total is cut
// short by it.
type AliasTimeouts struct {
	// Total bounds the whole request, all attempts included (default 60s).
	// +optional
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]{1,5}(h|m|s|ms)){1,4}$') || (duration(self) >= duration('1ms') && duration(self) <= duration('1h'))",message="total must be between 1ms and 1h"
	Total Duration `json:"total,omitempty"`

	// Attempt bounds one provider attempt (default 20s); for a stream, the
	// time until its first content chunk.
	// +optional
	// +kubebuilder:default="20s"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]{1,5}(h|m|s|ms)){1,4}$') || (duration(self) >= duration('1ms') && duration(self) <= duration('1h'))",message="attempt must be between 1ms and 1h"
	Attempt Duration `json:"attempt,omitempty"`

	// FirstChunk bounds the wait for the first streamed content chunk
	// (default 10s); a stream that misses it falls back like a timeout.
	// +optional
	// +kubebuilder:default="10s"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]{1,5}(h|m|s|ms)){1,4}$') || (duration(self) >= duration('1ms') && duration(self) <= duration('1h'))",message="firstChunk must be between 1ms and 1h"
	FirstChunk Duration `json:"firstChunk,omitempty"`

	// Idle bounds the gap between two chunks of an established stream
	// (default 15s); a stream that stalls longer ends with an error event.
	// +optional
	// +kubebuilder:default="15s"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]{1,5}(h|m|s|ms)){1,4}$') || (duration(self) >= duration('1ms') && duration(self) <= duration('1h'))",message="idle must be between 1ms and 1h"
	Idle Duration `json:"idle,omitempty"`
}

// ResolvedRoute is a route the gateways use, with the address they call.
type ResolvedRoute struct {
	// Provider is the ProviderEndpoint's name.
	Provider string `json:"provider"`
	// Model is the provider's model name.
	Model string `json:"model"`
	// BaseURL is the address the gateways call for this route.
	// +optional
	BaseURL string `json:"baseURL,omitempty"`
}

// ModelAliasStatus says how the gateways serve the ModelAlias.
type ModelAliasStatus struct {
	CommonStatus `json:",inline"`

	// Alias is the public name in effect (spec.alias or metadata.name).
	// +optional
	Alias string `json:"alias,omitempty"`

	// Primary is the configured primary route, "provider/model".
	// +optional
	Primary string `json:"primary,omitempty"`

	// Fallback lists the configured fallbacks a request may try (up to
	// maxFallbacks), "provider/model,...".
	// +optional
	Fallback string `json:"fallback,omitempty"`

	// Routes are the routes a request may take, in order, while the alias is
	// served: of the configured routes those whose ProviderEndpoint works,
	// the first of them as the primary and at most maxFallbacks after it.
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
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="ResolvedRefs",type=string,JSONPath=`.status.conditions[?(@.type=="ResolvedRefs")].status`
// +kubebuilder:printcolumn:name="Programmed",type=string,JSONPath=`.status.conditions[?(@.type=="Programmed")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,priority=1
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
	register(&ModelAlias{}, &ModelAliasList{})
}
