// Command llmgw is the one binary of the project: every component is a subcommand.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/llmgw/llmgw/controllers"
	"github.com/llmgw/llmgw/gateway"
	"github.com/llmgw/llmgw/gateway/keys"
	"github.com/llmgw/llmgw/gateway/localstack"
	"github.com/llmgw/llmgw/mockproviders"
)

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string) error
}

// commands is the whole CLI surface; each component owns its flag parsing.
var commands = []command{
	{"gateway", "run the gateway data plane from a snapshot file (standalone) or the controller's ConfigMap (--kubernetes)", gateway.Main},
	{"up", "start the local stack: both mock providers and the gateway on loopback", localstack.UpMain},
	{"keys", "create and rotate gateway keys (prints the plaintext once, stores only the hash)", keys.Main},
	{"ledger", "import a stranded usage ledger into a running gateway (records handed off by request id)", gateway.LedgerMain},
	{"controller", "run the Kubernetes controller: compile llmgw.dev resources into the snapshot ConfigMap", controllers.Main},
	{"mockprovider", "run a mock model provider (alpha: OpenAI protocol, beta: Anthropic-Messages style)", mockproviders.Main},
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "llmgw: an OpenAI-compatible LLM gateway for Kubernetes.")
	fmt.Fprintln(w, "\nUsage: llmgw <command> [flags]   (llmgw <command> --help for its flags)")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-13s %s\n", c.name, c.summary)
	}
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		usage(os.Stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(os.Stdout)
		return 0
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		// SIGTERM and Ctrl-C cancel the context so every component can shut down gracefully.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		err := c.run(ctx, args[1:])
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		default:
			fmt.Fprintf(os.Stderr, "llmgw %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(os.Stderr, "llmgw: unknown command %q\n\n", args[0])
	usage(os.Stderr)
	return 2
}
