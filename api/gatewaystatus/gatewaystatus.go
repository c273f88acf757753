// Package gatewaystatus is the contract in the other direction from package
// snapshot: what each gateway replica reports back about the snapshot it runs,
// so that the controller can say Programmed=True only once the gateways serve
// an object, and why not when one refused it.
//
// Each replica writes one data key of one ConfigMap (DefaultConfigMapName in
// the controller's namespace), named after its Pod, with a JSON merge patch
// that touches only that key: replicas never conflict, and the gateway's Role
// needs only get and patch on that one name. The controller creates the
// ConfigMap; it reads every key but trusts only those of live gateway Pods.
package gatewaystatus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/llmgw/llmgw/api/keyformat"
)

// DefaultConfigMapName is the ConfigMap the gateways report into.
const DefaultConfigMapName = "llmgw-gateway-status"

// MaxReasonLen bounds RefusedReason: it ends up in condition messages of
// every object of the refused snapshot.
const MaxReasonLen = 512

// Report is one replica's entry.
type Report struct {
	// Version is the snapshot version the replica runs ("" before its first).
	Version string `json:"version"`
	// RefusedVersion is the newest snapshot the replica refused since it last
	// applied one, "" when it could not even read a version out of it.
	// RefusedReason is set whenever there is such a refusal.
	RefusedVersion string `json:"refusedVersion,omitempty"`
	// RefusedReason says why, in one short line (ShortReason).
	RefusedReason string `json:"refusedReason,omitempty"`
	// At is when the replica last applied or refused a snapshot, by its own
	// clock. The controller compares it with the Pod's container start time
	// (same node, same clock) to ignore entries an earlier process left.
	At time.Time `json:"at"`
}

// Refused says whether the report carries a refusal.
func (r Report) Refused() bool { return r.RefusedReason != "" }

// Encode is the data value of the replica's key.
func (r Report) Encode() (string, error) {
	r.At = r.At.UTC().Round(time.Millisecond)
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encoding gateway report: %w", err)
	}
	return string(b), nil
}

// Parse reads one data value. Unknown fields are refused so that a report
// from a newer gateway is noticed rather than half read.
func Parse(s string) (Report, error) {
	var r Report
	d := json.NewDecoder(strings.NewReader(s))
	d.DisallowUnknownFields()
	if err := d.Decode(&r); err != nil {
		return Report{}, fmt.Errorf("gateway report: %w", err)
	}
	if d.More() {
		return Report{}, errors.New("gateway report: trailing data")
	}
	if r.RefusedVersion != "" && !r.Refused() {
		return Report{}, errors.New("gateway report: refusedVersion without refusedReason")
	}
	return r, nil
}

// ShortReason turns a refusal error into what a report may carry: its first
// line, plaintext keys redacted, at most MaxReasonLen bytes. Gateway errors
// never quote credential values; Secret names and object names are no secret
// (they are in the objects' specs already).
func ShortReason(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " (and more)"
	}
	s = keyformat.Redact(strings.TrimSpace(s))
	if s == "" {
		s = "refused"
	}
	if len(s) > MaxReasonLen {
		cut := MaxReasonLen - len("...")
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

// MergePatch is the JSON merge patch that sets only pod's key to value.
func MergePatch(pod, value string) ([]byte, error) {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(map[string]any{"data": map[string]string{pod: value}}); err != nil {
		return nil, fmt.Errorf("encoding merge patch: %w", err)
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
