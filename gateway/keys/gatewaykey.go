package keys

import (
	"encoding/json"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/llmgw/llmgw/api/snapshot"
)

// GatewayKey resource identity; the CRD in api/v1alpha1 uses the same spec field
// names. The type is mirrored here rather than imported so that the key tooling
// does not depend on the Kubernetes API machinery.
const (
	GatewayKeyAPIVersion = "llmgw.dev/v1alpha1"
	GatewayKeyKind       = "GatewayKey"
)

type gatewayKey struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   objectMeta     `json:"metadata"`
	Spec       gatewayKeySpec `json:"spec"`
}

type objectMeta struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

type gatewayKeySpec struct {
	KeyHash   string        `json:"keyHash"`
	KeyPrefix string        `json:"keyPrefix"`
	Models    []string      `json:"models"`
	RateLimit rateLimitSpec `json:"rateLimit"`
	Disabled  bool          `json:"disabled"`
	ExpiresAt *time.Time    `json:"expiresAt,omitempty"`
}

type rateLimitSpec struct {
	RequestsPerMinute int `json:"requestsPerMinute"`
	Burst             int `json:"burst"`
}

// GatewayKeyYAML renders entry as a GatewayKey custom resource (hash only), ready
// for kubectl apply. namespace may be empty.
func GatewayKeyYAML(entry snapshot.Key, namespace string) ([]byte, error) {
	gk := gatewayKey{
		APIVersion: GatewayKeyAPIVersion,
		Kind:       GatewayKeyKind,
		Metadata:   objectMeta{Name: entry.ID, Namespace: namespace},
		Spec: gatewayKeySpec{
			KeyHash:   entry.Hash,
			KeyPrefix: entry.Prefix,
			Models:    entry.Models,
			RateLimit: rateLimitSpec{RequestsPerMinute: entry.RateLimit.RPM, Burst: entry.RateLimit.Burst},
			Disabled:  entry.Disabled,
			ExpiresAt: entry.ExpiresAt,
		},
	}
	body, err := yaml.Marshal(gk)
	if err != nil {
		return nil, err
	}
	header := "# Created by `llmgw keys create`: only the key's hash is here; the plaintext was shown once.\n"
	return append([]byte(header), body...), nil
}

// EntryJSON renders entry as the snapshot's key object, indented like the snapshot.
func EntryJSON(entry snapshot.Key) ([]byte, error) {
	b, err := json.MarshalIndent(entry, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
