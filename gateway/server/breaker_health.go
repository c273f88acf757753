package server

import (
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
)

// providerDetailJSON is what the management port's /health adds to a
// provider's name, protocol and up/down.
type providerDetailJSON struct {
	Successes     int64              `json:"successes"`
	Failures      int64              `json:"failures"`
	LastSuccessAt *time.Time         `json:"last_success_at,omitempty"`
	LastFailureAt *time.Time         `json:"last_failure_at,omitempty"`
	Breaker       *breakerHealthJSON `json:"circuit_breaker,omitempty"`
	// CredentialError says why the provider is down without being called:
	// its credential cannot be read (it names the Secret or file).
	CredentialError string `json:"credential_error,omitempty"`
}

type breakerHealthJSON struct {
	State               string     `json:"state"` // closed | half_open | open
	ConsecutiveFailures int        `json:"consecutive_failures"`
	OpenedAt            *time.Time `json:"opened_at,omitempty"`  // the last time it opened
	OpenUntil           *time.Time `json:"open_until,omitempty"` // while open: when it will let a probe through
	ProbesInFlight      int        `json:"probes_in_flight,omitempty"`
	// The thresholds from the snapshot; FailureThreshold 0: the breaker is off.
	FailureThreshold int   `json:"failure_threshold"`
	CoolDownMs       int64 `json:"cool_down_ms"`
	HalfOpenProbes   int   `json:"half_open_probes"`
}

// providerHealthOf is one provider's /health entry. It is down exactly when
// its circuit breaker is open or half-open: the one notion of "down" the
// gateway has, and the one routing acts on. detail adds the management
// port's counters, times and breaker state.
//
// A provider whose credential cannot be read is down too: routing passes it
// over just the same.
func (s *Server) providerHealthOf(st *state, p *snapshot.Provider, detail bool) providerHealthJSON {
	ph := providerHealthJSON{Name: p.Name, Protocol: p.Protocol, Status: "up"}
	v, cfg, ok := s.breakers.view(p.Name)
	credErr, noCred := st.unavailable[p.Name]
	if ok && v.state != breakerClosed || noCred {
		ph.Status = "down"
	}
	if !detail {
		return ph
	}
	d := &providerDetailJSON{}
	if st, found := s.health.m.Load(p.Name); found {
		ps := st.(*providerStats)
		d.Successes, d.Failures = ps.ok.Load(), ps.fail.Load()
		d.LastSuccessAt, d.LastFailureAt = unixTime(ps.lastOK.Load()), unixTime(ps.lastFail.Load())
	}
	if ok {
		d.Breaker = &breakerHealthJSON{State: v.state.String(), ConsecutiveFailures: v.failures,
			OpenedAt: timeOrNil(v.openedAt), OpenUntil: timeOrNil(v.openUntil), ProbesInFlight: v.probes,
			FailureThreshold: cfg.failures, CoolDownMs: cfg.coolDown.Milliseconds(), HalfOpenProbes: cfg.probes}
	}
	d.CredentialError = credErr
	ph.providerDetailJSON = d
	return ph
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
