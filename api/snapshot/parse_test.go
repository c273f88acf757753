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
		"duplicate nested key":    {`{"limits":{"maxMessages":1,"maxMessages":2}}`, `duplicate field "maxMessages" at limits`},
		"duplicate after null":    {inject(`"models":["a"]`, `"models":["a"],"expiresAt":"2030-01-01T00:00:00Z","expiresAt":null`), `duplicate field "expiresAt" at keys[k]`},
		"case variant and exact":  {inject(`"name":"p",`, `"name":"p","NAME":"q",`), `unknown field "NAME" at providers[p]`},
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

// TestParseTypeErrorsSayWhere: a value of the wrong JSON type is reported
// at its path in the snapshot's terms, an element of keys, groups,
// providers and aliases named by its id or name (its index when it has
// none, or two); a number where a decimal string belongs says to quote it.
func TestParseTypeErrorsSayWhere(t *testing.T) {
	long := strings.Repeat("9", 40)
	cases := []struct {
		name, input, want string
	}{
		{"key budget amount", `{"keys":[{"id":"a"},{"id":"team-a","budget":{"amount":25}}]}`,
			`keys[team-a].budget.amount must be a string like "25", not the number 25`},
		{"group budget amount", `{"groups":[{"name":"platform","budget":{"amount":0.125,"currency":"USD"}}]}`,
			`groups[platform].budget.amount must be a string like "0.125", not the number 0.125`},
		{"price input", `{"providers":[{"name":"alpha"},{"name":"beta","prices":[{"model":"m"},{"model":"m","inputPerMillion":1.5}]}]}`,
			`providers[beta].prices[1].inputPerMillion must be a string like "1.5", not the number 1.5`},
		{"price cached input", `{"providers":[{"name":"beta","prices":[{"model":"m","cachedInputPerMillion":0}]}]}`,
			`providers[beta].prices[0].cachedInputPerMillion must be a string like "0", not the number 0`},
		{"price output", `{"providers":[{"name":"beta","prices":[{"model":"m","outputPerMillion":10}]}]}`,
			`providers[beta].prices[0].outputPerMillion must be a string like "10", not the number 10`},
		{"price reasoning", `{"providers":[{"name":"beta","prices":[{"model":"m","reasoningPerMillion":15}]}]}`,
			`providers[beta].prices[0].reasoningPerMillion must be a string like "15", not the number 15`},
		{"not a decimal even quoted", `{"keys":[{"id":"k","budget":{"amount":-2.5e3}}]}`,
			`keys[k].budget.amount must be a string like "25", not the number -2.5e3`},
		{"too many digits to be one", `{"keys":[{"id":"k","budget":{"amount":` + long + `}}]}`,
			`keys[k].budget.amount must be a string like "25", not the number ` + long[:32] + "…"},
		{"boolean amount", `{"groups":[{"name":"g","budget":{"amount":true}}]}`,
			`groups[g].budget.amount must be a string like "25", not the boolean true`},
		{"key without id", `{"keys":[{"id":"k"},{"budget":{"amount":5}}]}`,
			`keys[1].budget.amount must be a string like "5", not the number 5`},
		{"id not a string", `{"keys":[{"id":7,"budget":{"amount":"1"}}]}`, `keys[0].id must be a string, not the number 7`},
		{"id twice", `{"keys":[{"id":"a","id":"b","budget":{"amount":1}}]}`, `duplicate field "id" at keys[0]`},
		{"id that needs quoting", `{"keys":[{"id":"a b","budget":{"amount":1}}]}`,
			`keys["a b"].budget.amount must be a string like "1", not the number 1`},
		{"plaintext key as id", `{"keys":[{"id":"` + plainA + `","budget":{"amount":1}}]}`, `.budget.amount must be a string like "1"`},
		{"owner label", `{"keys":[{"id":"k","owners":{"example.com/team":3}}]}`,
			`keys[k].owners["example.com/team"] must be a string, not the number 3`},
		{"alias fallback", `{"aliases":[{"name":"chat","fallbacks":[{"provider":"p","model":7}]}]}`,
			`aliases[chat].fallbacks[0].model must be a string, not the number 7`},
		{"currency", `{"groups":[{"name":"g","budget":{"amount":"1","currency":840}}]}`,
			`groups[g].budget.currency must be a string, not the number 840`},
		{"string for int", `{"limits":{"maxMessages":"1"}}`, `cannot unmarshal JSON string into Go int at limits.maxMessages`},
		{"float for int", `{"keys":[{"id":"k","tokensPerMinute":1.5}]}`, `cannot unmarshal JSON number 1.5 into Go int64 at keys[k].tokensPerMinute`},
		{"bad time", `{"keys":[{"id":"k","expiresAt":"tomorrow"}]}`, `into Go time.Time at keys[k].expiresAt: parsing time "tomorrow"`},
		{"unknown field in a named element", `{"providers":[{"name":"beta","weight":1}]}`, `unknown field "weight" at providers[beta]`},
		{"unknown field in a price", `{"providers":[{"name":"beta","prices":[{"model":"m","input":1}]}]}`, `unknown field "input" at providers[beta].prices[0]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.input))
			mustContainAll(t, err, c.want)
		})
	}

	// A key part of a sharded snapshot names its elements the same way.
	_, err := ParseKeyPart([]byte(`{"keys":[{"id":"a"},{"id":"b","budget":{"amount":5}}]}`))
	mustContainAll(t, err, `key part: keys[b].budget.amount must be a string like "5", not the number 5`)
}
