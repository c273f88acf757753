package keys

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
)

const rotateHelp = `Usage: llmgw keys rotate --id NAME [--grace 24h] (--into SNAPSHOT_FILE | --from GATEWAYKEY_FILE|- --entry-out FILE|-) [flags]

Replaces a key with a new one. The new key is shown only this once and stored
nowhere; the entry written in its place keeps the key's id and every other field
(models, limits, budget, group, expiry), holds the new key's hash, and names the
old key as its previous one: until the grace ends (--grace after now) the gateways
accept the old key too, as this very key (same id, usage history, limits and
budgets), so clients can move to the new one without an outage; after it they
answer the old key 401 key_rotated. The old key's plaintext is never needed.

Rotating a key still in the grace of its last rotation ends that grace: the key
before the old one stops working at once (a note says so).

Where the rotated entry goes (exactly one of):
  --into FILE      the key of that id in the snapshot FILE is rotated in place; the
                   file is re-encoded canonically with a new version;
  --from FILE      the GatewayKey in FILE (- reads standard input), as
                   'kubectl get gatewaykey NAME -o yaml' prints it, is written rotated
                   to --entry-out: a GatewayKey (--output yaml, the default) that keeps
                   its name, namespace, labels, annotations and resourceVersion (so
                   applying it fails if the key changed meanwhile), or the snapshot's
                   key entry (--output json; its id is the metadata.name).

Where the new plaintext key goes:
  --key-out FILE   to FILE (created with mode 0600), and nowhere else;
  --entry-out -    else to standard error, on a line of its own, because standard
                   output carries the entry (it pipes into kubectl apply -f -);
  otherwise        to standard output, exactly one line (KEY=$(llmgw keys rotate ...)).
Notes for humans go to standard error. Nothing is written and no key is printed if
anything fails.

  kubectl get gatewaykey team-a -o yaml | llmgw keys rotate --id team-a --from - --entry-out - --key-out team-a.key | kubectl apply -f -
  llmgw keys rotate --id team-a --grace 168h --into snapshot.json

Flags:
`

type rotateFlags struct {
	id, into, from, entryOut, output, keyOut string
	grace                                    time.Duration
	given                                    map[string]bool
}

func runRotate(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var f rotateFlags
	set := flag.NewFlagSet("keys rotate", flag.ContinueOnError)
	set.SetOutput(stderr)
	set.Usage = func() {
		fmt.Fprint(stderr, rotateHelp)
		set.PrintDefaults()
	}
	set.StringVar(&f.id, "id", "", "the `NAME` of the key to rotate (required): its id in the snapshot, or its GatewayKey's metadata.name")
	set.DurationVar(&f.grace, "grace", DefaultRotationGrace, fmt.Sprintf("how long the old key keeps working beside the new one, a `DURATION` such as 24h or 168h (a week); 0 stops it at once, at most %s (90 days)", MaxRotationGrace))
	set.StringVar(&f.into, "into", "", "rotate the key in the snapshot `FILE` in place")
	set.StringVar(&f.from, "from", "", "rotate the GatewayKey in `FILE` (- reads standard input) and write it to --entry-out")
	set.StringVar(&f.entryOut, "entry-out", "", "with --from: write the rotated entry to `FILE` (mode 0644); - writes it to standard output (the key then goes to standard error or --key-out)")
	set.StringVar(&f.output, "output", "yaml", "with --from: `format` of the --entry-out entry: yaml (the GatewayKey resource) or json (the snapshot's key object)")
	set.StringVar(&f.keyOut, "key-out", "", "write the new plaintext key to `FILE` (mode 0600, must not exist) instead of printing it")
	var err error
	if f.given, err = parseFlags(set, args); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	if f.into != "" {
		return f.rotateInto(stdout, stderr)
	}
	return f.rotateFrom(stdin, stdout, stderr)
}

// check refuses flag combinations before anything is read.
func (f *rotateFlags) check() error {
	switch {
	case f.id == "":
		// Any id the snapshot or the GatewayKey has: no rule of create's,
		// which a key written by hand may predate.
		return errors.New("key id is required: --id NAME")
	case f.grace < 0 || f.grace > MaxRotationGrace:
		return fmt.Errorf("--grace must be within 0s..%s (90 days), got %s; 0 stops the old key at once", MaxRotationGrace, f.grace)
	case f.into != "" && f.from != "":
		return errors.New("--into and --from are two ways to rotate: give one (--into rotates the key in a snapshot file, --from a GatewayKey written to --entry-out)")
	case f.into == "" && f.from == "":
		return errors.New("say which key to rotate: --into SNAPSHOT_FILE, or --from GATEWAYKEY_FILE (- for standard input) with --entry-out FILE (or -)")
	case f.into != "" && f.given["entry-out"]:
		return errors.New("--entry-out applies to --from; --into rotates the key in the snapshot file itself")
	case f.into != "" && f.given["output"]:
		return errors.New("--output applies to --from's --entry-out; --into writes the snapshot file")
	case f.from != "" && f.entryOut == "":
		return errors.New("--from needs --entry-out FILE (or -): where the rotated GatewayKey goes")
	case f.output != "yaml" && f.output != "json":
		return fmt.Errorf("--output must be yaml or json, got %s", quoteRedacted(f.output))
	case f.keyOut != "" && f.keyOut == f.entryOut:
		return errors.New("--key-out and --entry-out name the same file: the key and its hash-only entry go to different places")
	}
	if f.keyOut != "" {
		if _, err := os.Lstat(f.keyOut); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("--key-out %s: refusing to overwrite an existing file", f.keyOut)
		}
	}
	return nil
}

// rotateInto rotates the key of f.id in the snapshot file f.into.
func (f *rotateFlags) rotateInto(stdout, stderr io.Writer) error {
	s, err := snapshot.LoadFile(f.into)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--into %s: no such file; rotate replaces a key a snapshot has (llmgw keys create --into makes one)", f.into)
	}
	if err != nil {
		return err
	}
	i := slices.IndexFunc(s.Keys, func(k snapshot.Key) bool { return k.ID == f.id })
	if i < 0 {
		return fmt.Errorf("%s has no key %s (%s)", f.into, quoteRedacted(f.id), keyIDs(s.Keys))
	}
	old := s.Keys[i]
	plaintext, rotated, dropped, err := Rotate(old, f.grace, time.Now())
	if err != nil {
		return err
	}
	s.Keys[i] = rotated
	// Validate now so that a bad snapshot writes nothing at all.
	if _, err := snapshot.Encode(s); err != nil {
		return fmt.Errorf("%s: %w", f.into, err)
	}
	if err := f.writeKey(plaintext, func() error { return snapshot.WriteFile(f.into, s) }, nil, stdout, stderr); err != nil {
		return err
	}
	f.notes(stderr, old.Hash, rotated, dropped)
	fmt.Fprintf(stderr, "llmgw keys: rotated in %s, version %s; the gateways accept both keys once they load it\n", f.into, s.Version)
	return nil
}

// keyIDs lists the ids of keys for an error, at most ten of them.
func keyIDs(keys []snapshot.Key) string {
	if len(keys) == 0 {
		return "it has no keys"
	}
	var ids []string
	for _, k := range keys[:min(len(keys), 10)] {
		ids = append(ids, quoteRedacted(k.ID))
	}
	more := ""
	if len(keys) > 10 {
		more = fmt.Sprintf(" and %d more", len(keys)-10)
	}
	return "its keys: " + strings.Join(ids, ", ") + more
}

// rotateFrom rotates the GatewayKey read from f.from and writes it, or its
// snapshot entry, to f.entryOut.
func (f *rotateFlags) rotateFrom(stdin io.Reader, stdout, stderr io.Writer) error {
	var doc []byte
	var err error
	if f.from == "-" {
		doc, err = io.ReadAll(io.LimitReader(stdin, maxGatewayKeyDoc+1))
	} else {
		doc, err = readLimited(f.from)
	}
	if err != nil {
		return fmt.Errorf("--from %s: %w", f.from, err)
	}
	if len(doc) > maxGatewayKeyDoc {
		return fmt.Errorf("--from %s: more than %d bytes: not one GatewayKey", f.from, maxGatewayKeyDoc)
	}
	in, err := readGatewayKey(doc)
	if err != nil {
		return fmt.Errorf("--from %s: %w", f.from, err)
	}
	if in.Name != f.id {
		return fmt.Errorf("--from %s holds the GatewayKey %s, not %s: check --id", f.from, quoteRedacted(in.Name), quoteRedacted(f.id))
	}
	plaintext, out, entry, dropped, err := rotateGatewayKey(in, f.grace, time.Now())
	if err != nil {
		return fmt.Errorf("--from %s: %w", f.from, err)
	}
	var entryBytes []byte
	if f.output == "yaml" {
		entryBytes, err = gatewayKeyYAML(out, "# Rotated by `llmgw keys rotate`: only the keys' hashes are here; the new key's plaintext was shown once.\n")
	} else {
		entryBytes, err = EntryJSON(entry)
	}
	if err != nil {
		return err
	}
	var writeFile func() error
	if f.entryOut != "-" {
		writeFile = func() error { return os.WriteFile(f.entryOut, entryBytes, 0o644) }
	}
	var toStdout []byte
	if f.entryOut == "-" {
		toStdout = entryBytes
	}
	if err := f.writeKey(plaintext, writeFile, toStdout, stdout, stderr); err != nil {
		return err
	}
	f.notes(stderr, in.Spec.KeyHash, entry, dropped)
	if f.entryOut != "-" {
		fmt.Fprintf(stderr, "llmgw keys: rotated hash-only %s entry written to %s\n", f.output, f.entryOut)
	}
	return nil
}

// maxGatewayKeyDoc bounds a --from document: one GatewayKey, with room for
// the managedFields and annotations kubectl prints.
const maxGatewayKeyDoc = 1 << 20

func readLimited(path string) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return io.ReadAll(io.LimitReader(file, maxGatewayKeyDoc+1))
}

// writeKey stores the new key (--key-out) and the rotated entry (write,
// which may be nil), and only then prints: the key on the line create would
// print it on, then entry (nil: none) on standard output. No key is shown
// whose hash was not stored, and no key file is left for one whose entry
// could not be written: the old key works on, unrotated.
func (f *rotateFlags) writeKey(plaintext string, write func() error, entry []byte, stdout, stderr io.Writer) error {
	if f.keyOut != "" {
		if err := writeNew(f.keyOut, []byte(plaintext+"\n")); err != nil {
			return fmt.Errorf("--key-out: %w", err)
		}
	}
	if write != nil {
		if err := write(); err != nil {
			if f.keyOut != "" {
				err = errors.Join(err, os.Remove(f.keyOut))
			}
			return err
		}
	}
	if f.keyOut == "" {
		keyTo := stdout
		if entry != nil {
			keyTo = stderr
		}
		if _, err := fmt.Fprintln(keyTo, plaintext); err != nil {
			return err
		}
	}
	if entry != nil {
		if _, err := stdout.Write(entry); err != nil {
			return err
		}
	}
	return nil
}

// notes tells the human what happened: the new key and until when the old
// one (of oldHash) works, and that an older one stopped, if one did.
func (f *rotateFlags) notes(stderr io.Writer, oldHash string, rotated snapshot.Key, dropped *snapshot.PreviousKey) {
	where := "above"
	if f.keyOut != "" {
		where = "in " + f.keyOut
	}
	until := "is accepted until " + rotated.Previous.Until.Format(time.RFC3339)
	if f.grace == 0 {
		until = "stops working now (grace 0): the gateways answer it 401 key_rotated"
	}
	fmt.Fprintf(stderr, "llmgw keys: rotated key %s (prefix %s, fingerprint %s); the previous key (fingerprint %s) %s. The new key %s is shown only once: store it now.\n",
		quoteRedacted(rotated.ID), rotated.Prefix, keyformat.Fingerprint(rotated.Hash), keyformat.Fingerprint(oldHash), until, where)
	if dropped != nil {
		fmt.Fprintf(stderr, "llmgw keys: note: key %s was still in the grace of its last rotation: the key before it (fingerprint %s, accepted until %s) stops working at once\n",
			quoteRedacted(rotated.ID), keyformat.Fingerprint(dropped.Hash), dropped.Until.Format(time.RFC3339))
	}
	now := time.Now()
	switch {
	case rotated.Disabled:
		fmt.Fprintf(stderr, "llmgw keys: note: key %s is disabled: neither key works until it is enabled\n", quoteRedacted(rotated.ID))
	case rotated.ExpiresAt != nil && !rotated.ExpiresAt.After(now):
		fmt.Fprintf(stderr, "llmgw keys: note: key %s expired at %s: neither key works until its expiry is moved\n", quoteRedacted(rotated.ID), rotated.ExpiresAt.Format(time.RFC3339))
	}
}
