package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/llmgw/gateway/peers"
)

// Elastic is how a replica of the gateway StatefulSet takes part in
// scaling: it learns the replica set from the cluster (Discovery), and a
// replica scaled away hands its usage records to ordinal 0 before it exits,
// so `kubectl scale` and an autoscaler neither hide nor strand a record.
type Elastic struct {
	Discovery *peers.Discovery
	Self      string // this pod: <statefulset>-<ordinal>
	Service   string // the headless Service the replicas reach each other through
	Port      int    // the replicas' management port
	Token     string // the peers' token
	// Claim is this pod's ledger volume claim (<template>-<pod>), annotated
	// once its records are handed off so that nobody reports it stranded.
	Claim string
	// Timeout bounds the hand-off after the drain; the pod's termination
	// grace period must cover the drain and this.
	Timeout time.Duration
	Client  *http.Client
}

// receiver is the replica that takes the records of those scaled away:
// ordinal 0, the one a scale-down keeps while any is kept. Always the same
// one, so a hand-off replayed after a crash goes where its first batches
// went (a ledger split across two receivers could count a batch twice).
func (e *Elastic) receiver() string {
	set := e.Self[:strings.LastIndexByte(e.Self, '-')+1]
	return "http://" + set + "0." + e.Service + ":" + strconv.Itoa(e.Port)
}

// leaving reports whether this replica is being scaled away: its ordinal is
// at or above the StatefulSet's replicas, read live (the watch may lag the
// scale that sent the SIGTERM). A rolling restart or an eviction keeps the
// ordinal, and the volume comes back with the pod: no hand-off then.
func (e *Elastic) leaving(ctx context.Context) (bool, int, error) {
	ord, err := peers.Ordinal(e.Self)
	if err != nil {
		return false, 0, err
	}
	n, err := e.Discovery.Replicas(ctx)
	if err != nil {
		return false, 0, fmt.Errorf("reading the StatefulSet's replicas: %w", err)
	}
	return ord >= n, n, nil
}

// handOff moves every final record of the ledger to the receiver and, when
// none is left, marks the claim handed off. Records it cannot move stay on
// the volume, which the other replicas then name as stranded until the
// ordinal comes back or `llmgw ledger import` takes them.
func (g *Gateway) handOff(ctx context.Context, why string) error {
	e := g.cfg.Elastic
	to := e.receiver()
	start := time.Now()
	st, err := peers.HandOff(ctx, g.Ledger, peers.HandoffConfig{To: to, Token: e.Token, Client: e.Client, Logger: g.log})
	if err != nil {
		return fmt.Errorf("handing %d records off to %s (%s): %w", st.Sent, to, why, err)
	}
	left, _, err := g.Ledger.Count(ctx)
	if err != nil {
		return fmt.Errorf("counting the records left after the hand-off: %w", err)
	}
	if left > 0 {
		return fmt.Errorf("%d records still in progress after the hand-off to %s: the volume keeps them", left, to)
	}
	if err := e.Discovery.MarkHandedOff(ctx, e.Claim, to, st.Sent); err != nil {
		return fmt.Errorf("records handed off, but the claim could not be marked (it reads as stranded): %w", err)
	}
	g.log.Info("usage records handed off", "to", to, "why", why, "records", st.Sent, "added", st.Added,
		"took", time.Since(start).Round(time.Millisecond).String())
	return nil
}

// handOffIfLeaving runs after the drain: a replica scaled away hands its
// records off within its budget; any other keeps them on its volume.
func (g *Gateway) handOffIfLeaving() {
	e := g.cfg.Elastic
	if e == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.Timeout)
	defer cancel()
	leaving, replicas, err := e.leaving(ctx)
	switch {
	case err != nil:
		g.log.Error("cannot tell whether this replica is scaled away; its records stay on its volume", "err", err)
		return
	case !leaving:
		return
	case replicas == 0:
		g.log.Warn("scaled to zero: no replica to hand the usage records to; they stay on the volume until one comes back", "claim", e.Claim)
		return
	}
	g.waitIdle(ctx)
	if err := g.handOff(ctx, "scaled away"); err != nil {
		g.log.Error("usage hand-off incomplete", "claim", e.Claim, "err", err)
	}
}

// waitIdle waits, within ctx, for the handlers that the drain cut off to
// finish their records.
func (g *Gateway) waitIdle(ctx context.Context) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for g.Server.Inflight() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// resumeHandoff finishes a hand-off that a crash interrupted (the ledger's
// marker says so) before this replica serves its records again: until it is
// done, siblings get 503 from this replica's peer endpoint (they report it
// missing) rather than records that the receiver may already count. Then
// the claim's hand-off mark goes: this replica holds records again.
func (g *Gateway) resumeHandoff(ctx context.Context) {
	e := g.cfg.Elastic
	if e == nil {
		return
	}
	to, pending, err := g.Ledger.Handoff(ctx)
	if err != nil {
		g.log.Error("reading the ledger's hand-off marker", "err", err)
	}
	if pending {
		g.handingOff.Store(true)
		g.log.Warn("finishing a usage hand-off that a previous run left half-way", "to", to)
		go g.retryHandoff(ctx)
		return
	}
	if err := e.Discovery.ClearHandedOff(ctx, e.Claim); err != nil {
		g.log.Warn("could not clear the claim's hand-off mark; it reads as handed off if this replica is killed while scaled away", "claim", e.Claim, "err", err)
	}
}

// retryHandoff replays the interrupted hand-off until it succeeds or ctx
// ends.
func (g *Gateway) retryHandoff(ctx context.Context) {
	for {
		hctx, cancel := context.WithTimeout(ctx, g.cfg.Elastic.Timeout)
		err := g.handOff(hctx, "resumed after a crash")
		cancel()
		if err == nil {
			g.handingOff.Store(false)
			if err := g.cfg.Elastic.Discovery.ClearHandedOff(ctx, g.cfg.Elastic.Claim); err != nil {
				g.log.Warn("could not clear the claim's hand-off mark", "err", err)
			}
			return
		}
		g.log.Error("usage hand-off replay failed; retrying", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Second):
		}
	}
}

// unlessHandingOff answers 503 to siblings while a replayed hand-off runs.
func (g *Gateway) unlessHandingOff(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.handingOff.Load() {
			http.Error(w, "handing records off", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	})
}
