package keys

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// runCLIStdin runs `llmgw keys args...` with stdin as its standard input.
func runCLIStdin(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := runIO(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), err
}

// rotatedNote is the stderr line of a rotation: key, new prefix and
// fingerprint, the previous key's fingerprint and when it stops.
var rotatedNote = regexp.MustCompile(`rotated key "([^"]+)" \(prefix (lgw_[a-z0-9]{10}), fingerprint ([0-9a-f]{12})\); the previous key \(fingerprint ([0-9a-f]{12})\) (is accepted until (\S+)\.|stops working now)`)

// snapshotWithKeys writes a snapshot with two keys, team-a carrying every
// field a key can have, and returns its path and team-a's entry.
func snapshotWithKeys(t *testing.T) (string, snapshot.Key) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "snapshot.json")
	exp := time.Now().Add(365 * 24 * time.Hour).UTC().Truncate(time.Second)
	_, a, err := Create(CreateOptions{ID: "team-a", Models: []string{"chat-alpha"}, RPM: 30, Burst: 5, ExpiresAt: &exp,
		TokensPerMinute: 5000, Budget: &snapshot.Budget{Amount: "25", Period: snapshot.PeriodDay}, Group: "platform"})
	if err != nil {
		t.Fatal(err)
	}
	a.Owners = map[string]string{"team": "a", "example.com/cost-center": "cc-1"}
	_, b, err := Create(CreateOptions{ID: "team-b", Models: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	s := &snapshot.Snapshot{
		Providers: []snapshot.Provider{{Name: "alpha", Protocol: "openai", BaseURL: "http://127.0.0.1:9001"}},
		Aliases:   []snapshot.Alias{{Name: "chat-alpha", Primary: snapshot.Route{Provider: "alpha", Model: "m"}}},
		Keys:      []snapshot.Key{a, b},
		Groups:    []snapshot.Group{{Name: "platform", Budget: &snapshot.Budget{Amount: "500"}}},
	}
	if err := snapshot.WriteFile(path, s); err != nil {
		t.Fatal(err)
	}
	back, err := snapshot.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, back.Keys[0]
}

// keyOf is the key of id in the snapshot at path.
func keyOf(t *testing.T, path, id string) (snapshot.Key, *snapshot.Snapshot) {
	t.Helper()
	s, err := snapshot.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range s.Keys {
		if k.ID == id {
			return k, s
		}
	}
	t.Fatalf("no key %q in %s", id, path)
	return snapshot.Key{}, nil
}

// withoutKey is k without what a rotation changes.
func withoutKey(k snapshot.Key) snapshot.Key {
	k.Prefix, k.Hash, k.Previous = "", "", nil
	return k
}

func TestCLIRotateInto(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		grace time.Duration
	}{
		{"default grace", nil, DefaultRotationGrace},
		{"a week", []string{"--grace", "168h"}, 168 * time.Hour},
		{"the longest", []string{"--grace", "2160h"}, MaxRotationGrace},
		{"no grace", []string{"--grace", "0"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, old := snapshotWithKeys(t)
			_, s0 := keyOf(t, path, "team-b")
			otherBefore := s0.Keys[1]
			before := time.Now()
			stdout, stderr, err := runCLI(t, append([]string{"rotate", "--id", "team-a", "--into", path}, tc.args...)...)
			after := time.Now()
			if err != nil {
				t.Fatal(err, stderr)
			}
			plain := onePlaintextLine(t, stdout)
			got, s := keyOf(t, path, "team-a")

			// The new key, verified against the stored hash; the old one as
			// the previous key, until now + grace.
			if !keyformat.Verify(plain, got.Hash) || got.Prefix == old.Prefix || got.Hash == old.Hash {
				t.Fatalf("rotated key %+v does not hold the printed key", got)
			}
			if p, _ := keyformat.PrefixOf(plain); p != got.Prefix {
				t.Fatalf("prefix %s, the key's is %s", got.Prefix, p)
			}
			p := got.Previous
			if p == nil || p.Prefix != old.Prefix || p.Hash != old.Hash {
				t.Fatalf("previous %+v, want the old key's prefix %s and hash", p, old.Prefix)
			}
			if lo, hi := before.Add(tc.grace).Add(-time.Second), after.Add(tc.grace); p.Until.Before(lo) || p.Until.After(hi) {
				t.Fatalf("until %v, want now + %s (%v..%v)", p.Until, tc.grace, lo, hi)
			}
			if tc.grace == 0 && p.Accepts(after) {
				t.Fatal("grace 0: the previous key is still accepted")
			}
			// Every other field kept; the other key untouched.
			if !reflect.DeepEqual(withoutKey(got), withoutKey(old)) {
				t.Fatalf("fields changed:\n got %+v\nwant %+v", withoutKey(got), withoutKey(old))
			}
			if !reflect.DeepEqual(s.Keys[1], otherBefore) || len(s.Keys) != 2 {
				t.Fatalf("the other key changed: %+v", s.Keys)
			}
			// The gateway finds the key by both prefixes, each with its hash.
			c := snapshot.Compile(s)
			for prefix, hash := range map[string]string{got.Prefix: got.Hash, old.Prefix: old.Hash} {
				k, ok := c.KeyByPrefix(prefix)
				if h, _ := k.HashFor(prefix); !ok || k.ID != "team-a" || h != hash {
					t.Fatalf("KeyByPrefix(%s) = %v, %v (hash %s)", prefix, k, ok, h)
				}
			}
			raw, _ := os.ReadFile(path)
			if canon, _ := snapshot.Encode(s.Clone()); !bytes.Equal(raw, canon) || keyformat.LooksLikeKey(string(raw)) {
				t.Fatal("the snapshot is not canonical, or holds a plaintext key")
			}

			m := rotatedNote.FindStringSubmatch(stderr)
			if m == nil || m[1] != "team-a" || m[2] != got.Prefix || m[3] != keyformat.Fingerprint(got.Hash) || m[4] != keyformat.Fingerprint(old.Hash) {
				t.Fatalf("stderr %q lacks the rotation note", stderr)
			}
			if tc.grace > 0 && m[6] != p.Until.Format(time.RFC3339) {
				t.Fatalf("note says until %s, the entry %s", m[6], p.Until.Format(time.RFC3339))
			}
			if tc.grace == 0 && !strings.Contains(m[5], "stops working now") {
				t.Fatalf("grace 0 note: %q", m[5])
			}
			if strings.Contains(stderr, plain) || strings.Contains(stderr, "still in the grace") {
				t.Fatalf("stderr repeats the key, or notes an older key that was not there: %q", stderr)
			}
		})
	}
}

// Rotating again within the grace replaces the previous key, which stops
// at once, and says so; after the grace, it does not need saying.
func TestCLIRotateTwice(t *testing.T) {
	path, first := snapshotWithKeys(t)
	if _, _, err := runCLI(t, "rotate", "--id", "team-a", "--into", path); err != nil {
		t.Fatal(err)
	}
	second, _ := keyOf(t, path, "team-a")
	stdout, stderr, err := runCLI(t, "rotate", "--id", "team-a", "--into", path, "--grace", "0")
	if err != nil {
		t.Fatal(err)
	}
	plain := onePlaintextLine(t, stdout)
	third, s := keyOf(t, path, "team-a")
	if !keyformat.Verify(plain, third.Hash) || third.Previous.Prefix != second.Prefix || third.Previous.Hash != second.Hash {
		t.Fatalf("third key %+v, want the second (%s) as previous", third, second.Prefix)
	}
	if _, ok := snapshot.Compile(s).KeyByPrefix(first.Prefix); ok {
		t.Fatal("the first key is still found after two rotations")
	}
	want := `note: key "team-a" was still in the grace of its last rotation: the key before it (fingerprint ` +
		keyformat.Fingerprint(first.Hash) + `, accepted until ` + second.Previous.Until.Format(time.RFC3339) + `) stops working at once`
	if !strings.Contains(stderr, want) {
		t.Fatalf("stderr %q\nlacks %q", stderr, want)
	}
	// The previous key's grace was 0: over. No note this time.
	_, stderr, err = runCLI(t, "rotate", "--id", "team-a", "--into", path)
	if err != nil || strings.Contains(stderr, "still in the grace") {
		t.Fatalf("err %v, stderr %q", err, stderr)
	}
}

// gatewayKeyFromCluster is a GatewayKey as `kubectl get gk -o yaml` prints
// it: server-set metadata, labels, annotations, a status.
func gatewayKeyFromCluster(t *testing.T, entry snapshot.Key) string {
	t.Helper()
	doc, err := GatewayKeyYAML(entry, "team-ns")
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	s = strings.Replace(s, "metadata:\n", `metadata:
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{"kind":"GatewayKey"}'
  creationTimestamp: "2026-01-02T03:04:05Z"
  generation: 3
  labels:
    team: a
  managedFields:
  - apiVersion: llmgw.dev/v1alpha1
    fieldsType: FieldsV1
    manager: kubectl-client-side-apply
    operation: Update
  resourceVersion: "4711"
  uid: 0b7e6f52-46b3-4a6d-9d3f-1c2e3d4f5a6b
`, 1)
	return s + `status:
  fingerprint: ` + keyformat.Fingerprint(entry.Hash) + `
  conditions:
  - lastTransitionTime: "2026-01-02T03:04:05Z"
    message: accepted
    reason: Accepted
    status: "True"
    type: Accepted
`
}

func TestCLIRotateFrom(t *testing.T) {
	exp := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	_, old, err := Create(CreateOptions{ID: "team-a", Models: []string{"chat-alpha", "chat-beta"}, RPM: 30, Burst: 5, ExpiresAt: &exp,
		TokensPerMinute: 5000, Budget: &snapshot.Budget{Amount: "25", Currency: "EUR", Period: snapshot.PeriodDay}, Group: "platform"})
	if err != nil {
		t.Fatal(err)
	}
	doc := gatewayKeyFromCluster(t, old)
	for _, tc := range []struct {
		name       string
		stdin      bool // --from -
		entryOut   string
		output     string // "" = default
		keyOut     bool
		wantStdout string // "key", "entry" or ""
	}{
		{"file to file", false, "file", "", false, "key"},
		{"stdin to stdout (the pipe)", true, "-", "", false, "entry"},
		{"stdin to stdout, key to a file", true, "-", "yaml", true, "entry"},
		{"json entry", false, "file", "json", false, "key"},
		{"json to stdout", true, "-", "json", false, "entry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			from, stdin := "-", doc
			if !tc.stdin {
				from, stdin = filepath.Join(dir, "gk.yaml"), ""
				if err := os.WriteFile(from, []byte(doc), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			entryOut := tc.entryOut
			if entryOut == "file" {
				entryOut = filepath.Join(dir, "rotated")
			}
			args := []string{"rotate", "--id", "team-a", "--grace", "2h", "--from", from, "--entry-out", entryOut}
			if tc.output != "" {
				args = append(args, "--output", tc.output)
			}
			keyPath := filepath.Join(dir, "team-a.key")
			if tc.keyOut {
				args = append(args, "--key-out", keyPath)
			}
			before := time.Now()
			stdout, stderr, err := runCLIStdin(t, stdin, args...)
			if err != nil {
				t.Fatal(err, stderr)
			}

			var plain string
			var out []byte
			switch {
			case tc.keyOut:
				b, _ := os.ReadFile(keyPath)
				plain = strings.TrimSpace(string(b))
				if keyformat.LooksLikeKey(stderr) || keyformat.LooksLikeKey(stdout) {
					t.Fatal("the key was printed although --key-out was given")
				}
			case tc.wantStdout == "key":
				plain = onePlaintextLine(t, stdout)
			default:
				plain, _, _ = strings.Cut(stderr, "\n")
			}
			if tc.wantStdout == "entry" {
				out = []byte(stdout)
			} else {
				out, _ = os.ReadFile(entryOut)
			}
			if keyformat.LooksLikeKey(string(out)) {
				t.Fatalf("the entry holds a plaintext key:\n%s", out)
			}

			var got snapshot.Key
			if tc.output == "json" {
				dec := json.NewDecoder(bytes.NewReader(out))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&got); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
			} else {
				gk := decodeGatewayKey(t, out) // as the CRD takes it
				// The user's metadata kept, the server's left to it.
				if gk.Name != "team-a" || gk.Namespace != "team-ns" || gk.ResourceVersion != "4711" || gk.Labels["team"] != "a" ||
					gk.Annotations["kubectl.kubernetes.io/last-applied-configuration"] == "" || gk.UID != "" || gk.Generation != 0 ||
					!gk.CreationTimestamp.IsZero() || gk.ManagedFields != nil || !reflect.DeepEqual(gk.Status, v1alpha1.GatewayKeyStatus{}) {
					t.Fatalf("metadata %+v, status %+v", gk.ObjectMeta, gk.Status)
				}
				for _, gone := range []string{"status:", "uid:", "managedFields:", "generation:", "creationTimestamp:"} {
					if strings.Contains(string(out), gone) {
						t.Fatalf("%s still in the rotated resource:\n%s", gone, out)
					}
				}
				if gk.Spec.Previous == nil || !strings.Contains(string(out), "\n  previous:\n") {
					t.Fatalf("no spec.previous:\n%s", out)
				}
				got = entryOf(&gk)
			}
			if !keyformat.Verify(plain, got.Hash) || got.Previous == nil || got.Previous.Prefix != old.Prefix || got.Previous.Hash != old.Hash {
				t.Fatalf("rotated entry %+v does not hold the new key and the old one as previous", got)
			}
			if until := got.Previous.Until; until.Before(before.Add(2*time.Hour-time.Second)) || until.After(time.Now().Add(2*time.Hour)) {
				t.Fatalf("until %v, want now + 2h", until)
			}
			if !reflect.DeepEqual(withoutKey(got), withoutKey(old)) {
				t.Fatalf("fields changed:\n got %+v\nwant %+v", withoutKey(got), withoutKey(old))
			}
			if m := rotatedNote.FindStringSubmatch(stderr); m == nil || m[4] != keyformat.Fingerprint(old.Hash) {
				t.Fatalf("stderr %q lacks the rotation note", stderr)
			}
		})
	}
}

// TestCLIRotateFromGolden pins the rotated GatewayKey's bytes, with the new
// key's prefix and hash and the end of the grace replaced by placeholders.
func TestCLIRotateFromGolden(t *testing.T) {
	in := `apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata:
  name: team-a
  namespace: llmgw-system
  resourceVersion: "12"
  uid: 0b7e6f52-46b3-4a6d-9d3f-1c2e3d4f5a6b
spec:
  keyHash: sha256:1182f96fbcb6f5113c26c1ba36783f43a446dc772e4e8e066cdc2325beee24eb
  keyPrefix: lgw_keyaaaaaaa
  models: ["chat"]
  budget: {amount: "25"}
status:
  fingerprint: abc
`
	const want = "# Rotated by `llmgw keys rotate`: only the keys' hashes are here; the new key's plaintext was shown once.\n" + `apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata:
  name: team-a
  namespace: llmgw-system
  resourceVersion: "12"
spec:
  budget:
    amount: "25"
  keyHash: HASH
  keyPrefix: PREFIX
  models:
  - chat
  previous:
    acceptedUntil: "UNTIL"
    keyHash: sha256:1182f96fbcb6f5113c26c1ba36783f43a446dc772e4e8e066cdc2325beee24eb
    keyPrefix: lgw_keyaaaaaaa
`
	stdout, stderr, err := runCLIStdin(t, in, "rotate", "--id", "team-a", "--from", "-", "--entry-out", "-")
	if err != nil {
		t.Fatal(err, stderr)
	}
	plain, _, _ := strings.Cut(stderr, "\n")
	prefix, ok := keyformat.PrefixOf(plain)
	if !ok {
		t.Fatalf("stderr line 1 is not the key: %q", plain)
	}
	m := rotatedNote.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no rotation note: %q", stderr)
	}
	got := strings.NewReplacer(prefix, "PREFIX", keyformat.Hash(plain), "HASH", m[6], "UNTIL").Replace(stdout)
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestCLIRotateErrors: a rotation that cannot be done is refused with an
// error that says why, before anything is written or printed.
func TestCLIRotateErrors(t *testing.T) {
	dir := t.TempDir()
	snap, _ := snapshotWithKeys(t)
	_, entry, err := Create(CreateOptions{ID: "team-a", Models: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	gkPath := filepath.Join(dir, "gk.yaml")
	doc := gatewayKeyFromCluster(t, entry)
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("gk.yaml", doc)
	existing := write("existing.key", "x\n")
	out := filepath.Join(dir, "out.yaml")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no id", []string{"--into", snap}, "key id is required"},
		{"unknown id", []string{"--id", "team-z", "--into", snap}, `has no key "team-z" (its keys: "team-a", "team-b")`},
		{"negative grace", []string{"--id", "team-a", "--grace", "-1h", "--into", snap}, "--grace must be within 0s..2160h0m0s (90 days), got -1h0m0s"},
		{"grace too long", []string{"--id", "team-a", "--grace", "2161h", "--into", snap}, "--grace must be within 0s..2160h0m0s (90 days)"},
		{"grace not a duration", []string{"--id", "team-a", "--grace", "7d", "--into", snap}, `invalid value "7d" for flag -grace`},
		{"both destinations", []string{"--id", "team-a", "--into", snap, "--from", gkPath, "--entry-out", out}, "--into and --from are two ways to rotate: give one"},
		{"neither destination", []string{"--id", "team-a"}, "say which key to rotate: --into SNAPSHOT_FILE, or --from"},
		{"from without entry-out", []string{"--id", "team-a", "--from", gkPath}, "--from needs --entry-out"},
		{"entry-out with into", []string{"--id", "team-a", "--into", snap, "--entry-out", out}, "--entry-out applies to --from"},
		{"output with into", []string{"--id", "team-a", "--into", snap, "--output", "json"}, "--output applies to --from"},
		{"bad output", []string{"--id", "team-a", "--from", gkPath, "--entry-out", out, "--output", "xml"}, `--output must be yaml or json, got "xml"`},
		{"missing snapshot", []string{"--id", "team-a", "--into", filepath.Join(dir, "none.json")}, "no such file; rotate replaces a key a snapshot has"},
		{"missing from file", []string{"--id", "team-a", "--from", filepath.Join(dir, "none.yaml"), "--entry-out", out}, "no such file"},
		{"from another key", []string{"--id", "team-b", "--from", gkPath, "--entry-out", out}, `holds the GatewayKey "team-a", not "team-b"`},
		{"from another kind", []string{"--id", "team-a", "--from", write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: team-a}\n"), "--entry-out", out},
			`want one GatewayKey, as ` + "`kubectl get gatewaykey NAME -o yaml`" + ` prints it; got kind "ConfigMap"`},
		{"from a list", []string{"--id", "team-a", "--from", write("list.yaml", "apiVersion: v1\nkind: List\nitems: []\n"), "--entry-out", out}, `got kind "List"`},
		{"from another version", []string{"--id", "team-a", "--from", write("v2.yaml", strings.Replace(doc, "llmgw.dev/v1alpha1", "llmgw.dev/v2", 1)), "--entry-out", out}, `got apiVersion "llmgw.dev/v2"`},
		{"from an unknown spec field", []string{"--id", "team-a", "--from", write("new.yaml", strings.Replace(doc, "spec:\n", "spec:\n  futureField: 1\n", 1)), "--entry-out", out}, `unknown field "futureField"`},
		{"from not yaml", []string{"--id", "team-a", "--from", write("bad.yaml", "{{{"), "--entry-out", out}, "want one GatewayKey"},
		{"from a key without a hash", []string{"--id", "team-a", "--from", write("nohash.yaml", strings.Replace(doc, entry.Hash, "", 1)), "--entry-out", out}, `the GatewayKey to rotate: key "team-a": hash must be "sha256:"`},
		{"key-out exists", []string{"--id", "team-a", "--into", snap, "--key-out", existing}, "refusing to overwrite an existing file"},
		{"key-out is entry-out", []string{"--id", "team-a", "--from", gkPath, "--entry-out", out, "--key-out", out}, "name the same file"},
		{"extra args", []string{"--id", "team-a", "--into", snap, "now"}, "unexpected arguments"},
	}
	snapBefore, _ := os.ReadFile(snap)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, err := runCLI(t, append([]string{"rotate"}, c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
			if stdout != "" || keyformat.LooksLikeKey(stderr) {
				t.Fatalf("printed %q / %q although it failed", stdout, stderr)
			}
			if after, _ := os.ReadFile(snap); !bytes.Equal(after, snapBefore) {
				t.Fatal("the snapshot changed although the rotation failed")
			}
			if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
				t.Fatal("an entry was written although the rotation failed")
			}
			if b, _ := os.ReadFile(existing); string(b) != "x\n" {
				t.Fatal("an existing key file was overwritten")
			}
		})
	}

	// A pasted key is never echoed, whichever flag it lands in.
	plain, _, _, err := keyformat.Generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--id", plain, "--into", snap},
		{"--id", plain, "--from", gkPath, "--entry-out", out},
		{"--id", "team-a", "--from", gkPath, "--entry-out", out, "--output", plain},
		{"--id", "team-a", "--from", write("pasted.yaml", strings.Replace(doc, entry.Hash, plain, 1)), "--entry-out", out},
	} {
		_, stderr, err := runCLI(t, append([]string{"rotate"}, args...)...)
		if err == nil || strings.Contains(err.Error(), plain) || strings.Contains(stderr, plain) {
			t.Errorf("%v: err = %v, stderr %q: want an error without the key", args, err, stderr)
		}
	}
}

// A failed write of the rotated entry leaves no key file behind: the old
// key works on, and no key exists whose hash was stored nowhere.
func TestCLIRotateWriteFailureLeavesNoKey(t *testing.T) {
	_, entry, err := Create(CreateOptions{ID: "team-a", Models: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyPath := filepath.Join(dir, "team-a.key")
	stdout, _, err := runCLIStdin(t, gatewayKeyFromCluster(t, entry), "rotate", "--id", "team-a", "--from", "-",
		"--entry-out", filepath.Join(dir, "missing", "rotated.yaml"), "--key-out", keyPath)
	if err == nil || !strings.Contains(err.Error(), "no such file") || stdout != "" {
		t.Fatalf("err %v, stdout %q", err, stdout)
	}
	if _, err := os.Stat(keyPath); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("a key file is left for a rotation that was not stored")
	}
}

func TestRotate(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	_, entry, err := Create(CreateOptions{ID: "k", Models: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	entry.Owners = map[string]string{"team": "a"}
	plain, rotated, dropped, err := Rotate(entry, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	want := snapshot.PreviousKey{Prefix: entry.Prefix, Hash: entry.Hash, Until: now.Add(time.Hour)}
	if !keyformat.Verify(plain, rotated.Hash) || *rotated.Previous != want || dropped != nil || !reflect.DeepEqual(withoutKey(rotated), withoutKey(entry)) {
		t.Fatalf("rotated %+v (previous %+v), dropped %v", rotated, rotated.Previous, dropped)
	}

	for _, tc := range []struct {
		name     string
		previous *snapshot.PreviousKey
		dropped  bool
	}{
		{"previous in its grace", &snapshot.PreviousKey{Prefix: "lgw_keyccccccc", Hash: entry.Hash, Until: now.Add(time.Minute)}, true},
		{"previous ending now", &snapshot.PreviousKey{Prefix: "lgw_keyccccccc", Hash: entry.Hash, Until: now}, false},
		{"previous long over", &snapshot.PreviousKey{Prefix: "lgw_keyccccccc", Hash: entry.Hash, Until: now.Add(-time.Hour)}, false},
	} {
		e := entry
		e.Previous = tc.previous
		_, got, dropped, err := Rotate(e, 0, now)
		if err != nil {
			t.Fatal(err)
		}
		if (dropped != nil) != tc.dropped || (dropped != nil && *dropped != *tc.previous) || got.Previous.Prefix != entry.Prefix || got.Previous.Accepts(now) {
			t.Errorf("%s: dropped %v, previous %+v", tc.name, dropped, got.Previous)
		}
	}

	for name, c := range map[string]struct {
		entry snapshot.Key
		grace time.Duration
		want  string
	}{
		"negative grace":   {entry, -time.Second, "grace -1s must be within 0s..2160h0m0s"},
		"grace too long":   {entry, MaxRotationGrace + time.Second, "must be within"},
		"no hash":          {snapshot.Key{ID: "k", Prefix: entry.Prefix, Models: []string{"*"}}, time.Hour, `key "k" has no valid prefix and hash`},
		"plaintext hash":   {snapshot.Key{ID: "k", Prefix: entry.Prefix, Hash: plain, Models: []string{"*"}}, time.Hour, "no valid prefix and hash"},
		"invalid entry":    {snapshot.Key{ID: "k", Prefix: entry.Prefix, Hash: entry.Hash}, time.Hour, "models"},
		"no prefix at all": {snapshot.Key{ID: "k", Hash: entry.Hash, Models: []string{"*"}}, time.Hour, "no valid prefix"},
	} {
		if _, _, _, err := Rotate(c.entry, c.grace, now); err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), plain) {
			t.Errorf("%s: err = %v, want it to contain %q", name, err, c.want)
		}
	}
}

func TestCLIRotateHelp(t *testing.T) {
	_, stderr, err := runCLI(t, "rotate", "--help")
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v, want flag.ErrHelp", err)
	}
	for _, f := range []string{"-id", "-grace", "-into", "-from", "-entry-out", "-output", "-key-out", "key_rotated", "90 days"} {
		if !strings.Contains(stderr, f) {
			t.Errorf("rotate help does not mention %s", f)
		}
	}
	_, stderr, _ = runCLI(t, "--help")
	if !strings.Contains(stderr, "rotate") {
		t.Errorf("usage does not list rotate: %q", stderr)
	}
}

// A rotated entry printed as a GatewayKey carries spec.previous, passes the
// CRD, and reads back (as the controller would compile it) as the entry.
func TestGatewayKeyYAMLOfARotatedEntry(t *testing.T) {
	_, entry, err := Create(CreateOptions{ID: "team-a", Models: []string{"chat"}, Budget: &snapshot.Budget{Amount: "3"}})
	if err != nil {
		t.Fatal(err)
	}
	_, rotated, _, err := Rotate(entry, 36*time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	doc, err := GatewayKeyYAML(rotated, "team-ns")
	if err != nil {
		t.Fatal(err)
	}
	gk := decodeGatewayKey(t, doc)
	if p := gk.Spec.Previous; p == nil || p.KeyPrefix != entry.Prefix || p.KeyHash != entry.Hash || !p.AcceptedUntil.Time.Equal(rotated.Previous.Until) {
		t.Fatalf("spec.previous %+v, want the old key until %v:\n%s", p, rotated.Previous.Until, doc)
	}
	if back := entryOf(&gk); !reflect.DeepEqual(back, rotated) {
		t.Fatalf("read back as\n%+v\nwant\n%+v", back, rotated)
	}
}
