package usage

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// encodeAttempts appends the column by hand; what it writes must read back
// as json.Marshal's encoding of the same list does, whatever the strings hold.
func TestEncodeAttemptsDecodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []Attempt
	}{
		{"none", nil},
		{"one, every field", []Attempt{{Provider: "alpha", Model: "alpha-large", Outcome: "success", StatusCode: 200, LatencyMs: 12}}},
		{"a fallback", []Attempt{
			{Provider: "alpha", Model: "m", Outcome: "upstream_5xx", StatusCode: 503, LatencyMs: 3},
			{Provider: "beta", Model: "b", Outcome: "success", StatusCode: 200, LatencyMs: 40},
		}},
		{"every field empty", []Attempt{{}, {}}},
		{"only numbers", []Attempt{{StatusCode: -1, LatencyMs: 1 << 40}}},
		{"only the last field", []Attempt{{LatencyMs: 7}}},
		{"strings that need escaping", []Attempt{{Provider: `q"uo\te`, Model: "tab\tnl\n<&>\u2028", Outcome: "ünïcödé 漢字"}}},
		{"invalid UTF-8", []Attempt{{Provider: "a\xffb", Model: string([]byte{0xc3})}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := encodeAttempts(tc.in)
			if !json.Valid([]byte(got)) {
				t.Fatalf("encodeAttempts = %s: not JSON", got)
			}
			js := make([]attemptJSON, len(tc.in))
			for i, a := range tc.in {
				js[i] = attemptJSON{P: a.Provider, M: a.Model, O: a.Outcome, S: a.StatusCode, L: a.LatencyMs}
			}
			want, err := json.Marshal(js)
			if err != nil {
				t.Fatal(err)
			}
			var fromHand, fromMarshal []attemptJSON
			if err := json.Unmarshal([]byte(got), &fromHand); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(want, &fromMarshal); err != nil {
				t.Fatal(err)
			}
			if len(tc.in) == 0 {
				fromMarshal = []attemptJSON{} // json.Marshal writes null for nil; the column holds []
			}
			if !reflect.DeepEqual(fromHand, fromMarshal) {
				t.Fatalf("encodeAttempts = %s reads as %+v; json.Marshal's %s as %+v", got, fromHand, want, fromMarshal)
			}
			// Without characters encoding/json escapes for HTML, the bytes are its bytes.
			if len(tc.in) > 0 && !strings.ContainsAny(string(want), `\`) && got != string(want) {
				t.Fatalf("encodeAttempts = %s, json.Marshal = %s", got, want)
			}
		})
	}
}
