package keys

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/llmgw/llmgw/api/snapshot"
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
	if _, ok := PrefixOf(lines[0]); !ok {
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
	if strings.Contains(string(data), plain) || LooksLikeKey(string(data)) {
		t.Fatalf("entry contains the plaintext:\n%s", data)
	}
	var entry snapshot.Key
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&entry); err != nil {
		t.Fatalf("entry is not a snapshot key object: %v\n%s", err, data)
	}
	if !Verify(plain, entry.Hash) || entry.ID != "key-a" || entry.RateLimit.RPM != 30 || entry.RateLimit.Burst != 5 ||
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

func TestCLICreateEntryToStdout(t *testing.T) {
	stdout, _, err := runCLI(t, "create", "--id", "k", "--entry-out", "-")
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := strings.Cut(stdout, "\n")
	if _, ok := PrefixOf(first); !ok {
		t.Fatalf("line 1 is not the key: %q", first)
	}
	var entry snapshot.Key
	if err := json.Unmarshal([]byte(rest), &entry); err != nil || !Verify(first, entry.Hash) || LooksLikeKey(rest) {
		t.Fatalf("lines 2+ are not the hash-only entry (%v): %q", err, rest)
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
	if LooksLikeKey(string(raw)) {
		t.Fatal("snapshot contains a plaintext key")
	}
	if len(s.Keys) != 2 || s.Keys[0].ID != "key-a" || s.Keys[1].ID != "key-b" || s.Version == base.Version {
		t.Fatalf("keys %+v, version %s", s.Keys, s.Version)
	}
	if !Verify(plainA, s.Keys[0].Hash) || !Verify(plainB, s.Keys[1].Hash) || len(s.Providers) != 1 {
		t.Fatal("merge lost or mixed up entries")
	}

	// Same id again: the entry is replaced (rotation), not duplicated.
	stdout, stderr, err := runCLI(t, "create", "--id", "key-b", "--models", "chat-alpha", "--into", path)
	if err != nil {
		t.Fatal(err)
	}
	newB := onePlaintextLine(t, stdout)
	s, _ = snapshot.LoadFile(path)
	if len(s.Keys) != 2 || !Verify(newB, s.Keys[1].Hash) || Verify(plainB, s.Keys[1].Hash) {
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

func TestCLICreateYAML(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key.yaml")
	stdout, _, err := runCLI(t, "create", "--id", "team-a", "--models", "chat-beta,chat-alpha", "--rpm", "90", "--burst", "3",
		"--expires", "2099-06-01T12:00:00+02:00", "--output", "yaml", "--namespace", "llmgw-system", "--entry-out", path)
	if err != nil {
		t.Fatal(err)
	}
	plain := onePlaintextLine(t, stdout)
	data, _ := os.ReadFile(path)
	if LooksLikeKey(string(data)) {
		t.Fatalf("YAML contains the plaintext:\n%s", data)
	}
	var cr struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
		Spec struct {
			KeyHash   string   `json:"keyHash"`
			KeyPrefix string   `json:"keyPrefix"`
			Models    []string `json:"models"`
			RateLimit struct {
				RequestsPerMinute int `json:"requestsPerMinute"`
				Burst             int `json:"burst"`
			} `json:"rateLimit"`
			Disabled  bool   `json:"disabled"`
			ExpiresAt string `json:"expiresAt"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(data, &cr); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	sp := cr.Spec
	if cr.APIVersion != "llmgw.dev/v1alpha1" || cr.Kind != "GatewayKey" || cr.Metadata.Name != "team-a" || cr.Metadata.Namespace != "llmgw-system" ||
		!Verify(plain, sp.KeyHash) || sp.KeyPrefix != plain[:14] || strings.Join(sp.Models, ",") != "chat-alpha,chat-beta" ||
		sp.RateLimit.RequestsPerMinute != 90 || sp.RateLimit.Burst != 3 || sp.Disabled || sp.ExpiresAt != "2099-06-01T10:00:00Z" {
		t.Fatalf("unexpected resource:\n%s", data)
	}

	// Without an expiry the field is left out rather than null.
	_, _, err = runCLI(t, "create", "--id", "team-b", "--output", "yaml", "--entry-out", path)
	if data, _ = os.ReadFile(path); err != nil || strings.Contains(string(data), "expiresAt") {
		t.Fatalf("%v\n%s", err, data)
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
		"empty models":       {[]string{"create", "--id", "k", "--models", " , ", "--entry-out", entry}, "--models is empty"},
		"zero rpm":           {[]string{"create", "--id", "k", "--rpm", "0", "--entry-out", entry}, "--rpm and --burst must be > 0"},
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
	for _, f := range []string{"-id", "-models", "-rpm", "-burst", "-expires", "-output", "-namespace", "-entry-out", "-into"} {
		if !strings.Contains(stderr, f) {
			t.Errorf("help text does not document %s", f)
		}
	}
}
