// Package v1alpha1 holds the llmgw.dev/v1alpha1 API: ProviderEndpoint,
// ModelAlias, GatewayKey and BudgetGroup, which the controller compiles into one gateway
// snapshot.
//
// +kubebuilder:object:generate=true
// +groupName=llmgw.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "llmgw.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
