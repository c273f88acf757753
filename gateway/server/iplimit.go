package server

import (
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/ratelimit"
)

// abuseLimits are the process-wide limits that protect the data plane from
// callers without a (valid) key and from read-endpoint scraping. They come
// from flags, not from the snapshot.
type abuseLimits struct {
	ip        *ratelimit.ClientLimiter // nil: no per-client-IP limit
	trusted   []netip.Prefix
	readRPM   int // the read bucket's floor; ≤ 0: the key's own chat rate limit alone
	readBurst int
}

func (s *Server) setAbuseLimits(o Options) {
	trusted := make([]netip.Prefix, 0, len(o.TrustedProxies))
	for _, p := range o.TrustedProxies {
		trusted = append(trusted, p.Masked())
	}
	s.abuse.Store(&abuseLimits{
		ip:      ratelimit.NewClientLimiter(o.ClientIPRPM, o.ClientIPBurst, o.ClientIPMaxClients),
		trusted: trusted, readRPM: o.ReadRPM, readBurst: o.ReadBurst,
	})
}

// checkClientIP refuses a caller whose address bucket is empty. It runs
// before authentication on every /v1 endpoint, so a flood without a valid
// key is refused before it costs a key lookup or more than its one record.
// Only requests that fail authentication take from the bucket
// (chargeClientIP): a valid key is limited by its own limits, its group's
// and the gateway's concurrency cap, however many requests one address
// (a load generator, an ingress controller) sends with it.
func (s *Server) checkClientIP(r *http.Request) *apiError {
	a := s.abuse.Load()
	if a == nil || a.ip == nil {
		return nil
	}
	if d := a.ip.Peek(clientIP(r, a.trusted), s.now()); !d.Allowed {
		return &apiError{status: http.StatusTooManyRequests, typ: typeRateLimit, code: "client_ip_rate_limited",
			message: "too many requests from this client address; retry after the indicated delay", retryAfter: d.RetryAfter}
	}
	return nil
}

// chargeClientIP takes a token from the caller's address bucket for a
// request that failed authentication.
func (s *Server) chargeClientIP(r *http.Request) {
	if a := s.abuse.Load(); a != nil && a.ip != nil {
		a.ip.Allow(clientIP(r, a.trusted), s.now())
	}
}

// checkRead takes a token from the key's bucket for GET /v1/usage and
// GET /v1/models, separate from its chat bucket and as large as the larger of
// the key's own rate limit (the operator sized it per key) and the
// process-wide --read-rpm/--read-burst floor, so that a key with a tiny chat
// budget can still page through its usage.
func (s *Server) checkRead(k *snapshot.Key) *apiError {
	rpm, burst := k.RateLimit.RPM, k.RateLimit.Burst
	if a := s.abuse.Load(); a != nil {
		rpm, burst = max(rpm, a.readRPM), max(burst, a.readBurst)
	}
	if d := s.readLimiter.Allow(k.ID, rpm, burst, s.now()); !d.Allowed {
		return &apiError{status: http.StatusTooManyRequests, typ: typeRateLimit, code: "read_rate_limit_exceeded",
			message:    "this key's rate limit for /v1/usage and /v1/models is exhausted; retry after the indicated delay",
			retryAfter: d.RetryAfter}
	}
	return nil
}

// clientIP is the address a request is counted against: the TCP peer, or,
// when the peer is a trusted proxy, the right-most X-Forwarded-For address
// that is not itself a trusted proxy. Everything left of that address was
// written by the client and is ignored. When every listed hop is trusted,
// the left-most one is used; an unparseable hop ends the walk at the last
// trusted address seen. An unparseable peer is the zero Addr (one shared
// bucket).
func clientIP(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer := parseHostAddr(r.RemoteAddr)
	if !isTrusted(peer, trusted) {
		return peer
	}
	client := peer
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			a := parseHostAddr(strings.TrimSpace(parts[j]))
			if !a.IsValid() {
				return client
			}
			client = a
			if !isTrusted(a, trusted) {
				return a
			}
		}
	}
	return client
}

// parseHostAddr reads "ip", "ip:port" or "[ipv6]:port".
func parseHostAddr(s string) netip.Addr {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone("")
	}
	if host, _, err := net.SplitHostPort(s); err == nil {
		if a, err := netip.ParseAddr(host); err == nil {
			return a.Unmap().WithZone("")
		}
	}
	return netip.Addr{}
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	if !a.IsValid() {
		return false
	}
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
