package server

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgw/llmgw/gateway/quota"
)

// providerHealth is a passive traffic summary per provider, fed by real
// traffic (no probes), for the management port's /health. Whether a provider
// is down is its circuit breaker's call (breaker_set.go), and only its.
type providerHealth struct {
	m sync.Map // provider name → *providerStats
}

type providerStats struct {
	lastOK, lastFail atomic.Int64 // unix nanos
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
		ps.ok.Add(1)
		return
	}
	ps.lastFail.Store(now.UnixNano())
	ps.fail.Add(1)
}

type providerHealthJSON struct {
	Name     string `json:"name"`
	Protocol string `json:"protocol"`
	Status   string `json:"status"` // up | down (its circuit breaker is not closed)
	// The management port's detail; the data port shows none of it.
	*providerDetailJSON
}

type healthJSON struct {
	Status     string               `json:"status"` // ok | degraded | unavailable
	Snapshot   snapshotHealthJSON   `json:"snapshot"`
	Providers  []providerHealthJSON `json:"providers"`
	UsageStore string               `json:"usage_store"`
	// QuotaStore: "local" (this replica's memory), "shared" (the quota
	// store), "degraded" (it is unreachable: counting locally, each limit
	// divided by the ready replicas) or "unavailable" (unreachable and
	// fail-closed: requests with limits are refused).
	QuotaStore string `json:"quota_store"`
	// The management port's detail of the shared store's state.
	QuotaStoreDetail *quotaStoreJSON `json:"quota_store_detail,omitempty"`
	Inflight         int64           `json:"inflight_requests"`
}

type quotaStoreJSON struct {
	Divisor     int       `json:"divisor"`
	Since       time.Time `json:"since"`
	LastError   string    `json:"last_error,omitempty"`
	Transitions int64     `json:"transitions"`
}

// quotaHealth fills the quota store's part of /health.
func (s *Server) quotaHealth(out *healthJSON, detail bool) {
	out.QuotaStore = "local"
	hs, ok := s.quota.(interface{ Health() quota.Health })
	if !ok {
		return
	}
	h := hs.Health()
	switch {
	case !h.Degraded:
		out.QuotaStore = "shared"
	case h.FailClosed:
		out.QuotaStore = "unavailable"
	default:
		out.QuotaStore = "degraded"
	}
	if h.Degraded && out.Status == "ok" {
		out.Status = "degraded"
	}
	if detail {
		out.QuotaStoreDetail = &quotaStoreJSON{Divisor: h.Divisor, Since: h.Since.UTC(), LastError: h.LastError, Transitions: h.Transitions}
	}
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
// status without URLs, credentials, key data or reload details; of each
// provider its name, protocol and whether it is up.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) { s.writeHealth(w, r, false) }

// ManagementHealthHandler is /health for the management port: the same
// report, with the reason a snapshot was rejected and each provider's
// traffic counters and circuit breaker.
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
		for i := range st.snap.Providers {
			ph := s.providerHealthOf(st, &st.snap.Providers[i], detail)
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
	s.quotaHealth(&out, detail)
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
