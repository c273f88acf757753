package keys

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/api/keyformat"
)

// TestCLIOutputGolden pins the bytes `llmgw keys create --entry-out -` prints,
// with the key's random prefix and hash replaced by placeholders: without the
// quota flags the entry is exactly what it was before they existed (scripts
// and diffs of committed entries depend on it), and with them the fields are
// added and nothing else changes.
func TestCLIOutputGolden(t *testing.T) {
	const header = "# Created by `llmgw keys create`: only the key's hash is here; the plaintext was shown once.\n"
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"json without quotas", []string{"--id", "k"}, `{
  "id": "k",
  "prefix": "PREFIX",
  "hash": "HASH",
  "models": [
    "*"
  ],
  "rateLimit": {
    "rpm": 60,
    "burst": 10
  },
  "disabled": false,
  "expiresAt": null
}
`},
		{"yaml without quotas", []string{"--id", "k", "--output", "yaml"}, header + `apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata:
  name: k
  namespace: llmgw-system
spec:
  keyHash: HASH
  keyPrefix: PREFIX
  models:
  - '*'
  rateLimit:
    burst: 10
    requestsPerMinute: 60
`},
		{"json with quotas", []string{"--id", "k", "--tpm", "100000", "--budget", "25", "--group", "platform"}, `{
  "id": "k",
  "prefix": "PREFIX",
  "hash": "HASH",
  "models": [
    "*"
  ],
  "rateLimit": {
    "rpm": 60,
    "burst": 10
  },
  "disabled": false,
  "expiresAt": null,
  "tokensPerMinute": 100000,
  "budget": {
    "amount": "25",
    "currency": "USD",
    "period": "month"
  },
  "group": "platform"
}
`},
		{"yaml with quotas", []string{"--id", "k", "--output", "yaml", "--tpm", "100000", "--budget", "0.5", "--budget-period", "day", "--budget-currency", "EUR", "--group", "platform"}, header + `apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata:
  name: k
  namespace: llmgw-system
spec:
  budget:
    amount: "0.5"
    currency: EUR
    period: day
  group: platform
  keyHash: HASH
  keyPrefix: PREFIX
  models:
  - '*'
  rateLimit:
    burst: 10
    requestsPerMinute: 60
  tokensPerMinute: 100000
`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, err := runCLI(t, append([]string{"create", "--entry-out", "-"}, c.args...)...)
			if err != nil {
				t.Fatal(err, stderr)
			}
			plain, _, _ := strings.Cut(stderr, "\n")
			prefix, ok := keyformat.PrefixOf(plain)
			if !ok {
				t.Fatalf("stderr line 1 is not the key: %q", plain)
			}
			hash := keyformat.Hash(plain)
			got := strings.NewReplacer(prefix, "PREFIX", hash, "HASH").Replace(stdout)
			if got != c.want {
				t.Fatalf("got:\n%s\nwant:\n%s", got, c.want)
			}
			if strings.HasPrefix(c.want, "{") && !json.Valid([]byte(stdout)) {
				t.Fatal("not JSON")
			}
		})
	}
}
