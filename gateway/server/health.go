package server

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// providerHealth is a passive availability summary per provider, fed by real
// traffic (no probes): enough for /health to say which upstream is failing.
type providerHealth struct {
	m sync.Map // provider name → *providerStats
}

type providerStats struct {
	lastOK, lastFail atomic.Int64 // unix nanos
	consecutiveFails atomic.Int64
	ok, fail         atomic.Int64
}

func (h *providerHealth) observe(name string, ok bool, now time.Time) {
	v, found := h.m.Load(name)
	if !found {
		v, _ = h.m.LoadOrStore(name, &providerStats{})
	}
	ps := v.(*providerStats)
	if ok {
		ps.lastOK.Store(now.UnixNano())
		ps.consecutiveFails.Store(0)
		ps.ok.Add(1)
		return
	}
	ps.lastFail.Store(now.UnixNano())
	ps.consecutiveFails.Add(1)
	ps.fail.Add(1)
}

// consecutiveFailsDown is how many failures in a row mark a provider "down".
const consecutiveFailsDown = 5

type providerHealthJSON struct {
	Name             string     `json:"name"`
	Protocol         string     `json:"protocol"`
	Status           string     `json:"status"` // unknown | ok | degraded | down
	Successes        int64      `json:"successes"`
	Failures         int64      `json:"failures"`
	ConsecutiveFails int64      `json:"consecutive_failures"`
	LastSuccessAt    *time.Time `json:"last_success_at,omitempty"`
	LastFailureAt    *time.Time `json:"last_failure_at,omitempty"`
}

type healthJSON struct {
	Status     string               `json:"status"` // ok | degraded | unavailable
	Snapshot   snapshotHealthJSON   `json:"snapshot"`
	Providers  []providerHealthJSON `json:"providers"`
	UsageStore string               `json:"usage_store"`
	Inflight   int64                `json:"inflight_requests"`
}

type snapshotHealthJSON struct {
	Loaded          bool       `json:"loaded"`
	Version         string     `json:"version,omitempty"`
	LoadedAt        *time.Time `json:"loaded_at,omitempty"`
	LastReloadError string     `json:"last_reload_error,omitempty"`
	LastReloadAt    *time.Time `json:"last_reload_at,omitempty"`
}

// reloadRejected is what the data port says of a rejected snapshot: the
// error itself names files, Secrets and config values that callers without a
// key have no business seeing.
const reloadRejected = "the newest snapshot was rejected and the previous one is running; the reason is in the gateway's log and on its management port (GET /health)"

// handleHealth is the data port's /health: no key needed, so it reports
// status without URLs, credentials, key data or reload details: names,
// protocols, counters and times only.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) { s.writeHealth(w, r, false) }

// ManagementHealthHandler is /health for the management port: the same
// report, with the reason a snapshot was rejected.
func (s *Server) ManagementHealthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.writeHealth(w, r, true) })
}

func (s *Server) writeHealth(w http.ResponseWriter, r *http.Request, detail bool) {
	out := healthJSON{Status: "ok", Providers: []providerHealthJSON{}, UsageStore: "ok", Inflight: s.inflight.Load()}
	st := s.state.Load()
	s.reloadMu.Lock()
	if s.lastReloadErr != "" {
		out.Snapshot.LastReloadError = reloadRejected
		if detail {
			out.Snapshot.LastReloadError = s.lastReloadErr
		}
		out.Status = "degraded"
	}
	if !s.lastReloadAt.IsZero() {
		t := s.lastReloadAt
		out.Snapshot.LastReloadAt = &t
	}
	s.reloadMu.Unlock()
	if st == nil {
		out.Status = "unavailable"
	} else {
		t := st.loadedAt
		out.Snapshot.Loaded, out.Snapshot.Version, out.Snapshot.LoadedAt = true, st.snap.Version, &t
		for _, p := range st.snap.Providers {
			ph := providerHealthJSON{Name: p.Name, Protocol: p.Protocol, Status: "unknown"}
			if v, ok := s.health.m.Load(p.Name); ok {
				ps := v.(*providerStats)
				ph.Successes, ph.Failures, ph.ConsecutiveFails = ps.ok.Load(), ps.fail.Load(), ps.consecutiveFails.Load()
				ph.LastSuccessAt, ph.LastFailureAt = unixTime(ps.lastOK.Load()), unixTime(ps.lastFail.Load())
				switch {
				case ph.ConsecutiveFails >= consecutiveFailsDown:
					ph.Status = "down"
				case ph.ConsecutiveFails > 0:
					ph.Status = "degraded"
				case ph.Successes > 0:
					ph.Status = "ok"
				}
			}
			if ph.Status == "down" && out.Status == "ok" {
				out.Status = "degraded"
			}
			out.Providers = append(out.Providers, ph)
		}
		sort.Slice(out.Providers, func(i, j int) bool { return out.Providers[i].Name < out.Providers[j].Name })
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	// The ping's own commit updates Writable, so a freed disk shows at once.
	if err := s.ledger.Ping(ctx); err != nil || s.ledger.Writable() != nil {
		out.UsageStore = "unavailable"
		if s.ledgerFailOpen() {
			// Serving on, without records: worth an alert, not an outage.
			if out.Status != "unavailable" {
				out.Status = "degraded"
			}
		} else {
			out.Status = "unavailable"
		}
	}
	code := http.StatusOK
	if out.Status == "unavailable" {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, out)
}

func unixTime(ns int64) *time.Time {
	if ns == 0 {
		return nil
	}
	t := time.Unix(0, ns).UTC()
	return &t
}

func (s *Server) handleLive(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// handleReady is ready once a snapshot is loaded and the ledger can write:
// without either, the gateway could not keep its exactly-one-record promise
// (chat requests get 503), so Kubernetes should route around the pod. The
// ping is a real write through the ledger's writer; its success clears a
// failure the ledger saw before. With --ledger-fail-open the ledger does not
// count: the operator chose to serve without records.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if s.state.Load() == nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("no snapshot loaded\n"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.ledger.Ping(ctx); (err != nil || s.ledger.Writable() != nil) && !s.ledgerFailOpen() {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("usage store not writable\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encoding failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}
