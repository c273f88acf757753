package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProviderEndpointSpec is an upstream model vendor the gateway may call.
//
// +kubebuilder:validation:XValidation:rule="has(self.url) != has(self.service)",message="exactly one of url or service must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.responsesAPI) || !self.responsesAPI || self.protocol == 'openai'",message="responsesAPI is only for protocol openai",fieldPath=".responsesAPI"
// +kubebuilder:validation:XValidation:rule="!has(self.url) || self.url.matches('^https?://[^/?#@\\\\s]+(/[^?#@\\\\s]*)?$')",message="url must be http(s)://host[:port][/path], without credentials, query or fragment",fieldPath=".url",reason=FieldValueInvalid
type ProviderEndpointSpec struct {
	// Protocol is the API the provider speaks: openai (chat completions) or
	// anthropic (Messages).
	// +kubebuilder:validation:Enum=openai;anthropic
	Protocol string `json:"protocol"`

	// ResponsesAPI says that the provider (protocol openai) also serves
	// OpenAI's Responses API at /v1/responses, as OpenAI does: a caller's
	// POST /v1/responses passes through to it unchanged but for the model.
	// Without it, Responses requests routed here are translated to chat
	// completions.
	// +optional
	ResponsesAPI bool `json:"responsesAPI,omitempty"`

	// The URL rule sits on the spec so that the API's error does not quote
	// the URL (and any credentials in it) back.

	// URL is the provider's base URL, scheme://host[:port][/path]; set either
	// url or service. User info, query and fragment are refused: URLs show up
	// in logs and status, and the API key belongs in credential.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url,omitempty"`

	// Service points at an in-cluster Service in the same namespace instead
	// of a url.
	// +optional
	Service *ServiceReference `json:"service,omitempty"`

	// Credential names the Secret key that holds the provider's API key. The
	// gateways read it themselves (and again when it changes); it never
	// appears in any status. Omit it for a provider that needs no key.
	// +optional
	Credential *Credential `json:"credential,omitempty"`

	// Timeouts for connecting and for the response headers (defaults:
	// connect 2s, responseHeader 10s).
	// +optional
	// +kubebuilder:default={}
	Timeouts *ProviderTimeouts `json:"timeouts,omitempty"`

	// CircuitBreaker takes the provider out of routing while it keeps failing,
	// so that callers do not wait for its timeouts: aliases go straight to
	// their next route. It opens after consecutiveFailures failures in a row
	// that are the provider's fault (timeouts, connection failures, HTTP 429
	// and 5xx, broken or unreadable answers, a refused credential; never an
	// HTTP 400 about the request, nor a client that went away). While open,
	// the provider is skipped unless it is the last route an alias may try.
	// After coolDown it lets halfOpenProbes requests through: when all of them
	// succeed it closes, when one fails it opens again. A stream counts as a
	// success once its first content arrives. Each gateway replica keeps its
	// own breakers. Omitted: on, with the defaults below.
	// +optional
	CircuitBreaker *CircuitBreaker `json:"circuitBreaker,omitempty"`

	// Prices are what this provider's models cost, per million tokens. A
	// route (this provider and one of its models) without a price is
	// unpriced: its requests are recorded with cost 0 and no currency. Every
	// usage record carries the cost of the tokens actually relayed at the
	// price of the route that answered, as of the request's start. Several
	// prices for one model with different effectiveFrom times are a price
	// history: a request pays the latest one in effect when it started, so a
	// price change never rewrites the cost of earlier requests. All prices
	// of all ProviderEndpoints in a namespace share one currency; a
	// ProviderEndpoint whose prices name another currency than the oldest
	// priced one is refused (InvalidSpec).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(a, self.exists_one(b, b.model == a.model && has(b.effectiveFrom) == has(a.effectiveFrom) && (!has(a.effectiveFrom) || b.effectiveFrom == a.effectiveFrom)))",message="at most one price per model and effectiveFrom"
	Prices []ModelPrice `json:"prices,omitempty"`
}

// ModelPrice is one model's price per million tokens from effectiveFrom on.
// Amounts are decimal strings (up to 9 integer and 6 fractional digits, such
// as "2.5" or "0.075") so that costs are computed exactly, without floating
// point rounding.
type ModelPrice struct {
	// Model is the provider's own model name, as a ModelAlias route names it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^\S+$`
	Model string `json:"model"`

	// Currency is the ISO-4217 code the amounts are in (default USD).
	// +optional
	// +kubebuilder:default=USD
	// +kubebuilder:validation:Pattern=`^[A-Z]{3}$`
	Currency string `json:"currency,omitempty"`

	// InputPerMillion is the price of one million input (prompt) tokens.
	// +kubebuilder:validation:Pattern=`^[0-9]{1,9}(\.[0-9]{1,6})?$`
	InputPerMillion string `json:"inputPerMillion"`

	// CachedInputPerMillion is the price of one million input tokens the
	// provider served from its prompt cache (default: inputPerMillion).
	// Cached tokens are part of the input tokens and are charged at this
	// price instead of inputPerMillion.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]{1,9}(\.[0-9]{1,6})?$`
	CachedInputPerMillion string `json:"cachedInputPerMillion,omitempty"`

	// OutputPerMillion is the price of one million output (completion) tokens.
	// +kubebuilder:validation:Pattern=`^[0-9]{1,9}(\.[0-9]{1,6})?$`
	OutputPerMillion string `json:"outputPerMillion"`

	// ReasoningPerMillion is the price of one million reasoning tokens
	// (default: outputPerMillion). Reasoning tokens are part of the output
	// tokens and are charged at this price instead of outputPerMillion.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]{1,9}(\.[0-9]{1,6})?$`
	ReasoningPerMillion string `json:"reasoningPerMillion,omitempty"`

	// EffectiveFrom is when this price starts to apply (RFC 3339). Omitted:
	// since forever. At most one price per model may omit it or name the
	// same time.
	// +optional
	EffectiveFrom *metav1.Time `json:"effectiveFrom,omitempty"`
}

// CircuitBreaker are a provider's circuit breaker thresholds.
type CircuitBreaker struct {
	// ConsecutiveFailures in a row open the breaker; 0 turns it off (the
	// provider is never skipped).
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	ConsecutiveFailures *int32 `json:"consecutiveFailures,omitempty"`

	// CoolDown is how long the breaker stays open before it probes the
	// provider again, a Go duration such as "30s".
	// +optional
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]{1,5}(h|m|s|ms)){1,4}$') || (duration(self) >= duration('1ms') && duration(self) <= duration('24h'))",message="coolDown must be between 1ms and 24h"
	CoolDown Duration `json:"coolDown,omitempty"`

	// HalfOpenProbes is how many requests the breaker lets through after the
	// cool-down (other requests skip the provider meanwhile); all of them must
	// succeed to close it.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	HalfOpenProbes int32 `json:"halfOpenProbes,omitempty"`
}

// ServiceReference is a Service in the ProviderEndpoint's namespace; the base
// URL becomes scheme://name.namespace.svc:port/path.
type ServiceReference struct {
	// Name is the Service's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Port is the Service port to call.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`

	// Scheme is http or https (default http).
	// +optional
	// +kubebuilder:default=http
	// +kubebuilder:validation:Enum=http;https
	Scheme string `json:"scheme,omitempty"`

	// Path is a base path prefix, e.g. "/v1".
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[^?#@\s]*$`
	Path string `json:"path,omitempty"`
}

// Credential names where the provider API key lives.
type Credential struct {
	// SecretRef is the Secret key holding the API key, sent to the provider
	// as its protocol expects (Authorization: Bearer, or x-api-key).
	SecretRef SecretKeyReference `json:"secretRef"`
}

// SecretKeyReference is one key of a Secret in the same namespace.
type SecretKeyReference struct {
	// Name is the Secret's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Name string `json:"name"`

	// Key is the data key within the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
}

// ProviderTimeouts bound one call to the provider.
type ProviderTimeouts struct {
	// Connect bounds opening a connection to the provider (default 2s).
	// +optional
	// +kubebuilder:default="2s"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]{1,5}(h|m|s|ms)){1,4}$') || (duration(self) >= duration('1ms') && duration(self) <= duration('5m'))",message="connect must be between 1ms and 5m"
	Connect Duration `json:"connect,omitempty"`

	// ResponseHeader bounds the wait for the provider's response headers
	// (default 10s).
	// +optional
	// +kubebuilder:default="10s"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]{1,5}(h|m|s|ms)){1,4}$') || (duration(self) >= duration('1ms') && duration(self) <= duration('1h'))",message="responseHeader must be between 1ms and 1h"
	ResponseHeader Duration `json:"responseHeader,omitempty"`
}

// ProviderEndpointStatus says whether the gateways can call the provider.
type ProviderEndpointStatus struct {
	CommonStatus `json:",inline"`

	// BaseURL is the address the gateways call (url, or the Service's
	// in-cluster address).
	// +optional
	BaseURL string `json:"baseURL,omitempty"`
}

// ProviderEndpoint is an upstream model provider: protocol, address, credential.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pe,categories=llmgw
// +kubebuilder:printcolumn:name="Protocol",type=string,JSONPath=`.spec.protocol`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.baseURL`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="ResolvedRefs",type=string,JSONPath=`.status.conditions[?(@.type=="ResolvedRefs")].status`
// +kubebuilder:printcolumn:name="Programmed",type=string,JSONPath=`.status.conditions[?(@.type=="Programmed")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ProviderEndpoint struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProviderEndpointSpec   `json:"spec"`
	Status ProviderEndpointStatus `json:"status,omitempty"`
}

// ProviderEndpointList is a list of ProviderEndpoints.
//
// +kubebuilder:object:root=true
type ProviderEndpointList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProviderEndpoint `json:"items"`
}

func init() {
	register(&ProviderEndpoint{}, &ProviderEndpointList{})
}
