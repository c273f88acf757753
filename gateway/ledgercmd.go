package gateway

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/llmgw/llmgw/gateway/peers"
	"github.com/llmgw/llmgw/gateway/source"
	"github.com/llmgw/llmgw/gateway/usage"
)

// LedgerMain is `llmgw ledger <subcommand>`: tools for a usage ledger file
// no gateway serves, such as the volume of a replica that was scaled away
// without handing its records off.
func LedgerMain(ctx context.Context, args []string) error {
	return ledgerRun(ctx, args, os.Stdout, os.Stderr)
}

const ledgerUsage = `Usage: llmgw ledger <subcommand> [flags]

Subcommands:
  import   hand every usage record of a ledger file (a scaled-away replica's
           volume) to a running gateway, each exactly once; safe to run again

Run 'llmgw ledger <subcommand> --help' for its flags.
`

func ledgerRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, ledgerUsage)
		return errors.New("missing subcommand")
	}
	switch args[0] {
	case "import":
		return ledgerImport(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stderr, ledgerUsage)
		return flag.ErrHelp
	}
	fmt.Fprint(stderr, ledgerUsage)
	return fmt.Errorf("unknown subcommand %q", args[0])
}

const ledgerImportHelp = `Usage: llmgw ledger import --db PATH --to URL --peer-token-file FILE [flags]

Hands every record of the usage ledger at PATH to the running gateway at URL
(its management port, e.g. http://llmgw-gateway-0.llmgw-gateway-peers:9090),
the way a replica leaving a scale-down does: in batches, each deleted here
only once the gateway has committed it, so the records become that gateway's
own (listed, summed, counted against budgets, pruned by its retention) and
none is counted twice, however often this is interrupted and run again. Run
it where no gateway has the file open (a Job mounting the volume). Records a
crashed gateway left unfinished are closed as interrupted first.

A hand-off interrupted after a batch reached its gateway is finished with
that same gateway only: run again with the same --to.

With --claim, the volume claim the file is on is then annotated as handed
off (llmgw.dev/ledger-handed-off-to), so the gateways stop naming it as a
stranded ledger; this needs credentials that may patch claims (in a Job:
the gateways' ServiceAccount).

Flags:
`

// ledgerImport is `llmgw ledger import`.
func ledgerImport(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("ledger import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", "", "the ledger file to hand off (required; it must exist)")
	to := fs.String("to", "", "the receiving gateway's management base URL (required)")
	tokenFile := fs.String("peer-token-file", "", "file holding the gateways' peer token (required)")
	batch := fs.Int("batch", peers.DefaultHandoffBatch, "records a request")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long (what was acknowledged stays moved; run again to finish)")
	level := fs.String("log-level", "info", "log level: debug, info, warn or error")
	claim := fs.String("claim", "", "after the import, annotate this PersistentVolumeClaim (the volume of --db) as handed off; empty: no annotation")
	namespace := fs.String("namespace", envOr("POD_NAMESPACE", "llmgw-system"), "with --claim: the claim's namespace")
	statefulSet := fs.String("statefulset", "llmgw-gateway", "with --claim: the gateway StatefulSet the claim belongs to")
	template := fs.String("ledger-claim-template", "data", "with --claim: the StatefulSet's volumeClaimTemplate")
	kubeconfig := fs.String("kubeconfig", "", "with --claim: kubeconfig path (default $KUBECONFIG, ~/.kube/config, then in-cluster)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), ledgerImportHelp)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	case *db == "":
		return errors.New("--db is required")
	case *to == "":
		return errors.New("--to is required")
	case *tokenFile == "":
		return errors.New("--peer-token-file is required")
	case *batch < 1:
		return errors.New("--batch must be at least 1")
	case *timeout <= 0:
		return errors.New("--timeout must be positive")
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	base, err := peers.ReceiverBase(*to)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	token, err := readPeerToken(*tokenFile)
	if err != nil {
		return err
	}
	var d *peers.Discovery
	if *claim != "" {
		client, err := source.NewClient(*kubeconfig)
		if err != nil {
			return fmt.Errorf("--claim: %w", err)
		}
		if d, err = peers.NewDiscovery(peers.DiscoveryConfig{Client: client, Namespace: *namespace,
			StatefulSet: *statefulSet, ClaimTemplate: *template, Logger: log}); err != nil {
			return fmt.Errorf("--claim: %w", err)
		}
		if _, err := peers.ClaimOrdinal(*template, *statefulSet, *claim); err != nil {
			return fmt.Errorf("--claim: %w", err)
		}
	}
	// usage.Open would create a missing file: a mistyped path must not
	// "succeed" with an empty ledger.
	if fi, err := os.Stat(*db); err != nil {
		return fmt.Errorf("--db: %w", err)
	} else if !fi.Mode().IsRegular() {
		return fmt.Errorf("--db %s is not a file", *db)
	}

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	l, err := usage.Open(ctx, *db, usage.Options{Logger: log})
	if errors.Is(err, usage.ErrLocked) {
		return fmt.Errorf("open %s: %w (a gateway still has it open?)", *db, err)
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", *db, err)
	}
	defer func() {
		if cerr := l.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close %s: %w", *db, cerr)
		}
	}()
	if prev, ok, err := l.Handoff(ctx); err == nil && ok && prev == base {
		fmt.Fprintf(stdout, "ledger import: resuming the interrupted hand-off of %s to %s\n", *db, base)
	}
	st, err := peers.HandOff(ctx, l, peers.HandoffConfig{To: base, Token: token, Batch: *batch, Logger: log})
	if err != nil {
		return fmt.Errorf("hand %s to %s (%d records moved): %w", *db, base, st.Sent, err)
	}
	fmt.Fprintf(stdout, "ledger import: %s to %s: %d records sent, %d added, %d already present (%d batches)\n",
		*db, base, st.Sent, st.Added, st.Present(), st.Batches)
	if d != nil {
		if err := d.MarkHandedOff(ctx, *claim, base, st.Sent); err != nil {
			return fmt.Errorf("records imported, but the claim %s could not be marked handed off: %w", *claim, err)
		}
		fmt.Fprintf(stdout, "ledger import: claim %s marked handed off to %s\n", *claim, base)
	}
	return nil
}

// readPeerToken reads the peers' token from file, without surrounding
// white space; an empty file is an error.
func readPeerToken(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--peer-token-file: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("--peer-token-file %s is empty", file)
	}
	return token, nil
}
