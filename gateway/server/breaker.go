package server

import (
	"fmt"
	"sync"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
)

// The circuit breaker of one provider, as a small state machine that is told
// the time instead of reading it.
//
// Why not github.com/sony/gobreaker/v2, which the issue suggests: it reads
// time.Now itself, so the cool-down could follow neither the server's clock
// nor a test's fake one (its tests would have to sleep through real
// cool-downs); it does not tell when an open breaker will probe, which the
// management /health shows; and its state-change callback carries no reason,
// which every transition's log line names. Its rolling count windows, the
// part worth borrowing, are not needed for a consecutive-failures rule.

// breakerState is where a breaker stands. The values are those of the
// llmgw_provider_breaker_state gauge, ordered so that "> 0" means "not
// taking full traffic".
type breakerState uint8

const (
	breakerClosed   breakerState = iota // every request may call the provider
	breakerHalfOpen                     // only the probes may; the rest skip it
	breakerOpen                         // nobody may (an alias's last route excepted)
)

var breakerStateNames = [...]string{breakerClosed: "closed", breakerHalfOpen: "half_open", breakerOpen: "open"}

func (st breakerState) String() string { return breakerStateNames[st] }

// breakerSettings are one provider's thresholds, from the snapshot.
type breakerSettings struct {
	failures int           // blamed failures in a row that open it; 0: it never opens
	coolDown time.Duration // how long it stays open before probing
	probes   int           // requests let through half-open; all must succeed to close it
}

// breakerSettingsOf reads a provider's snapshot entry. Normalize has made
// everything explicit; the fallbacks only guard a snapshot built in code.
func breakerSettingsOf(cb snapshot.CircuitBreaker) breakerSettings {
	s := breakerSettings{failures: snapshot.DefaultConsecutiveFailures, coolDown: cb.CoolDown(), probes: cb.HalfOpenProbes}
	if cb.ConsecutiveFailures != nil {
		s.failures = *cb.ConsecutiveFailures
	}
	if s.coolDown <= 0 {
		s.coolDown = ms(snapshot.DefaultCoolDownMs)
	}
	if s.probes < 1 {
		s.probes = snapshot.DefaultHalfOpenProbes
	}
	return s
}

// verdict is what one admitted call says about its provider.
type verdict uint8

const (
	verdictNone    verdict = iota // nothing: the request's own fault, or the client went away
	verdictSuccess                // an answer, or a stream that relayed content
	verdictFailure                // a failure the gateway blames on the provider
)

// transition is one change of state, with the reason its log line gives.
type transition struct {
	from, to breakerState
	reason   string
}

// breaker is the state machine. Its methods take the time from the caller so
// that the cool-down runs on whatever clock the caller has.
type breaker struct {
	cfg breakerSettings

	mu        sync.Mutex
	state     breakerState
	gen       uint64    // bumped by every transition: a late verdict of an earlier state counts for nothing
	failures  int       // blamed failures in a row (informational once open)
	openedAt  time.Time // when it last opened
	openUntil time.Time // open: when the first probe may go
	probes    int       // half-open: probes let through and not yet released
	probesOK  int       // half-open: probes that succeeded
}

// pass is one call a breaker let through.
type pass struct {
	gen   uint64
	probe bool
}

// advance is the only transition time makes: open → half-open once the
// cool-down has passed. The caller holds mu.
func (b *breaker) advance(now time.Time) *transition {
	if b.state != breakerOpen || now.Before(b.openUntil) {
		return nil
	}
	return b.move(breakerHalfOpen, fmt.Sprintf("cool-down of %s passed", b.cfg.coolDown))
}

// move changes state and starts a new generation. The caller holds mu.
func (b *breaker) move(to breakerState, reason string) *transition {
	tr := &transition{from: b.state, to: to, reason: reason}
	b.state = to
	b.gen++
	b.probes, b.probesOK = 0, 0
	return tr
}

// allow says whether a call may go to the provider now. Half-open, only the
// configured number of probes get through; everything else is refused, as
// when open.
func (b *breaker) allow(now time.Time) (p pass, ok bool, tr *transition) {
	b.mu.Lock()
	defer b.mu.Unlock()
	tr = b.advance(now)
	switch b.state {
	case breakerClosed:
		return pass{gen: b.gen}, true, tr
	case breakerHalfOpen:
		if b.probes < b.cfg.probes {
			b.probes++
			return pass{gen: b.gen, probe: true}, true, tr
		}
	}
	return pass{}, false, tr
}

// report takes an admitted call's verdict; cause names a failure for the
// log. Closed, cfg.failures blamed failures in a row open it (a success
// resets the count, verdictNone leaves it alone). Half-open, a failed probe
// opens it again, a probe without verdict frees its place for another, and
// when every probe has succeeded it closes.
func (b *breaker) report(p pass, v verdict, cause string, now time.Time) *transition {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p.gen != b.gen {
		return nil
	}
	switch v {
	case verdictSuccess:
		b.failures = 0
	case verdictFailure:
		b.failures++
	}
	switch b.state {
	case breakerClosed:
		if v == verdictFailure && b.cfg.failures > 0 && b.failures >= b.cfg.failures {
			return b.open(now, fmt.Sprintf("%d consecutive failures, the last: %s", b.failures, cause))
		}
	case breakerHalfOpen:
		switch v {
		case verdictFailure:
			return b.open(now, "probe failed: "+cause)
		case verdictNone:
			b.probes--
		case verdictSuccess:
			if b.probesOK++; b.probesOK >= b.cfg.probes {
				return b.move(breakerClosed, fmt.Sprintf("%d of %d probes succeeded", b.probesOK, b.cfg.probes))
			}
		}
	}
	return nil
}

func (b *breaker) open(now time.Time, reason string) *transition {
	tr := b.move(breakerOpen, reason)
	b.openedAt, b.openUntil = now, now.Add(b.cfg.coolDown)
	return tr
}

// breakerView is a breaker as /health shows it.
type breakerView struct {
	state     breakerState
	failures  int
	openedAt  time.Time // zero: never opened
	openUntil time.Time // only while open
	probes    int       // half-open: probes in flight
}

// view reads the breaker at now, taking the time-driven transition first so
// that a read never shows a cool-down that has passed.
func (b *breaker) view(now time.Time) (breakerView, *transition) {
	b.mu.Lock()
	defer b.mu.Unlock()
	tr := b.advance(now)
	v := breakerView{state: b.state, failures: b.failures, openedAt: b.openedAt, probes: b.probes - b.probesOK}
	if b.state == breakerOpen {
		v.openUntil = b.openUntil
	}
	return v, tr
}
