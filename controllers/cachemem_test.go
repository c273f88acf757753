package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTrimForCache(t *testing.T) {
	in := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x",
		Annotations:   map[string]string{lastApplied: `{"big":"copy"}`, "keep": "me"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	out, err := trimForCache(in)
	if err != nil {
		t.Fatal(err)
	}
	cm := out.(*corev1.ConfigMap)
	if cm.ManagedFields != nil || len(cm.Annotations) != 1 || cm.Annotations["keep"] != "me" {
		t.Fatalf("trimmed: %+v", cm.ObjectMeta)
	}
	if _, err := trimForCache("tombstone"); err != nil {
		t.Fatal(err)
	}
}
