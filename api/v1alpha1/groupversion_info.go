// Package v1alpha1 holds the llmgw.dev/v1alpha1 API: ProviderEndpoint,
// ModelAlias, GatewayKey and BudgetGroup, which the controller compiles into one gateway
// snapshot.
//
// +kubebuilder:object:generate=true
// +groupName=llmgw.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "llmgw.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme

	// knownTypes are the kinds each types file registers in its init.
	knownTypes []runtime.Object
)

// register adds kinds (and their lists) to what AddToScheme registers.
func register(objs ...runtime.Object) { knownTypes = append(knownTypes, objs...) }

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, knownTypes...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
