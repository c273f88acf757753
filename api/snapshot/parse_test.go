package snapshot

import (
	"strings"
	"testing"

	"github.com/llmgw/llmgw/api/keyformat"
)

const minimal = `{"providers":[{"name":"p","protocol":"openai","baseURL":"http://p"}],
 "aliases":[{"name":"a","primary":{"provider":"p","model":"m"}}],
 "keys":[{"id":"k","prefix":"lgw_keyaaaaaaa","hash":"` + hashA + `","models":["a"]}]}`

func TestParseMinimal(t *testing.T) {
	s, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Version, "sha256:") || len(s.Version) != 71 {
		t.Fatalf("version not filled: %q", s.Version)
	}
	if *s.Aliases[0].MaxFallbacks != 0 || s.Keys[0].RateLimit.RPM != DefaultRPM {
		t.Fatal("defaults not applied")
	}
}

func TestParseVersion(t *testing.T) {
	s, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	withVersion := `{"version":"` + s.Version + `",` + minimal[1:]
	if _, err := Parse([]byte(withVersion)); err != nil {
		t.Fatalf("matching version rejected: %v", err)
	}
	stale := strings.Replace(withVersion, `"model":"m"`, `"model":"m2"`, 1)
	_, err = Parse([]byte(stale))
	mustContainAll(t, err, "does not match the content", "remove the version field")
}

func TestParseStrict(t *testing.T) {
	inject := func(old, new string) string { return strings.Replace(minimal, old, new, 1) }
	cases := map[string]struct {
		input string
		want  string
	}{
		"unknown top-level field": {`{"providers":[],"extra":1}`, `unknown field "extra"`},
		"unknown nested field":    {inject(`"name":"p",`, `"name":"p","weight":2,`), `unknown field "weight"`},
		"known name, wrong place": {inject(`"name":"p",`, `"name":"p","hash":"x",`), `unknown field "hash"`},
		"field name case":         {inject(`"name":"p",`, `"Name":"p",`), `unknown field "Name"`},
		"duplicate field":         {inject(`"name":"p",`, `"name":"p","name":"q",`), `duplicate field "name"`},
		"duplicate top-level":     {`{"keys":[],"keys":[]}`, `duplicate field "keys"`},
		"duplicate nested key":    {`{"limits":{"maxMessages":1,"maxMessages":2}}`, `duplicate field "maxMessages" at /limits`},
		"duplicate after null":    {inject(`"models":["a"]`, `"models":["a"],"expiresAt":"2030-01-01T00:00:00Z","expiresAt":null`), `duplicate field "expiresAt" at /keys/0`},
		"case variant and exact":  {inject(`"name":"p",`, `"name":"p","NAME":"q",`), `unknown field "NAME" at /providers/0`},
		"invalid UTF-8":           {"{\"version\":\"a\xffb\"}", "invalid UTF-8"},
		"trailing object":         {`{} {}`, "unexpected data after the top-level object"},
		"trailing garbage":        {`{}x`, "unexpected data after the top-level object"},
		"top-level array":         {`[]`, "top level must be a JSON object"},
		"top-level null":          {`null`, "top level must be a JSON object"},
		"empty input":             {``, "empty or truncated"},
		"truncated":               {`{"providers":[`, "empty or truncated"},
		"syntax error":            {`{"providers":]`, "invalid character"},
		"string for int":          {inject(`"model":"m"}`, `"model":"m"},"maxFallbacks":"1"`), "unmarshal JSON string into Go int"},
		"float for int":           {`{"limits":{"maxMessages":1.5}}`, "unmarshal JSON number 1.5 into Go int"},
		"exponent for int":        {`{"limits":{"maxMessages":1e3}}`, "unmarshal JSON number 1e3"},
		"bad time":                {inject(`"models":["a"]`, `"models":["a"],"expiresAt":"tomorrow"`), "cannot parse"},
		"invalid content":         {inject(`"protocol":"openai"`, `"protocol":"soap"`), "protocol must be"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(c.input))
			mustContainAll(t, err, c.want)
		})
	}
}

func TestParseNullsMeanUnset(t *testing.T) {
	s, err := Parse([]byte(`{"providers":null,"aliases":null,"keys":null,"limits":null,"version":null}`))
	if err != nil {
		t.Fatal(err)
	}
	empty, _ := Parse([]byte(`{}`))
	if s.Version != empty.Version {
		t.Fatal("explicit nulls and omitted fields must encode the same")
	}
}

// Decode errors may quote input; a plaintext key pasted into the wrong place must
// not come back out in the error (which ends up in logs and /health).
func TestParseErrorsRedactKeys(t *testing.T) {
	for _, input := range []string{
		strings.Replace(minimal, `"models":["a"]`, `"models":["a"],"expiresAt":"`+plainA+`"`, 1),
		`{"` + plainA + `":1}`,
		`{"providers":[{"name":"` + plainA + `","protocol":"openai","baseURL":"http://p"}]}`,
		strings.Replace(minimal, hashA, plainA, 1),
		`{"version":"` + plainA + `"}`,
		`{"limits":{"` + plainA + `":1}}`,
		`{"providers":[{"name":"p","name":"` + plainA + `"}]}`,
	} {
		_, err := Parse([]byte(input))
		if err == nil {
			t.Fatalf("accepted %s", input)
		}
		if keyformat.LooksLikeKey(err.Error()) {
			t.Fatalf("error quotes a plaintext key: %v", err)
		}
	}
}

// A breaker's consecutiveFailures 0 turns it off and survives parsing and
// normalization; null or omitted takes the default, like any other field.
func TestParseCircuitBreaker(t *testing.T) {
	provider := func(cb string) string {
		return strings.Replace(minimal, `"baseURL":"http://p"`, `"baseURL":"http://p"`+cb, 1)
	}
	tests := []struct {
		name            string
		input           string
		wantFailures    int
		wantCoolDownMs  int
		wantProbes      int
		wantEnabled     bool
		sameVersionAsIn string // "" or another input that must encode the same
	}{
		{"omitted", provider(""), 5, 30000, 1, true, ""},
		{"null", provider(`,"circuitBreaker":null`), 5, 30000, 1, true, provider("")},
		{"null failures", provider(`,"circuitBreaker":{"consecutiveFailures":null}`), 5, 30000, 1, true, provider("")},
		{"defaults spelled out", provider(`,"circuitBreaker":{"consecutiveFailures":5,"coolDownMs":30000,"halfOpenProbes":1}`), 5, 30000, 1, true, provider("")},
		{"off", provider(`,"circuitBreaker":{"consecutiveFailures":0}`), 0, 30000, 1, false, ""},
		{"set", provider(`,"circuitBreaker":{"consecutiveFailures":3,"coolDownMs":250,"halfOpenProbes":2}`), 3, 250, 2, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			cb := s.Providers[0].CircuitBreaker
			if cb.ConsecutiveFailures == nil || *cb.ConsecutiveFailures != tc.wantFailures || cb.CoolDownMs != tc.wantCoolDownMs ||
				cb.HalfOpenProbes != tc.wantProbes || cb.Enabled() != tc.wantEnabled {
				t.Fatalf("circuitBreaker = {%v %d %d} enabled=%v", *cb.ConsecutiveFailures, cb.CoolDownMs, cb.HalfOpenProbes, cb.Enabled())
			}
			if tc.sameVersionAsIn != "" {
				other, err := Parse([]byte(tc.sameVersionAsIn))
				if err != nil {
					t.Fatal(err)
				}
				if other.Version != s.Version {
					t.Fatal("an unset breaker field and its default encode differently")
				}
			}
		})
	}
	off, _ := Parse([]byte(provider(`,"circuitBreaker":{"consecutiveFailures":0}`)))
	on, _ := Parse([]byte(provider("")))
	if off.Version == on.Version {
		t.Fatal("turning the breaker off does not change the version")
	}
	_, err := Parse([]byte(provider(`,"circuitBreaker":{"consecutiveFailures":2,"CoolDownMs":5}`)))
	mustContainAll(t, err, "CoolDownMs")
}
