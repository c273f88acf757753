package keys

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// quotas are the quota fields of a key, as both outputs must carry them.
type quotas struct {
	tpm    int64
	budget *snapshot.Budget
	group  string
}

func entryQuotas(k snapshot.Key) quotas {
	return quotas{tpm: k.TokensPerMinute, budget: k.Budget, group: k.Group}
}

// specQuotas reads a GatewayKey's quotas as the controller compiles them into
// its snapshot key.
func specQuotas(s v1alpha1.GatewayKeySpec) quotas {
	q := quotas{tpm: s.TokensPerMinute, group: s.Group}
	if b := s.Budget; b != nil {
		q.budget = &snapshot.Budget{Amount: b.Amount, Currency: b.Currency, Period: string(b.Period)}
	}
	return q
}

// TestCLICreateQuotaFlags: each quota flag reaches the JSON entry, the
// snapshot given to --into and the GatewayKey YAML, with the same values,
// and each output is accepted by what consumes it (snapshot validation, the
// GatewayKey CRD's schema).
func TestCLICreateQuotaFlags(t *testing.T) {
	budget := func(amount, currency, period string) *snapshot.Budget {
		return &snapshot.Budget{Amount: amount, Currency: currency, Period: period}
	}
	cases := []struct {
		name  string
		flags []string
		want  quotas
	}{
		{"tpm", []string{"--tpm", "100000"}, quotas{tpm: 100_000}},
		{"tpm at the bound", []string{"--tpm", "1000000000000"}, quotas{tpm: snapshot.MaxTokensPerMinute}},
		{"tpm 0 is no limit", []string{"--tpm", "0"}, quotas{}},
		{"budget with defaults", []string{"--budget", "25"}, quotas{budget: budget("25", "USD", "month")}},
		{"budget per day", []string{"--budget", "0.125", "--budget-period", "day"}, quotas{budget: budget("0.125", "USD", "day")}},
		{"budget per month, explicit", []string{"--budget", "1", "--budget-period", "month"}, quotas{budget: budget("1", "USD", "month")}},
		{"budget in euros", []string{"--budget", "100.5", "--budget-currency", "EUR"}, quotas{budget: budget("100.5", "EUR", "month")}},
		{"budget of 0", []string{"--budget", "0"}, quotas{budget: budget("0", "USD", "month")}},
		{"largest budget", []string{"--budget", "9223372.000000"}, quotas{budget: budget("9223372.000000", "USD", "month")}},
		{"smallest step", []string{"--budget", "0.000001"}, quotas{budget: budget("0.000001", "USD", "month")}},
		{"group", []string{"--group", "platform"}, quotas{group: "platform"}},
		{"dotted group", []string{"--group", "team-a.prod"}, quotas{group: "team-a.prod"}},
		{"empty group is none", []string{"--group", ""}, quotas{}},
		{"everything", []string{"--tpm", "5000", "--budget", "7.5", "--budget-period", "day", "--budget-currency", "CHF", "--group", "ml"},
			quotas{tpm: 5000, budget: budget("7.5", "CHF", "day"), group: "ml"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()

			// JSON entry: the snapshot's key object, strictly.
			jsonPath := filepath.Join(dir, "entry.json")
			stdout, stderr, err := runCLI(t, append([]string{"create", "--id", "k", "--entry-out", jsonPath}, c.flags...)...)
			if err != nil {
				t.Fatal(err, stderr)
			}
			onePlaintextLine(t, stdout) // exactly one line of plaintext
			data, _ := os.ReadFile(jsonPath)
			var entry snapshot.Key
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&entry); err != nil {
				t.Fatalf("%v\n%s", err, data)
			}
			if got := entryQuotas(entry); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("entry quotas %+v (budget %+v), want %+v (budget %+v)\n%s", got, got.budget, c.want, c.want.budget, data)
			}
			if err := snapshot.ValidateKey(&entry); err != nil {
				t.Fatal(err)
			}
			// Zero values are left out, as in a snapshot written by hand.
			for field, set := range map[string]bool{`"tokensPerMinute"`: c.want.tpm != 0, `"budget"`: c.want.budget != nil, `"group"`: c.want.group != ""} {
				if strings.Contains(string(data), field) != set {
					t.Errorf("%s present = %v, want %v:\n%s", field, !set, set, data)
				}
			}
			// The entry, pasted into a snapshot file, loads.
			s := &snapshot.Snapshot{Keys: []snapshot.Key{entry}}
			if _, err := snapshot.Encode(s); err != nil {
				t.Fatalf("a snapshot with the entry does not validate: %v", err)
			}

			// --into: the merged snapshot carries the same quotas.
			snapPath := filepath.Join(dir, "snapshot.json")
			if _, stderr, err := runCLI(t, append([]string{"create", "--id", "k", "--into", snapPath}, c.flags...)...); err != nil {
				t.Fatal(err, stderr)
			}
			merged, err := snapshot.LoadFile(snapPath)
			if err != nil {
				t.Fatal(err)
			}
			if got := entryQuotas(merged.Keys[0]); len(merged.Keys) != 1 || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("--into quotas %+v, want %+v", got, c.want)
			}

			// GatewayKey YAML: applied, it is the same key.
			yamlPath := filepath.Join(dir, "key.yaml")
			stdout, stderr, err = runCLI(t, append([]string{"create", "--id", "k", "--output", "yaml", "--entry-out", yamlPath}, c.flags...)...)
			if err != nil {
				t.Fatal(err, stderr)
			}
			plain := onePlaintextLine(t, stdout)
			doc, _ := os.ReadFile(yamlPath)
			gk := decodeGatewayKey(t, doc)
			if got := specQuotas(gk.Spec); !reflect.DeepEqual(got, c.want) || !keyformat.Verify(plain, gk.Spec.KeyHash) {
				t.Fatalf("GatewayKey quotas %+v, want %+v:\n%s", got, c.want, doc)
			}
			for field, set := range map[string]bool{"tokensPerMinute:": c.want.tpm != 0, "budget:": c.want.budget != nil, "group:": c.want.group != ""} {
				if strings.Contains(string(doc), field) != set {
					t.Errorf("%s present = %v, want %v:\n%s", field, !set, set, doc)
				}
			}
		})
	}
}

// TestCLIQuotaFlagErrors: an invalid value is refused with an error naming
// its flag, before anything is written or printed.
func TestCLIQuotaFlagErrors(t *testing.T) {
	plain, _, _, err := keyformat.Generate()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		flags []string
		want  string
	}{
		{"tpm negative", []string{"--tpm", "-1"}, "--tpm must be within 0..1000000000000 (0: no token limit), got -1"},
		{"tpm above the bound", []string{"--tpm", "1000000000001"}, "--tpm must be within 0..1000000000000 (0: no token limit), got 1000000000001"},
		{"tpm not a number", []string{"--tpm", "10k"}, `invalid value "10k" for flag -tpm`},
		{"tpm beyond int64", []string{"--tpm", "99999999999999999999"}, "flag -tpm"},

		{"budget not a number", []string{"--budget", "ten"}, `--budget must be a decimal amount such as 25 or 0.125 (at most 9 integer and 6 fractional digits, no sign), got "ten"`},
		{"budget empty", []string{"--budget", ""}, `--budget must be a decimal amount such as 25 or 0.125 (at most 9 integer and 6 fractional digits, no sign), got ""`},
		{"budget negative", []string{"--budget", "-5"}, `--budget must be a decimal amount`},
		{"budget with plus", []string{"--budget", "+5"}, `--budget must be a decimal amount`},
		{"budget exponent", []string{"--budget", "1e3"}, `--budget must be a decimal amount`},
		{"budget comma", []string{"--budget", "2,5"}, `--budget must be a decimal amount`},
		{"budget with currency", []string{"--budget", "$25"}, `--budget must be a decimal amount`},
		{"budget trailing dot", []string{"--budget", "25."}, `--budget must be a decimal amount`},
		{"budget leading dot", []string{"--budget", ".5"}, `--budget must be a decimal amount`},
		{"budget 7 fractional digits", []string{"--budget", "0.1234567"}, `--budget must be a decimal amount`},
		{"budget 10 integer digits", []string{"--budget", "1234567890"}, `--budget must be a decimal amount`},
		{"budget with spaces", []string{"--budget", " 25"}, `--budget must be a decimal amount`},
		{"budget above the largest", []string{"--budget", "9223372.000001"}, "--budget 9223372.000001 is above the largest budget, 9223372"},
		{"budget far above the largest", []string{"--budget", "999999999"}, "--budget 999999999 is above the largest budget, 9223372"},

		{"period unknown", []string{"--budget", "5", "--budget-period", "week"}, `--budget-period must be day or month, got "week"`},
		{"period capitalized", []string{"--budget", "5", "--budget-period", "Day"}, `--budget-period must be day or month, got "Day"`},
		{"period empty", []string{"--budget", "5", "--budget-period", ""}, `--budget-period must be day or month, got ""`},
		{"period without budget", []string{"--budget-period", "day"}, "--budget-period only applies with --budget"},
		{"default period without budget", []string{"--budget-period", "month"}, "--budget-period only applies with --budget"},

		{"currency lowercase", []string{"--budget", "5", "--budget-currency", "usd"}, `--budget-currency must be an ISO-4217 code of three capital letters such as USD, got "usd"`},
		{"currency symbol", []string{"--budget", "5", "--budget-currency", "$"}, `--budget-currency must be an ISO-4217 code`},
		{"currency too long", []string{"--budget", "5", "--budget-currency", "EURO"}, `--budget-currency must be an ISO-4217 code`},
		{"currency empty", []string{"--budget", "5", "--budget-currency", ""}, `--budget-currency must be an ISO-4217 code`},
		{"currency without budget", []string{"--budget-currency", "EUR"}, "--budget-currency only applies with --budget"},

		{"group uppercase", []string{"--group", "Platform"}, `--group "Platform" is not valid: it is a BudgetGroup's metadata.name, so it must be a DNS-1123 subdomain`},
		{"group underscore", []string{"--group", "team_a"}, `--group "team_a" is not valid`},
		{"group double dot", []string{"--group", "a..b"}, `--group "a..b" is not valid`},
		{"group edge dash", []string{"--group", "a-"}, `--group "a-" is not valid`},
		{"group slash", []string{"--group", "a/b"}, `--group "a/b" is not valid`},
		{"group space", []string{"--group", "team a"}, `--group "team a" is not valid`},
		{"group too long", []string{"--group", strings.Repeat("g", 254)}, "--group is 254 characters long; at most 253 are allowed, as it is a BudgetGroup's metadata.name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, output := range []string{"json", "yaml"} {
				dir := t.TempDir()
				entryPath := filepath.Join(dir, "entry")
				snapPath := filepath.Join(dir, "snapshot.json")
				args := []string{"create", "--id", "k", "--output", output, "--entry-out", entryPath}
				if output == "json" {
					args = append(args, "--into", snapPath)
				}
				stdout, _, err := runCLI(t, append(args, c.flags...)...)
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("%s: err = %v, want it to contain %q", output, err, c.want)
				}
				if stdout != "" {
					t.Fatalf("%s: printed %q although it failed", output, stdout)
				}
				for _, p := range []string{entryPath, snapPath} {
					if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
						t.Fatalf("%s: %s written although the flags are invalid", output, p)
					}
				}
			}
		})
	}

	// A pasted key is never echoed back, whichever flag it lands in.
	for _, flags := range [][]string{
		{"--budget", plain},
		{"--budget", "5", "--budget-currency", plain},
		{"--budget", "5", "--budget-period", plain},
		{"--group", plain},
	} {
		_, stderr, err := runCLI(t, append([]string{"create", "--id", "k", "--entry-out", "-"}, flags...)...)
		if err == nil || strings.Contains(err.Error(), plain) || strings.Contains(stderr, plain) {
			t.Errorf("%s: err = %v, stderr %q: want an error without the key", flags[len(flags)-2], err, stderr)
		}
	}
}

// TestCLICreateIntoMissingGroup: a key may name a group the snapshot does not
// have yet (the gateway fails closed), and the user is told.
func TestCLICreateIntoMissingGroup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snapshot.json")
	stdout, stderr, err := runCLI(t, "create", "--id", "k", "--group", "platform", "--into", path)
	if err != nil {
		t.Fatal(err)
	}
	onePlaintextLine(t, stdout)
	if !strings.Contains(stderr, `has no group "platform"`) || !strings.Contains(stderr, "403 budget_group_missing") {
		t.Fatalf("no note about the missing group: %q", stderr)
	}
	if s, err := snapshot.LoadFile(path); err != nil || s.Keys[0].Group != "platform" {
		t.Fatalf("snapshot: %v", err)
	}
}

// TestCLICreateIntoBudgetCurrency: a snapshot has one currency, so --into
// refuses a budget in another one, and says so; nothing is written.
func TestCLICreateIntoBudgetCurrency(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snapshot.json")
	base := &snapshot.Snapshot{Groups: []snapshot.Group{{Name: "platform", Budget: &snapshot.Budget{Amount: "500", Currency: "EUR"}}}}
	if err := snapshot.WriteFile(path, base); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	stdout, _, err := runCLI(t, "create", "--id", "k", "--budget", "5", "--group", "platform", "--into", path)
	if err == nil || !strings.Contains(err.Error(), `key "k": budget.currency USD differs from EUR`) || stdout != "" {
		t.Fatalf("err = %v, stdout %q", err, stdout)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("refused merge changed the snapshot")
	}

	stdout, stderr, err := runCLI(t, "create", "--id", "k", "--budget", "5", "--budget-currency", "EUR", "--group", "platform", "--into", path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr, "budget_group_missing") {
		t.Errorf("warns about a group the snapshot has: %q", stderr)
	}
	plain := onePlaintextLine(t, stdout)
	s, err := snapshot.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := quotas{budget: &snapshot.Budget{Amount: "5", Currency: "EUR", Period: "month"}, group: "platform"}
	if len(s.Keys) != 1 || !keyformat.Verify(plain, s.Keys[0].Hash) || !reflect.DeepEqual(entryQuotas(s.Keys[0]), want) || len(s.Groups) != 1 {
		t.Fatalf("merged snapshot %+v", s)
	}
}

func TestCreateQuotas(t *testing.T) {
	in := &snapshot.Budget{Amount: "12.5"}
	_, entry, err := Create(CreateOptions{ID: "k", Models: []string{"*"}, TokensPerMinute: 42, Budget: in, Group: "g.prod"})
	if err != nil {
		t.Fatal(err)
	}
	want := quotas{tpm: 42, budget: &snapshot.Budget{Amount: "12.5", Currency: snapshot.DefaultCurrency, Period: snapshot.PeriodMonth}, group: "g.prod"}
	if got := entryQuotas(entry); !reflect.DeepEqual(got, want) {
		t.Fatalf("quotas %+v (budget %+v), want %+v", got, got.budget, want)
	}
	if *in != (snapshot.Budget{Amount: "12.5"}) || entry.Budget == in {
		t.Fatalf("Create changed or kept the caller's budget: %+v", in)
	}

	// Without the flags' own checks, Create still refuses what the snapshot
	// or the CRD would.
	cases := map[string]struct {
		opts CreateOptions
		want string
	}{
		"negative tpm":   {CreateOptions{TokensPerMinute: -1}, "tokensPerMinute must be within 0..1000000000000"},
		"tpm too large":  {CreateOptions{TokensPerMinute: snapshot.MaxTokensPerMinute + 1}, "tokensPerMinute must be within"},
		"bad amount":     {CreateOptions{Budget: &snapshot.Budget{Amount: "1.0000001"}}, "budget.amount must be a decimal"},
		"amount too big": {CreateOptions{Budget: &snapshot.Budget{Amount: "10000000"}}, "budget.amount exceeds the largest amount, " + money.MaxAmount.String()},
		"bad currency":   {CreateOptions{Budget: &snapshot.Budget{Amount: "1", Currency: "usd"}}, "budget.currency must be an ISO-4217 code"},
		"bad period":     {CreateOptions{Budget: &snapshot.Budget{Amount: "1", Period: "year"}}, `budget.period must be "day" or "month"`},
		"bad group":      {CreateOptions{Group: "Team_A"}, `group "Team_A" is not valid: it is a BudgetGroup's metadata.name`},
		"long group":     {CreateOptions{Group: strings.Repeat("a", 254)}, "group is 254 characters long"},
	}
	for name, c := range cases {
		c.opts.ID, c.opts.Models = "k", []string{"*"}
		if _, _, err := Create(c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", name, err, c.want)
		}
	}
}

// TestGatewayKeyQuotasRoundTrip: a key with every quota, printed as YAML and
// applied, is the GatewayKey with the entry's values, and compiles back (as
// the controller does) to the entry's quotas.
func TestGatewayKeyQuotasRoundTrip(t *testing.T) {
	_, entry, err := Create(CreateOptions{ID: "team-a", Models: []string{"chat"}, RPM: 30, Burst: 5,
		TokensPerMinute: snapshot.MaxTokensPerMinute, Budget: &snapshot.Budget{Amount: "999.999999", Currency: "JPY", Period: "day"}, Group: "platform.ml"})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := GatewayKeyYAML(entry, "team-ns")
	if err != nil {
		t.Fatal(err)
	}
	gk := decodeGatewayKey(t, doc)
	want := v1alpha1.GatewayKeySpec{
		KeyHash: entry.Hash, KeyPrefix: entry.Prefix, Models: []string{"chat"},
		RateLimit:       &v1alpha1.RateLimit{RequestsPerMinute: 30, Burst: 5},
		TokensPerMinute: 1_000_000_000_000,
		Budget:          &v1alpha1.Budget{Amount: "999.999999", Currency: "JPY", Period: v1alpha1.BudgetDay},
		Group:           "platform.ml",
	}
	if gk.Name != "team-a" || gk.Namespace != "team-ns" || !reflect.DeepEqual(gk.Spec, want) {
		t.Fatalf("spec %+v, want %+v:\n%s", gk.Spec, want, doc)
	}
	if got := specQuotas(gk.Spec); !reflect.DeepEqual(got, entryQuotas(entry)) {
		t.Fatalf("compiled back: %+v, entry has %+v", got, entryQuotas(entry))
	}
	// Integers are printed as integers: 1e+12 would not be an integer to the
	// API server.
	if !strings.Contains(string(doc), "\n  tokensPerMinute: 1000000000000\n") {
		t.Errorf("tokensPerMinute not printed as an integer:\n%s", doc)
	}
}
