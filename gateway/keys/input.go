package keys

import (
	"bytes"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// readGatewayKey decodes one GatewayKey as `kubectl get gatewaykey NAME -o
// yaml` (or `-o json`) prints it, or as `llmgw keys create --output yaml`
// does. Its spec is decoded strictly: a field this llmgw does not know
// (a newer CRD's) would otherwise be dropped from the rotated resource,
// and applying that would remove it. Metadata and status are read as the
// API server writes them, unknown fields and all. Errors never quote a
// plaintext key.
func readGatewayKey(doc []byte) (*v1alpha1.GatewayKey, error) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", errNotAGatewayKey, keyformat.Redact(err.Error()))
	}
	var obj struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   metav1.ObjectMeta `json:"metadata"`
		Spec       json.RawMessage   `json:"spec"`
	}
	if err := json.Unmarshal(j, &obj); err != nil {
		return nil, fmt.Errorf("%w: %s", errNotAGatewayKey, keyformat.Redact(err.Error()))
	}
	switch {
	case obj.Kind != gatewayKeyKind:
		return nil, fmt.Errorf("%w; got kind %s", errNotAGatewayKey, quoteRedacted(obj.Kind))
	case obj.APIVersion != v1alpha1.GroupVersion.String():
		return nil, fmt.Errorf("%w; got apiVersion %s, this llmgw reads %s", errNotAGatewayKey, quoteRedacted(obj.APIVersion), v1alpha1.GroupVersion)
	case obj.Metadata.Name == "":
		return nil, fmt.Errorf("%w; it has no metadata.name", errNotAGatewayKey)
	case len(obj.Spec) == 0 || string(obj.Spec) == "null":
		return nil, fmt.Errorf("%w; it has no spec", errNotAGatewayKey)
	}
	gk := &v1alpha1.GatewayKey{ObjectMeta: obj.Metadata}
	gk.APIVersion, gk.Kind = obj.APIVersion, obj.Kind
	dec := json.NewDecoder(bytes.NewReader(obj.Spec))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&gk.Spec); err != nil {
		return nil, fmt.Errorf("spec: %s (this llmgw would drop it from the rotated GatewayKey: use the llmgw release of the cluster's CRD)",
			keyformat.Redact(err.Error()))
	}
	return gk, nil
}
