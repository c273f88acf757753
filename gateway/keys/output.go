package keys

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// gatewayKeyKind is the kind of v1alpha1.GatewayKey.
const gatewayKeyKind = "GatewayKey"

// Bounds of spec.rateLimit in the GatewayKey CRD (the +kubebuilder markers on
// v1alpha1.RateLimit). The snapshot has no upper bound, so they are checked
// here: a resource the API server would refuse is never printed, and a value
// never wraps around in the CRD's int32 fields.
const (
	maxGatewayKeyRPM   = 1_000_000
	maxGatewayKeyBurst = 100_000
)

// GatewayKey returns entry as a GatewayKey custom resource (hash only, no
// status). namespace may be empty.
func GatewayKey(entry snapshot.Key, namespace string) (*v1alpha1.GatewayKey, error) {
	rl := entry.RateLimit
	if rl.RPM < 1 || rl.RPM > maxGatewayKeyRPM {
		return nil, fmt.Errorf("rate limit of %d requests per minute: a GatewayKey allows 1..%d (spec.rateLimit.requestsPerMinute)", rl.RPM, maxGatewayKeyRPM)
	}
	if rl.Burst < 1 || rl.Burst > maxGatewayKeyBurst {
		return nil, fmt.Errorf("burst of %d requests: a GatewayKey allows 1..%d (spec.rateLimit.burst)", rl.Burst, maxGatewayKeyBurst)
	}
	if namespace != "" {
		if msgs := validation.IsDNS1123Label(namespace); len(msgs) > 0 {
			return nil, fmt.Errorf("namespace %q: %s", namespace, strings.Join(msgs, "; "))
		}
	}
	gk := &v1alpha1.GatewayKey{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: gatewayKeyKind},
		ObjectMeta: metav1.ObjectMeta{Name: entry.ID, Namespace: namespace},
		Spec: v1alpha1.GatewayKeySpec{
			KeyHash:   entry.Hash,
			KeyPrefix: entry.Prefix,
			Models:    slices.Clone(entry.Models),
			RateLimit: &v1alpha1.RateLimit{RequestsPerMinute: int32(rl.RPM), Burst: int32(rl.Burst)},
			Disabled:  entry.Disabled,
			// Create held them to the CRD's bounds and name rule; zero
			// values are omitted, as in the snapshot.
			TokensPerMinute: entry.TokensPerMinute,
			Group:           entry.Group,
		},
	}
	if b := entry.Budget; b != nil {
		// Currency and period explicit, as normalized: the resource reads the
		// same whatever the CRD's defaults.
		gk.Spec.Budget = &v1alpha1.Budget{Amount: b.Amount, Currency: b.Currency, Period: v1alpha1.BudgetPeriod(b.Period)}
	}
	if entry.ExpiresAt != nil {
		// metav1.Time serializes to whole seconds (RFC 3339, UTC).
		t := metav1.NewTime(*entry.ExpiresAt)
		gk.Spec.ExpiresAt = &t
	}
	if p := entry.Previous; p != nil {
		gk.Spec.Previous = &v1alpha1.PreviousKey{KeyHash: p.Hash, KeyPrefix: p.Prefix, AcceptedUntil: metav1.NewTime(p.Until)}
	}
	return gk, nil
}

// GatewayKeyYAML renders entry as a GatewayKey custom resource (hash only), ready
// for kubectl apply. namespace may be empty.
func GatewayKeyYAML(entry snapshot.Key, namespace string) ([]byte, error) {
	gk, err := GatewayKey(entry, namespace)
	if err != nil {
		return nil, err
	}
	return gatewayKeyYAML(gk, "# Created by `llmgw keys create`: only the key's hash is here; the plaintext was shown once.\n")
}

// gatewayKeyYAML renders gk after header, without its status.
func gatewayKeyYAML(gk *v1alpha1.GatewayKey, header string) ([]byte, error) {
	// Through JSON, exactly as a typed client would send it, then without the
	// status: the struct always serializes (as "status: {}"), and status is the
	// controller's to write.
	raw, err := json.Marshal(gk)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // integers stay integers
	if err := dec.Decode(&obj); err != nil {
		return nil, err
	}
	delete(obj, "status")
	body, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
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
