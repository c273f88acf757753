package keys

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// runCLI runs `llmgw keys args...` and returns stdout and stderr.
func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), err
}

// onePlaintextLine checks the stdout contract: exactly one line, a key.
func onePlaintextLine(t *testing.T, stdout string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) != 1 || !strings.HasSuffix(stdout, "\n") {
		t.Fatalf("stdout must be exactly one line, got %q", stdout)
	}
	if _, ok := keyformat.PrefixOf(lines[0]); !ok {
		t.Fatalf("stdout line is not a key: %q", lines[0])
	}
	return lines[0]
}

func TestCLICreateEntryOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key-a.json")
	stdout, stderr, err := runCLI(t, "create", "--id", "key-a", "--models", "chat-alpha, chat-beta", "--rpm", "30", "--burst", "5",
		"--expires", "2099-01-01T00:00:00Z", "--entry-out", path)
	if err != nil {
		t.Fatal(err, stderr)
	}
	plain := onePlaintextLine(t, stdout)
	if strings.Contains(stderr, plain) {
		t.Fatal("stderr repeats the plaintext")
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), plain) || keyformat.LooksLikeKey(string(data)) {
		t.Fatalf("entry contains the plaintext:\n%s", data)
	}
	var entry snapshot.Key
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&entry); err != nil {
		t.Fatalf("entry is not a snapshot key object: %v\n%s", err, data)
	}
	if !keyformat.Verify(plain, entry.Hash) || entry.ID != "key-a" || entry.RateLimit.RPM != 30 || entry.RateLimit.Burst != 5 ||
		strings.Join(entry.Models, ",") != "chat-alpha,chat-beta" || entry.ExpiresAt.Year() != 2099 {
		t.Fatalf("entry %+v", entry)
	}
	if err := snapshot.ValidateKey(&entry); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("entry mode %v", fi.Mode().Perm())
	}
}

// --entry-out - puts the entry alone on standard output (it pipes into
// kubectl apply -f -) and the key on standard error.
func TestCLICreateEntryToStdout(t *testing.T) {
	stdout, stderr, err := runCLI(t, "create", "--id", "k", "--entry-out", "-")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(stderr, "\n")
	if _, ok := keyformat.PrefixOf(first); !ok {
		t.Fatalf("stderr line 1 is not the key: %q", first)
	}
	var entry snapshot.Key
	if err := json.Unmarshal([]byte(stdout), &entry); err != nil || !keyformat.Verify(first, entry.Hash) || keyformat.LooksLikeKey(stdout) {
		t.Fatalf("stdout is not the hash-only entry alone (%v): %q", err, stdout)
	}

	// The quick start's pipe: YAML for kubectl on stdout, in the watched namespace.
	stdout, stderr, err = runCLI(t, "create", "--id", "team-a", "--output", "yaml", "--entry-out", "-")
	if err != nil {
		t.Fatal(err)
	}
	key, _, _ := strings.Cut(stderr, "\n")
	gk := decodeGatewayKey(t, []byte(stdout))
	if keyformat.LooksLikeKey(stdout) || gk.Namespace != snapshot.DefaultNamespace || !keyformat.Verify(key, gk.Spec.KeyHash) {
		t.Fatalf("yaml on stdout: namespace %q, verifies %v:\n%s", gk.Namespace, keyformat.Verify(key, gk.Spec.KeyHash), stdout)
	}
}

// --key-out writes the key to a new 0600 file and prints it nowhere.
func TestCLICreateKeyOut(t *testing.T) {
	dir := t.TempDir()
	keyPath := filepath.Join(dir, "team-a.key")
	stdout, stderr, err := runCLI(t, "create", "--id", "team-a", "--output", "yaml", "--entry-out", "-", "--key-out", keyPath)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(b))
	if fi, _ := os.Stat(keyPath); fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	if keyformat.LooksLikeKey(stdout) || keyformat.LooksLikeKey(stderr) {
		t.Fatal("the key was printed although --key-out was given")
	}
	if gk := decodeGatewayKey(t, []byte(stdout)); !keyformat.Verify(key, gk.Spec.KeyHash) {
		t.Fatal("the key file does not match the printed entry")
	}
	// An existing file is never overwritten, and then nothing is printed.
	stdout, _, err = runCLI(t, "create", "--id", "team-b", "--entry-out", "-", "--key-out", keyPath)
	if err == nil || stdout != "" {
		t.Fatalf("existing --key-out file: err %v, stdout %q", err, stdout)
	}
}

func TestCLICreateInto(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snapshot.json")
	base := &snapshot.Snapshot{
		Providers: []snapshot.Provider{{Name: "alpha", Protocol: "openai", BaseURL: "http://127.0.0.1:9001"}},
		Aliases:   []snapshot.Alias{{Name: "chat-alpha", Primary: snapshot.Route{Provider: "alpha", Model: "m"}}},
	}
	if err := snapshot.WriteFile(path, base); err != nil {
		t.Fatal(err)
	}

	stdout, _, err := runCLI(t, "create", "--id", "key-b", "--models", "chat-alpha", "--into", path)
	if err != nil {
		t.Fatal(err)
	}
	plainB := onePlaintextLine(t, stdout)
	stdout, _, err = runCLI(t, "create", "--id", "key-a", "--into", path)
	if err != nil {
		t.Fatal(err)
	}
	plainA := onePlaintextLine(t, stdout)

	s, err := snapshot.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if canon, _ := snapshot.Encode(s.Clone()); !bytes.Equal(raw, canon) {
		t.Fatal("merged file is not in canonical form")
	}
	if keyformat.LooksLikeKey(string(raw)) {
		t.Fatal("snapshot contains a plaintext key")
	}
	if len(s.Keys) != 2 || s.Keys[0].ID != "key-a" || s.Keys[1].ID != "key-b" || s.Version == base.Version {
		t.Fatalf("keys %+v, version %s", s.Keys, s.Version)
	}
	if !keyformat.Verify(plainA, s.Keys[0].Hash) || !keyformat.Verify(plainB, s.Keys[1].Hash) || len(s.Providers) != 1 {
		t.Fatal("merge lost or mixed up entries")
	}

	// Same id again: the entry is replaced (rotation), not duplicated.
	stdout, stderr, err := runCLI(t, "create", "--id", "key-b", "--models", "chat-alpha", "--into", path)
	if err != nil {
		t.Fatal(err)
	}
	newB := onePlaintextLine(t, stdout)
	s, _ = snapshot.LoadFile(path)
	if len(s.Keys) != 2 || !keyformat.Verify(newB, s.Keys[1].Hash) || keyformat.Verify(plainB, s.Keys[1].Hash) {
		t.Fatal("rotation did not replace the entry")
	}
	if !strings.Contains(stderr, "replaced") {
		t.Errorf("stderr does not say the old key was replaced: %q", stderr)
	}

	// An entry that does not fit the snapshot changes nothing and prints no key.
	before, _ := os.ReadFile(path)
	entryPath := filepath.Join(t.TempDir(), "entry.json")
	stdout, _, err = runCLI(t, "create", "--id", "key-c", "--models", "no-such-alias", "--into", path, "--entry-out", entryPath)
	if err == nil || !strings.Contains(err.Error(), `alias "no-such-alias" does not exist`) {
		t.Fatalf("err = %v", err)
	}
	if stdout != "" {
		t.Fatalf("a key was printed although its hash was stored nowhere: %q", stdout)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("failed merge changed the snapshot")
	}
	if _, err := os.Stat(entryPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("failed merge still wrote the entry file")
	}
}

func TestCLICreateIntoNewFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.json")
	if _, _, err := runCLI(t, "create", "--id", "k", "--into", path); err != nil {
		t.Fatal(err)
	}
	if s, err := snapshot.LoadFile(path); err != nil || len(s.Keys) != 1 {
		t.Fatalf("new snapshot: %v", err)
	}
}

// decodeGatewayKey decodes printed YAML into the CRD's own Go type, strictly:
// a field the type does not have is an error. The document must also pass the
// GatewayKey CRD's schema, and what the API server would store from it must
// decode to the same object.
func decodeGatewayKey(t *testing.T, data []byte) v1alpha1.GatewayKey {
	t.Helper()
	var gk v1alpha1.GatewayKey
	if err := yaml.UnmarshalStrict(data, &gk); err != nil {
		t.Fatalf("not a GatewayKey: %v\n%s", err, data)
	}
	applied, problems, err := applyGatewayKey(data)
	if err != nil || len(problems) > 0 {
		t.Fatalf("the GatewayKey CRD refuses it: %v %q\n%s", err, problems, data)
	}
	if !reflect.DeepEqual(applied, gk) {
		t.Fatalf("applied, it is %+v, not %+v", applied, gk)
	}
	return gk
}

func TestCLICreateYAML(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key.yaml")
	stdout, _, err := runCLI(t, "create", "--id", "team-a", "--models", "chat-beta,chat-alpha", "--rpm", "90", "--burst", "3",
		"--expires", "2099-06-01T12:00:00+02:00", "--output", "yaml", "--namespace", "llmgw-system", "--entry-out", path)
	if err != nil {
		t.Fatal(err)
	}
	plain := onePlaintextLine(t, stdout)
	data, _ := os.ReadFile(path)
	if keyformat.LooksLikeKey(string(data)) {
		t.Fatalf("YAML contains the plaintext:\n%s", data)
	}
	gk := decodeGatewayKey(t, data)
	sp := gk.Spec
	wantExpiry := time.Date(2099, 6, 1, 10, 0, 0, 0, time.UTC)
	if gk.APIVersion != "llmgw.dev/v1alpha1" || gk.Kind != "GatewayKey" || gk.Name != "team-a" || gk.Namespace != "llmgw-system" ||
		!keyformat.Verify(plain, sp.KeyHash) || sp.KeyPrefix != plain[:14] || strings.Join(sp.Models, ",") != "chat-alpha,chat-beta" ||
		sp.RateLimit == nil || sp.RateLimit.RequestsPerMinute != 90 || sp.RateLimit.Burst != 3 || sp.Disabled ||
		sp.ExpiresAt == nil || !sp.ExpiresAt.Time.Equal(wantExpiry) {
		t.Fatalf("unexpected resource %+v:\n%s", gk, data)
	}
	if !strings.Contains(string(data), "expiresAt: \"2099-06-01T10:00:00Z\"") {
		t.Errorf("expiresAt is not RFC 3339 in UTC:\n%s", data)
	}
	// Only what the user sets: no status (the controller's), no null
	// creationTimestamp, nothing kubectl apply would have to ignore.
	var generic map[string]any
	if err := yaml.Unmarshal(data, &generic); err != nil {
		t.Fatal(err)
	}
	if _, ok := generic["status"]; ok {
		t.Errorf("status printed:\n%s", data)
	}
	if meta, _ := generic["metadata"].(map[string]any); len(meta) != 2 {
		t.Errorf("metadata has more than name and namespace: %v", meta)
	}
	if !reflect.DeepEqual(gk.Status, v1alpha1.GatewayKeyStatus{}) {
		t.Errorf("status %+v", gk.Status)
	}

	// Without an expiry the field is left out rather than null; without
	// --namespace the key lands where the controller watches by default.
	_, _, err = runCLI(t, "create", "--id", "team-b", "--output", "yaml", "--entry-out", path)
	if data, _ = os.ReadFile(path); err != nil || strings.Contains(string(data), "expiresAt") || !strings.Contains(string(data), "namespace: "+snapshot.DefaultNamespace+"\n") {
		t.Fatalf("%v\n%s", err, data)
	}
	gk = decodeGatewayKey(t, data)
	if gk.Name != "team-b" || strings.Join(gk.Spec.Models, ",") != snapshot.AllModels || gk.Spec.RateLimit == nil ||
		gk.Spec.RateLimit.RequestsPerMinute != snapshot.DefaultRPM || gk.Spec.RateLimit.Burst != snapshot.DefaultBurst {
		t.Fatalf("defaults not in the resource:\n%s", data)
	}
}

// TestGatewayKeyYAMLMatchesEntry: the printed resource carries exactly the
// snapshot entry, through the CRD type (the controller compiles it back).
func TestGatewayKeyYAMLMatchesEntry(t *testing.T) {
	exp := time.Date(2031, 2, 3, 4, 5, 6, 0, time.UTC)
	_, entry, err := Create(CreateOptions{ID: "team-c.prod", Models: []string{"b", "a"}, RPM: 1_000_000, Burst: 100_000, ExpiresAt: &exp, Disabled: true})
	if err != nil {
		t.Fatal(err)
	}
	data, err := GatewayKeyYAML(entry, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "# ") {
		t.Errorf("no header comment:\n%s", data)
	}
	gk := decodeGatewayKey(t, data)
	// metav1.Time decodes in the local zone: compare the instant, then the rest.
	if gk.Spec.ExpiresAt == nil || !gk.Spec.ExpiresAt.Equal(&metav1.Time{Time: exp}) {
		t.Fatalf("expiresAt %v, want %v", gk.Spec.ExpiresAt, exp)
	}
	gk.Spec.ExpiresAt = nil
	want := v1alpha1.GatewayKeySpec{
		KeyHash: entry.Hash, KeyPrefix: entry.Prefix, Models: []string{"a", "b"},
		RateLimit: &v1alpha1.RateLimit{RequestsPerMinute: 1_000_000, Burst: 100_000},
		Disabled:  true,
	}
	if gk.Name != entry.ID || !reflect.DeepEqual(gk.Spec, want) {
		t.Fatalf("spec does not carry the entry %+v:\n%s", entry, data)
	}
}

func TestGatewayKeyYAMLRateLimitBounds(t *testing.T) {
	for _, c := range []struct {
		rpm, burst int
		want       string
	}{
		{1_000_001, 1, "1..1000000"},
		{1 << 32, 1, "1..1000000"}, // would wrap around in int32
		{60, 100_001, "1..100000"},
	} {
		_, entry, err := Create(CreateOptions{ID: "k", Models: []string{"*"}, RPM: c.rpm, Burst: c.burst})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := GatewayKeyYAML(entry, ""); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("rpm %d burst %d: err = %v, want it to mention %q", c.rpm, c.burst, err, c.want)
		}
	}
}

func TestCLIUsageErrors(t *testing.T) {
	dir := t.TempDir()
	entry := filepath.Join(dir, "e.json")
	cases := map[string]struct {
		args []string
		want string
	}{
		"no subcommand":      {nil, "missing subcommand"},
		"unknown subcommand": {[]string{"delete"}, `unknown subcommand "delete"`},
		"no destination":     {[]string{"create", "--id", "k"}, "--entry-out FILE"},
		"no id":              {[]string{"create", "--entry-out", entry}, "key id is required"},
		"bad output":         {[]string{"create", "--id", "k", "--output", "xml", "--entry-out", entry}, "--output must be json or yaml"},
		"yaml without file":  {[]string{"create", "--id", "k", "--output", "yaml", "--into", filepath.Join(dir, "s.json")}, "--output yaml applies to --entry-out"},
		"namespace for json": {[]string{"create", "--id", "k", "--namespace", "x", "--entry-out", entry}, "--namespace only applies"},
		"bad namespace":      {[]string{"create", "--id", "k", "--output", "yaml", "--namespace", "Team_A", "--entry-out", entry}, `namespace "Team_A"`},
		"empty models":       {[]string{"create", "--id", "k", "--models", " , ", "--entry-out", entry}, "--models is empty"},
		"zero rpm":           {[]string{"create", "--id", "k", "--rpm", "0", "--entry-out", entry}, "--rpm and --burst must be > 0"},
		"rpm above the CRD":  {[]string{"create", "--id", "k", "--rpm", "2000000", "--output", "yaml", "--entry-out", entry}, "a GatewayKey allows 1..1000000"},
		"id not a name":      {[]string{"create", "--id", "a..b", "--entry-out", entry}, "DNS-1123 subdomain"},
		"bad expiry":         {[]string{"create", "--id", "k", "--expires", "tomorrow", "--entry-out", entry}, "--expires"},
		"past expiry":        {[]string{"create", "--id", "k", "--expires", "2001-01-01T00:00:00Z", "--entry-out", entry}, "not in the future"},
		"extra args":         {[]string{"create", "--id", "k", "--entry-out", entry, "oops"}, "unexpected arguments"},
		"unknown flag":       {[]string{"create", "--nope"}, "flag provided but not defined"},
		"bad entry path":     {[]string{"create", "--id", "k", "--entry-out", filepath.Join(dir, "missing", "e.json")}, "no such file"},
	}
	for name, c := range cases {
		stdout, _, err := runCLI(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", name, err, c.want)
		}
		if stdout != "" {
			t.Errorf("%s: printed %q although it failed", name, stdout)
		}
	}
}

func TestCLIHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"create", "--help"}} {
		_, stderr, err := runCLI(t, args...)
		if !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%v: err = %v, want flag.ErrHelp", args, err)
		}
		if !strings.Contains(stderr, "create") {
			t.Errorf("%v: no usage text", args)
		}
	}
	_, stderr, _ := runCLI(t, "create", "--help")
	for _, f := range []string{"-id", "-models", "-rpm", "-burst", "-expires", "-output", "-namespace", "-entry-out", "-key-out", "-into",
		"-tpm", "-budget", "-budget-period", "-budget-currency", "-group"} {
		if !strings.Contains(stderr, f) {
			t.Errorf("help text does not document %s", f)
		}
	}
}
