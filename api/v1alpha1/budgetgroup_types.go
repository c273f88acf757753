package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BudgetPeriod is the calendar period a budget covers, in UTC.
//
// +kubebuilder:validation:Enum=day;month
type BudgetPeriod string

// Reasons of a GatewayKey's ResolvedRefs (and Ready) about its group.
const (
	// ReasonBudgetGroupNotFound: the key names a BudgetGroup that does not
	// exist; the gateways refuse its chat requests (403
	// budget_group_missing) until it does.
	ReasonBudgetGroupNotFound = "BudgetGroupNotFound"
	// ReasonBudgetGroupNotReady: the key names a BudgetGroup that is not
	// accepted; the gateways refuse its chat requests (403
	// budget_group_missing) until it is.
	ReasonBudgetGroupNotReady = "BudgetGroupNotReady"
)

// Budget periods.
const (
	// BudgetDay resets at 00:00 UTC every day.
	BudgetDay BudgetPeriod = "day"
	// BudgetMonth resets at 00:00 UTC on the first day of every month.
	BudgetMonth BudgetPeriod = "month"
)

// Budget is an amount of money the requests may cost per period. Costs come
// from the prices of the ProviderEndpoints (spec.prices); an unpriced route
// costs nothing. Each request reserves its most expensive possible cost
// before any provider is called and is charged its real cost when it ends; a
// request whose possible cost does not fit what is left gets 429
// budget_exceeded, with Retry-After at the start of the next period.
type Budget struct {
	// Amount is a decimal with at most 6 fractional digits, such as "25" or
	// "0.125", in the currency below.
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^[0-9]{1,9}(\.[0-9]{1,6})?$`
	Amount string `json:"amount"`

	// Currency is an ISO-4217 code. Every price and budget of a namespace is
	// in one currency: a budget in another one is not accepted.
	// +optional
	// +kubebuilder:default=USD
	// +kubebuilder:validation:Pattern=`^[A-Z]{3}$`
	Currency string `json:"currency,omitempty"`

	// Period is "day" or "month" (UTC calendar periods). Requests are
	// charged to the period in which they started.
	// +optional
	// +kubebuilder:default=month
	Period BudgetPeriod `json:"period,omitempty"`
}

// BudgetGroupSpec is a team's limits, shared by every GatewayKey that names
// the group in spec.group: their requests draw from the group's limits as
// well as from their own.
type BudgetGroupSpec struct {
	// TokensPerMinute limits the tokens (input and output) the group's keys
	// use together per minute, on every gateway replica together when the
	// gateways share a limit store. Unset: no token limit.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000000
	TokensPerMinute int64 `json:"tokensPerMinute,omitempty"`

	// Budget limits what the group's keys may spend together per period.
	// Unset: no budget.
	// +optional
	Budget *Budget `json:"budget,omitempty"`
}

// BudgetGroupStatus says whether the gateways enforce the group.
type BudgetGroupStatus struct {
	CommonStatus `json:",inline"`

	// Keys is how many GatewayKeys name the group.
	// +optional
	Keys int32 `json:"keys,omitempty"`
}

// BudgetGroup is a token limit and a budget several GatewayKeys share (a team
// budget). A key that names a group that does not exist, or is not accepted,
// is refused with 403 budget_group_missing: a missing group never lifts its
// limits.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bg,categories=llmgw
// +kubebuilder:printcolumn:name="TPM",type=integer,JSONPath=`.spec.tokensPerMinute`
// +kubebuilder:printcolumn:name="Budget",type=string,JSONPath=`.spec.budget.amount`
// +kubebuilder:printcolumn:name="Currency",type=string,JSONPath=`.spec.budget.currency`
// +kubebuilder:printcolumn:name="Period",type=string,JSONPath=`.spec.budget.period`
// +kubebuilder:printcolumn:name="Keys",type=integer,JSONPath=`.status.keys`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="ResolvedRefs",type=string,JSONPath=`.status.conditions[?(@.type=="ResolvedRefs")].status`
// +kubebuilder:printcolumn:name="Programmed",type=string,JSONPath=`.status.conditions[?(@.type=="Programmed")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BudgetGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BudgetGroupSpec   `json:"spec"`
	Status BudgetGroupStatus `json:"status,omitempty"`
}

// BudgetGroupList is a list of BudgetGroups.
//
// +kubebuilder:object:root=true
type BudgetGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BudgetGroup `json:"items"`
}

func init() {
	register(&BudgetGroup{}, &BudgetGroupList{})
}
