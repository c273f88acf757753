package server

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
)

// breakerSet holds the gateway process's circuit breakers, one per provider
// name. They live outside the config state, so a reload keeps them; a reload
// that gives a provider another protocol, base URL or breaker settings starts
// it a fresh, closed breaker, since the old record says nothing about the
// new endpoint or was judged by other rules.
type breakerSet struct {
	byName  atomic.Pointer[map[string]*providerBreaker] // replaced whole by sync, read without locks
	syncMu  sync.Mutex
	clock   atomic.Pointer[func() time.Time]
	log     *slog.Logger
	metrics *Metrics
}

// providerBreaker is a breaker and what decides whether a reload keeps it.
type providerBreaker struct {
	name  string
	ident string // protocol and base URL
	breaker
}

func (bs *breakerSet) init(log *slog.Logger, m *Metrics, now func() time.Time) {
	bs.log, bs.metrics = log, m
	bs.setClock(now)
}

// setClock replaces the clock; tests drive cool-downs with a fake one.
func (bs *breakerSet) setClock(now func() time.Time) { bs.clock.Store(&now) }

func (bs *breakerSet) now() time.Time { return (*bs.clock.Load())() }

func (bs *breakerSet) get(name string) *providerBreaker {
	if m := bs.byName.Load(); m != nil {
		return (*m)[name]
	}
	return nil
}

// sync makes the set match a snapshot's providers, before the snapshot is
// published, so that no request of the new state finds a provider without
// its breaker.
func (bs *breakerSet) sync(providers []snapshot.Provider) {
	bs.syncMu.Lock()
	defer bs.syncMu.Unlock()
	old := map[string]*providerBreaker{}
	if m := bs.byName.Load(); m != nil {
		old = *m
	}
	next := make(map[string]*providerBreaker, len(providers))
	var replaced []*providerBreaker
	for i := range providers {
		p := &providers[i]
		ident, cfg := p.Protocol+" "+p.BaseURL, breakerSettingsOf(p.CircuitBreaker)
		if pb := old[p.Name]; pb != nil && pb.ident == ident && pb.cfg == cfg {
			next[p.Name] = pb
			continue
		}
		next[p.Name] = &providerBreaker{name: p.Name, ident: ident, breaker: breaker{cfg: cfg}}
		if pb := old[p.Name]; pb != nil {
			replaced = append(replaced, pb)
		}
		bs.metrics.breakerState.WithLabelValues(p.Name).Set(float64(breakerClosed))
	}
	for name := range old {
		if next[name] == nil {
			bs.metrics.breakerState.DeleteLabelValues(name)
		}
	}
	bs.byName.Store(&next)
	for _, pb := range replaced {
		if v, _ := pb.view(bs.now()); v.state != breakerClosed {
			bs.logTransition(pb.name, transition{from: v.state, to: breakerClosed,
				reason: "reset: the provider's protocol, base URL or circuit breaker settings changed"})
		}
	}
}

// ticket is one call a breaker admitted; its verdict counts once. A nil
// ticket (no breaker, or the last route called although its breaker refused)
// counts for nothing.
type ticket struct {
	bs   *breakerSet
	pb   *providerBreaker
	pass pass
	done bool
}

// admit asks the provider's breaker for a call. skip is true when the route
// must be passed over; an alias's last route (last) never is, whatever its
// breaker says, so that a request always reaches a provider.
func (bs *breakerSet) admit(provider string, last bool) (t *ticket, skip bool) {
	pb := bs.get(provider)
	if pb == nil {
		return nil, false
	}
	p, ok, tr := pb.allow(bs.now())
	bs.emit(pb, tr)
	switch {
	case ok:
		return &ticket{bs: bs, pb: pb, pass: p}, false
	case last:
		return nil, false
	}
	bs.metrics.breakerSkips.WithLabelValues(provider).Inc()
	return nil, true
}

// report gives the call's verdict to its breaker, once: a stream reports its
// success at the commit point, and the route loop's later report of the same
// call is then ignored.
func (t *ticket) report(v verdict, cause string) {
	if t == nil || t.done {
		return
	}
	t.done = true
	t.bs.emit(t.pb, t.pb.report(t.pass, v, cause, t.bs.now()))
}

// view reads a provider's breaker for /health.
func (bs *breakerSet) view(name string) (breakerView, breakerSettings, bool) {
	pb := bs.get(name)
	if pb == nil {
		return breakerView{}, breakerSettings{}, false
	}
	v, tr := pb.view(bs.now())
	bs.emit(pb, tr)
	return v, pb.cfg, true
}

// emit logs and counts a transition, unless a reload has replaced the
// breaker since (a call of the old state reporting late): the metrics and
// the log speak of the provider's current breaker only.
func (bs *breakerSet) emit(pb *providerBreaker, tr *transition) {
	if tr == nil || bs.get(pb.name) != pb {
		return
	}
	bs.logTransition(pb.name, *tr)
}

func (bs *breakerSet) logTransition(name string, tr transition) {
	level := slog.LevelInfo
	if tr.to == breakerOpen {
		level = slog.LevelWarn
	}
	bs.log.Log(context.Background(), level, "provider circuit breaker "+tr.to.String(),
		"provider", name, "from", tr.from.String(), "to", tr.to.String(), "reason", tr.reason)
	bs.metrics.breakerState.WithLabelValues(name).Set(float64(tr.to))
	bs.metrics.breakerTransitions.WithLabelValues(name, tr.from.String(), tr.to.String()).Inc()
}

// ticketKey carries a stream attempt's ticket to its commit point.
type ticketKey struct{}

func withTicket(ctx context.Context, t *ticket) context.Context {
	return context.WithValue(ctx, ticketKey{}, t)
}

// streamCommitted counts a stream attempt as a success at its commit point,
// when its first content has reached the client: a long stream holds no
// half-open probe place until it ends, and whatever cuts it later is the
// stream's own failure, which no other route could have helped with.
func streamCommitted(ctx context.Context) {
	if t, _ := ctx.Value(ticketKey{}).(*ticket); t != nil {
		t.report(verdictSuccess, "")
	}
}

// breakerVerdict is what an attempt says about its provider: an answer, or a
// stream that relayed content, is a success; a failure counts against the
// provider when the failure table blames it (never the caller's 400 or a
// client that went away).
func breakerVerdict(f *failure) verdict {
	switch {
	case f == nil || f.sent:
		return verdictSuccess
	case failures[f.kind].blame:
		return verdictFailure
	}
	return verdictNone
}
