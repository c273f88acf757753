package keys

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// Main runs `llmgw keys <subcommand>`.
func Main(ctx context.Context, args []string) error {
	return runIO(ctx, args, os.Stdin, os.Stdout, os.Stderr)
}

const usageText = `Usage: llmgw keys <subcommand> [flags]

Subcommands:
  create   create a gateway key: prints the plaintext once, stores only its hash
  rotate   replace a key with a new one (printed once); the old one keeps working
           for a grace period, then is refused as rotated

Run 'llmgw keys <subcommand> --help' for its flags.
`

// run is runIO without a standard input (nothing to read on it).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runIO(ctx, args, strings.NewReader(""), stdout, stderr)
}

func runIO(_ context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return errors.New("missing subcommand")
	}
	switch args[0] {
	case "create":
		return runCreate(args[1:], stdout, stderr)
	case "rotate":
		return runRotate(args[1:], stdin, stdout, stderr)
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
  llmgw keys create --id team-a --tpm 100000 --budget 25 --budget-period day --group platform --into snapshot.json

Flags:
`

type createFlags struct {
	id, models, expires, output, namespace, entryOut, into, keyOut string
	budget, budgetPeriod, budgetCurrency, group                    string
	rpm, burst                                                     int
	tpm                                                            int64
	// given names the flags on the command line: some only apply together
	// with others, whatever their values.
	given map[string]bool
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
	set.Int64Var(&f.tpm, "tpm", 0, fmt.Sprintf("token limit: `N` input + output tokens per minute, at most %d; 0 means no limit", int64(snapshot.MaxTokensPerMinute)))
	set.StringVar(&f.budget, "budget", "", "budget: the `AMOUNT` the key's requests may cost per --budget-period, a decimal such as 25 or 0.125 (at most 6 fractional digits); unset means no budget")
	set.StringVar(&f.budgetPeriod, "budget-period", snapshot.PeriodMonth, "the budget's `PERIOD` (only with --budget): "+snapshot.PeriodDay+" or "+snapshot.PeriodMonth+", UTC calendar periods")
	set.StringVar(&f.budgetCurrency, "budget-currency", snapshot.DefaultCurrency, "the budget's ISO-4217 currency `CODE` (only with --budget); a snapshot, or a namespace, has one currency for all prices and budgets")
	set.StringVar(&f.group, "group", "", "the BudgetGroup `NAME` (in the GatewayKey's namespace, or a snapshot group) whose token limit and budget the key shares; a DNS-1123 subdomain")
	set.StringVar(&f.expires, "expires", "", "optional expiry, an `RFC3339` time such as 2027-01-01T00:00:00Z; must be in the future")
	set.StringVar(&f.output, "output", "json", "`format` of the --entry-out entry: json (the snapshot's key object) or yaml (a GatewayKey resource, apiVersion "+v1alpha1.GroupVersion.String()+")")
	set.StringVar(&f.namespace, "namespace", snapshot.DefaultNamespace, "metadata.namespace `NS` of the GatewayKey (only with --output yaml): the controller's namespace or one of its --watch-namespaces, so that the key is served (elsewhere the llmgw-watched-namespaces policy refuses it); outside the controller's namespace the key is named NS/ID in usage records")
	set.StringVar(&f.entryOut, "entry-out", "", "write the hash-only entry to `FILE` (mode 0644); - writes it to standard output (the key then goes to standard error or --key-out)")
	set.StringVar(&f.keyOut, "key-out", "", "write the plaintext key to `FILE` (mode 0600, must not exist) instead of printing it")
	set.StringVar(&f.into, "into", "", "merge the entry into the snapshot `FILE` (created if missing), replacing an entry with the same id; the file is re-encoded canonically with a new version")
	var err error
	if f.given, err = parseFlags(set, args); err != nil {
		return err
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
	case f.given["namespace"] && f.output != "yaml":
		return CreateOptions{}, errors.New("--namespace only applies to --output yaml")
	case f.output == "yaml" && f.entryOut == "":
		return CreateOptions{}, errors.New("--output yaml applies to --entry-out (a snapshot given to --into always gets the JSON entry)")
	case f.entryOut == "" && f.into == "":
		return CreateOptions{}, errors.New("say where the hash-only entry goes: --entry-out FILE (or -) and/or --into SNAPSHOT_FILE")
	}
	opts := CreateOptions{ID: f.id, RPM: f.rpm, Burst: f.burst, TokensPerMinute: f.tpm, Group: f.group}
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
	// Checked here as well as by Create so that each error names its flag.
	if f.tpm < 0 || f.tpm > snapshot.MaxTokensPerMinute {
		return CreateOptions{}, fmt.Errorf("--tpm must be within 0..%d (0: no token limit), got %d", int64(snapshot.MaxTokensPerMinute), f.tpm)
	}
	if f.group != "" {
		if err := validObjectName("--group", f.group, budgetGroupName); err != nil {
			return CreateOptions{}, err
		}
	}
	budget, err := f.budgetOption()
	if err != nil {
		return CreateOptions{}, err
	}
	opts.Budget = budget
	if f.expires != "" {
		t, err := time.Parse(time.RFC3339, f.expires)
		if err != nil {
			return CreateOptions{}, fmt.Errorf("--expires: want RFC 3339 such as 2027-01-01T00:00:00Z: %s", keyformat.Redact(err.Error()))
		}
		opts.ExpiresAt = &t
	}
	return opts, nil
}

// budgetOption is the budget the flags describe, nil without --budget. It
// checks each value as the snapshot does (Budget.Limit is money.ParseAmount,
// the CRD's pattern plus the range a budget can count), with errors that name
// the flag and quote a value only redacted, since it may be anything pasted.
func (f *createFlags) budgetOption() (*snapshot.Budget, error) {
	if !f.given["budget"] {
		for _, name := range []string{"budget-period", "budget-currency"} {
			if f.given[name] {
				return nil, fmt.Errorf("--%s only applies with --budget", name)
			}
		}
		return nil, nil
	}
	b := &snapshot.Budget{Amount: f.budget, Currency: f.budgetCurrency, Period: f.budgetPeriod}
	if _, err := b.Limit(); errors.Is(err, money.ErrOverflow) {
		return nil, fmt.Errorf("--budget %s is above the largest budget, %s: %w", b.Amount, money.MaxAmount, money.ErrOverflow)
	} else if err != nil {
		return nil, fmt.Errorf("--budget must be a decimal amount such as 25 or 0.125 (at most 9 integer and %d fractional digits, no sign), got %s",
			money.MaxFractionDigits, quoteRedacted(b.Amount))
	}
	if !money.ValidCurrency(b.Currency) {
		return nil, fmt.Errorf("--budget-currency must be an ISO-4217 code of three capital letters such as %s, got %s",
			snapshot.DefaultCurrency, quoteRedacted(b.Currency))
	}
	if b.Period != snapshot.PeriodDay && b.Period != snapshot.PeriodMonth {
		return nil, fmt.Errorf("--budget-period must be %s or %s, got %s", snapshot.PeriodDay, snapshot.PeriodMonth, quoteRedacted(b.Period))
	}
	return b, nil
}

// quoteRedacted quotes a flag's value for an error message, with any plaintext
// key in it redacted.
func quoteRedacted(s string) string { return strconv.Quote(keyformat.Redact(s)) }

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
		// Valid (a missing group fails closed), but most likely a typo or a
		// group still to be added: say so while the user is looking.
		if entry.Group != "" && !slices.ContainsFunc(merged.Groups, func(g snapshot.Group) bool { return g.Name == entry.Group }) {
			fmt.Fprintf(stderr, "llmgw keys: note: %s has no group %q; until it does, the gateway refuses the key's chat requests (403 budget_group_missing)\n", f.into, entry.Group)
		}
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

// parseFlags parses args into set and names the flags given on the command
// line (some apply only together with others, whatever their values);
// arguments that are not flags are refused, redacted (one may be a key).
func parseFlags(set *flag.FlagSet, args []string) (map[string]bool, error) {
	if err := set.Parse(args); err != nil {
		return nil, err
	}
	given := map[string]bool{}
	set.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	if set.NArg() > 0 {
		return nil, errors.New(keyformat.Redact(fmt.Sprintf("unexpected arguments: %q", set.Args())))
	}
	return given, nil
}
