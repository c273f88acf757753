// Command scale measures the control plane at scale on a real cluster (issue
// 10: 50,000 GatewayKeys and 1,000 ModelAliases), against the llmgw that
// `make deploy` installed:
//
//  1. creates -aliases ModelAliases and -keys GatewayKeys at a bounded rate
//     (-qps), each labelled llmgw.dev/scale=<-run> so that they are deleted
//     by label afterwards; keys are made as `llmgw keys create` makes them
//     (gateway/keys), their plaintext thrown away;
//
//  2. waits until the published snapshot holds them and every gateway runs
//     it, and records how long that took and how far the statuses got;
//
//  3. records memory: each container's working set and RSS from the kubelet's
//     summary API, and the gateways' own process_resident_memory_bytes and Go
//     heap from their /metrics;
//
//  4. -samples times: creates one more key (its plaintext kept), and measures
//     the time from the create call to the moment every gateway pod answers
//     that key (GET /v1/models is no longer 401), polling each pod through
//     its own kubectl port-forward every -poll; records the bytes one watcher
//     of the snapshot ConfigMaps received for the change (a raw watch with the
//     gateway's label selector, JSON as client-go sends it) and each gateway's
//     reload time from its "snapshot assembled" log line;
//
//  5. prints the report (and -out JSON), and deletes everything labelled with
//     the run unless -keep.
//
//     go run ./hack/scale -keys 50000 -aliases 1000 -samples 40 -out bin/scale.json
//     go run ./hack/scale -cleanup            # delete a run's objects only
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
)

type config struct {
	kubeconfig, kubectl, namespace, run string
	keys, aliases, samples              int
	qps                                 float64
	workers                             int
	provider, model                     string
	gatewaySelector, controllerSel      string
	poll, servedTimeout, converge       time.Duration
	statusTimeout                       time.Duration
	pause                               time.Duration
	keep, cleanup                       bool
	out                                 string
}

func main() {
	var c config
	flag.StringVar(&c.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig `file` (default $KUBECONFIG)")
	flag.StringVar(&c.kubectl, "kubectl", "hack/kind/kubectl.sh", "kubectl `command` for the port-forwards")
	flag.StringVar(&c.namespace, "namespace", snapshot.DefaultNamespace, "`namespace` the controller watches")
	flag.StringVar(&c.run, "run", "scale", "`value` of the llmgw.dev/scale label on every object this tool creates")
	flag.IntVar(&c.keys, "keys", 50_000, "GatewayKeys to create")
	flag.IntVar(&c.aliases, "aliases", 1_000, "ModelAliases to create")
	flag.IntVar(&c.samples, "samples", 40, "single-key applies to time")
	flag.Float64Var(&c.qps, "qps", 150, "creates and deletes per `second`")
	flag.IntVar(&c.workers, "workers", 16, "concurrent creates")
	flag.StringVar(&c.provider, "provider", "alpha", "ProviderEndpoint the aliases route to")
	flag.StringVar(&c.model, "model", "alpha-large", "model name the aliases ask for")
	flag.StringVar(&c.gatewaySelector, "gateway-selector", "app.kubernetes.io/name=llmgw,app.kubernetes.io/component=gateway", "label `selector` of the gateway pods")
	flag.StringVar(&c.controllerSel, "controller-selector", "app.kubernetes.io/name=llmgw,app.kubernetes.io/component=controller", "label `selector` of the controller pod")
	flag.DurationVar(&c.poll, "poll", 10*time.Millisecond, "how often each gateway is asked whether it serves a new key")
	flag.DurationVar(&c.servedTimeout, "served-timeout", 60*time.Second, "longest wait for one key to be served")
	flag.DurationVar(&c.converge, "converge-timeout", 30*time.Minute, "longest wait for the bulk to be published and served")
	flag.DurationVar(&c.statusTimeout, "status-timeout", time.Hour, "longest wait, after the bulk is served, for every status to be written before sampling (0: do not wait)")
	flag.DurationVar(&c.pause, "pause", 2*time.Second, "pause between samples (past the controller's debounce, so each is its own snapshot)")
	flag.BoolVar(&c.keep, "keep", false, "leave the created objects in place")
	flag.BoolVar(&c.cleanup, "cleanup", false, "only delete the objects of -run, then exit")
	flag.StringVar(&c.out, "out", "", "also write the report as JSON to this `file`")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config) (err error) {
	k, err := newKube(c)
	if err != nil {
		return err
	}
	if c.cleanup {
		return k.cleanup(context.WithoutCancel(ctx))
	}
	if !c.keep {
		defer func() {
			// Also after an interrupt: the kind cluster is shared.
			err = errors.Join(err, k.cleanup(context.WithoutCancel(ctx)))
		}()
	}
	rep := &report{Keys: c.keys, Aliases: c.aliases, Started: time.Now()}
	if err := bulk(ctx, k, c, rep); err != nil {
		return err
	}
	gws, err := k.forwardGateways(ctx)
	if err != nil {
		return err
	}
	defer gws.close()
	if err := converge(ctx, k, c, gws, rep); err != nil {
		return err
	}
	if rep.MemoryAtScale, err = k.memory(ctx, gws); err != nil {
		return err
	}
	if err := sample(ctx, k, c, gws, rep); err != nil {
		return err
	}
	if rep.MemoryAfterSamples, err = k.memory(ctx, gws); err != nil {
		return err
	}
	rep.print(os.Stdout)
	if c.out != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(c.out, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}
