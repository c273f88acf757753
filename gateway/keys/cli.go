package keys

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// Main runs `llmgw keys <subcommand>`.
func Main(ctx context.Context, args []string) error {
	return run(ctx, args, os.Stdout, os.Stderr)
}

const usageText = `Usage: llmgw keys <subcommand> [flags]

Subcommands:
  create   create a gateway key: prints the plaintext once, stores only its hash

Run 'llmgw keys create --help' for its flags.
`

func run(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return errors.New("missing subcommand")
	}
	switch args[0] {
	case "create":
		return runCreate(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stderr, usageText)
		return flag.ErrHelp
	}
	fmt.Fprint(stderr, usageText)
	return fmt.Errorf("unknown subcommand %q", args[0])
}

const createHelp = `Usage: llmgw keys create --id NAME [flags] (--entry-out FILE|- | --into SNAPSHOT_FILE)

Generates a gateway key. It is shown only this once and stored nowhere; what is
stored is the hash-only entry, written where --entry-out and/or --into say (at least
one is required, so no key is ever printed without its hash being kept). Nothing is
written and no key is printed if any destination fails validation.

Where the plaintext key goes:
  --key-out FILE   to FILE (created with mode 0600), and nowhere else;
  --entry-out -    else to standard error, on a line of its own, because standard
                   output carries the entry (it pipes into kubectl apply -f -);
  otherwise        to standard output, exactly one line (KEY=$(llmgw keys create ...)).
Notes for humans go to standard error.

  llmgw keys create --id team-a --output yaml --entry-out - | kubectl apply -f -

Flags:
`

type createFlags struct {
	id, models, expires, output, namespace, entryOut, into, keyOut string
	rpm, burst                                                     int
	namespaceSet                                                   bool
}

func runCreate(args []string, stdout, stderr io.Writer) error {
	var f createFlags
	set := flag.NewFlagSet("keys create", flag.ContinueOnError)
	set.SetOutput(stderr)
	set.Usage = func() {
		fmt.Fprint(stderr, createHelp)
		set.PrintDefaults()
	}
	set.StringVar(&f.id, "id", "", "key `NAME` (required): a DNS-1123 subdomain such as team-a; also the GatewayKey's metadata.name")
	set.StringVar(&f.models, "models", snapshot.AllModels, "comma-separated alias names the key may use (`LIST`), or * for all")
	set.IntVar(&f.rpm, "rpm", snapshot.DefaultRPM, "rate limit: `N` requests per minute (token bucket refill rate)")
	set.IntVar(&f.burst, "burst", snapshot.DefaultBurst, "rate limit: burst of `N` requests (token bucket capacity)")
	set.StringVar(&f.expires, "expires", "", "optional expiry, an `RFC3339` time such as 2027-01-01T00:00:00Z; must be in the future")
	set.StringVar(&f.output, "output", "json", "`format` of the --entry-out entry: json (the snapshot's key object) or yaml (a GatewayKey resource, apiVersion "+v1alpha1.GroupVersion.String()+")")
	set.StringVar(&f.namespace, "namespace", snapshot.DefaultNamespace, "metadata.namespace `NS` of the GatewayKey (only with --output yaml): the namespace the controller watches, so that the key is served")
	set.StringVar(&f.entryOut, "entry-out", "", "write the hash-only entry to `FILE` (mode 0644); - writes it to standard output (the key then goes to standard error or --key-out)")
	set.StringVar(&f.keyOut, "key-out", "", "write the plaintext key to `FILE` (mode 0600, must not exist) instead of printing it")
	set.StringVar(&f.into, "into", "", "merge the entry into the snapshot `FILE` (created if missing), replacing an entry with the same id; the file is re-encoded canonically with a new version")
	if err := set.Parse(args); err != nil {
		return err
	}
	set.Visit(func(fl *flag.Flag) { f.namespaceSet = f.namespaceSet || fl.Name == "namespace" })
	if set.NArg() > 0 {
		return errors.New(keyformat.Redact(fmt.Sprintf("unexpected arguments: %q", set.Args())))
	}
	opts, err := f.options()
	if err != nil {
		return err
	}
	plaintext, entry, err := Create(opts)
	if err != nil {
		return err
	}
	return f.emit(plaintext, entry, stdout, stderr)
}

func (f *createFlags) options() (CreateOptions, error) {
	switch {
	case f.output != "json" && f.output != "yaml":
		return CreateOptions{}, fmt.Errorf("--output must be json or yaml, got %q", f.output)
	case f.namespaceSet && f.output != "yaml":
		return CreateOptions{}, errors.New("--namespace only applies to --output yaml")
	case f.output == "yaml" && f.entryOut == "":
		return CreateOptions{}, errors.New("--output yaml applies to --entry-out (a snapshot given to --into always gets the JSON entry)")
	case f.entryOut == "" && f.into == "":
		return CreateOptions{}, errors.New("say where the hash-only entry goes: --entry-out FILE (or -) and/or --into SNAPSHOT_FILE")
	}
	opts := CreateOptions{ID: f.id, RPM: f.rpm, Burst: f.burst}
	for m := range strings.SplitSeq(f.models, ",") {
		if m = strings.TrimSpace(m); m != "" {
			opts.Models = append(opts.Models, m)
		}
	}
	if len(opts.Models) == 0 {
		return CreateOptions{}, errors.New("--models is empty: list aliases or use *")
	}
	// Explicit zeros would silently become defaults in the snapshot.
	if f.rpm <= 0 || f.burst <= 0 {
		return CreateOptions{}, errors.New("--rpm and --burst must be > 0")
	}
	if f.expires != "" {
		t, err := time.Parse(time.RFC3339, f.expires)
		if err != nil {
			return CreateOptions{}, fmt.Errorf("--expires: want RFC 3339 such as 2027-01-01T00:00:00Z: %s", keyformat.Redact(err.Error()))
		}
		opts.ExpiresAt = &t
	}
	return opts, nil
}

// emit prepares every output before writing any, then writes the entry file, then
// the snapshot (which may revoke an older key with the same id), and only then
// prints the plaintext.
func (f *createFlags) emit(plaintext string, entry snapshot.Key, stdout, stderr io.Writer) error {
	var entryBytes []byte
	var err error
	if f.entryOut != "" {
		if f.output == "yaml" {
			entryBytes, err = GatewayKeyYAML(entry, f.namespace)
		} else {
			entryBytes, err = EntryJSON(entry)
		}
		if err != nil {
			return err
		}
	}
	var merged *snapshot.Snapshot
	replaced := false
	if f.into != "" {
		if merged, replaced, err = mergeKey(f.into, entry); err != nil {
			return err
		}
		// Validate now so that a bad merge writes nothing at all.
		if _, err := snapshot.Encode(merged); err != nil {
			return fmt.Errorf("%s: %w", f.into, err)
		}
	}

	if f.keyOut != "" {
		if _, err := os.Lstat(f.keyOut); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("--key-out %s: refusing to overwrite an existing file", f.keyOut)
		}
	}

	if f.entryOut != "" && f.entryOut != "-" {
		if err := os.WriteFile(f.entryOut, entryBytes, 0o644); err != nil {
			return err
		}
	}
	if f.keyOut != "" {
		if err := writeNew(f.keyOut, []byte(plaintext+"\n")); err != nil {
			return fmt.Errorf("--key-out: %w", err)
		}
	}
	if merged != nil {
		if err := snapshot.WriteFile(f.into, merged); err != nil {
			return err
		}
	}

	keyTo := stdout
	if f.entryOut == "-" {
		keyTo = stderr
	}
	if f.keyOut == "" {
		if _, err := fmt.Fprintln(keyTo, plaintext); err != nil {
			return err
		}
	}
	if f.entryOut == "-" {
		if _, err := stdout.Write(entryBytes); err != nil {
			return err
		}
	}

	where := "above"
	if f.keyOut != "" {
		where = "in " + f.keyOut
	}
	fmt.Fprintf(stderr, "llmgw keys: created key %q (prefix %s, fingerprint %s). The key %s is shown only once: store it now.\n",
		entry.ID, entry.Prefix, keyformat.Fingerprint(entry.Hash), where)
	if f.entryOut != "" && f.entryOut != "-" {
		fmt.Fprintf(stderr, "llmgw keys: hash-only %s entry written to %s\n", f.output, f.entryOut)
	}
	if merged != nil {
		verb := "added to"
		if replaced {
			verb = "replaced the entry with the same id in (the old key stops working when the gateway reloads)"
		}
		fmt.Fprintf(stderr, "llmgw keys: %s %s, version %s\n", verb, f.into, merged.Version)
	}
	return nil
}

// mergeKey loads the snapshot at path (an empty one if the file does not exist)
// and puts entry in it, replacing an entry with the same id.
func mergeKey(path string, entry snapshot.Key) (s *snapshot.Snapshot, replaced bool, err error) {
	s, err = snapshot.LoadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		s, err = &snapshot.Snapshot{}, nil
	}
	if err != nil {
		return nil, false, err
	}
	for i := range s.Keys {
		if s.Keys[i].ID == entry.ID {
			s.Keys[i] = entry
			return s, true, nil
		}
	}
	s.Keys = append(s.Keys, entry)
	return s, false, nil
}

// writeNew creates path with mode 0600; it never overwrites, so a key file is
// never silently replaced.
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
