package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/provider"
)

// CredentialSource resolves a provider's credential reference to the secret
// itself. Standalone mode reads files; Kubernetes mode reads Secrets.
type CredentialSource interface {
	Resolve(ctx context.Context, provider string, ref snapshot.Credential) (string, error)
}

// state is everything one request needs from the configuration. It is
// immutable once published, so a request (and a stream in flight) keeps the
// config it started with while a reload swaps in a new one.
type state struct {
	snap     *snapshot.Snapshot
	idx      *snapshot.Compiled
	adapters map[string]provider.Adapter
	// protocols is each provider's protocol, whether it has an adapter or
	// not: what a route can carry is known without calling it.
	protocols map[string]string
	// responsesAPI names the providers that serve the Responses API
	// themselves (snapshot.Provider.ResponsesAPI).
	responsesAPI map[string]bool
	loadedAt     time.Time
	// unavailable names the providers without an adapter because their
	// credential could not be read, with the reason (logs and the management
	// port only: it names Secrets and files). Routes to them are passed over;
	// everything else in the snapshot is served.
	unavailable map[string]string
	// fingerprints caches fingerprint's answers, by hash (the only thing in
	// a state that changes after it is published; bounded by the keys and
	// their previous keys).
	fingerprints sync.Map
}

// fingerprint is keyformat.Fingerprint(hash), computed once per hash and
// state: every request's record carries it, so its SHA-256 is paid once a
// key, not once a request.
func (st *state) fingerprint(hash string) string {
	if fp, ok := st.fingerprints.Load(hash); ok {
		return fp.(string)
	}
	fp := keyformat.Fingerprint(hash)
	st.fingerprints.Store(hash, fp)
	return fp
}

// owners is what a key's records carry of its and its group's owner
// labels (snapshot.RecordOwners).
func (st *state) owners(k *snapshot.Key) map[string]string {
	g, _ := st.idx.Group(k.Group)
	return snapshot.RecordOwners(k, g)
}

// adapterCache keeps adapters (and so their connection pools) across reloads
// as long as a provider's effective configuration is unchanged.
type adapterCache struct {
	mu   sync.Mutex
	byID map[string]provider.Adapter
}

func (c *adapterCache) get(cfg provider.Config) (provider.Adapter, error) {
	id := adapterID(cfg)
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.byID[id]; ok {
		return a, nil
	}
	a, err := provider.New(cfg)
	if err != nil {
		return nil, err
	}
	if c.byID == nil {
		c.byID = map[string]provider.Adapter{}
	}
	c.byID[id] = a
	return a, nil
}

// retain drops adapters no published state uses any more.
func (c *adapterCache) retain(used map[string]provider.Adapter) {
	keep := make(map[string]bool, len(used))
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, a := range c.byID {
		for _, u := range used {
			if u == a {
				keep[id] = true
			}
		}
	}
	for id, a := range c.byID {
		if !keep[id] {
			delete(c.byID, id)
			// Only idle connections close: requests of older states that
			// still use this adapter finish normally.
			if ic, ok := a.(provider.IdleCloser); ok {
				ic.CloseIdleConnections()
			}
		}
	}
}

// adapterID identifies a provider configuration without keeping the
// credential itself in the map key.
func adapterID(cfg provider.Config) string {
	h := sha256.Sum256([]byte(cfg.Credential))
	return strings.Join([]string{cfg.Name, cfg.Protocol, cfg.BaseURL, hex.EncodeToString(h[:8]),
		strconv.FormatInt(int64(cfg.ConnectTimeout), 10), strconv.FormatInt(int64(cfg.ResponseHeaderTimeout), 10)}, "|")
}

// buildState resolves credentials and adapters for a validated snapshot.
// One provider whose credential cannot be read (a missing Secret or key, an
// empty value, an unreadable file) does not block the rest: it is marked
// unavailable, its aliases use their other routes, and RetryCredentials
// tries again. When prev (the running state) has an adapter for the same
// provider with the same credential reference, that adapter is kept instead:
// a transient read failure never takes a working provider down.
func (s *Server) buildState(ctx context.Context, snap *snapshot.Snapshot, prev *state) *state {
	// snap is the server's own normalized, valid copy (apply), never changed
	// afterwards: it is indexed as it is.
	st := &state{snap: snap, idx: snapshot.CompileOwned(snap), adapters: map[string]provider.Adapter{},
		protocols: map[string]string{}, responsesAPI: map[string]bool{}, unavailable: map[string]string{}, loadedAt: s.now()}
	for i := range snap.Providers {
		p := &snap.Providers[i]
		st.protocols[p.Name] = p.Protocol
		if p.ResponsesAPI {
			st.responsesAPI[p.Name] = true
		}
		cfg := provider.Config{
			Name:                  p.Name,
			Protocol:              p.Protocol,
			BaseURL:               p.BaseURL,
			ConnectTimeout:        ms(p.ConnectTimeoutMs),
			ResponseHeaderTimeout: ms(p.ResponseHeaderTimeoutMs),
		}
		var err error
		if p.Credential != nil {
			cfg.Credential, err = s.resolve(ctx, p)
		}
		var a provider.Adapter
		if err == nil {
			a, err = s.adapters.get(cfg)
		}
		if err != nil {
			if old, ok := prev.sameProvider(p); ok {
				s.log.Warn("provider credential could not be read; keeping the last good one", "provider", p.Name, "err", err)
				st.adapters[p.Name] = old
				continue
			}
			st.unavailable[p.Name] = err.Error()
			continue
		}
		st.adapters[p.Name] = a
	}
	return st
}

func (s *Server) resolve(ctx context.Context, p *snapshot.Provider) (string, error) {
	if s.creds == nil {
		return "", errors.New("has a credential reference but the gateway has no credential source")
	}
	secret, err := s.creds.Resolve(ctx, p.Name, *p.Credential)
	if err != nil {
		return "", fmt.Errorf("credential: %w", err)
	}
	return secret, nil
}

// sameProvider is the adapter st runs for a provider configured exactly like
// p (credential reference included).
func (st *state) sameProvider(p *snapshot.Provider) (provider.Adapter, bool) {
	if st == nil {
		return nil, false
	}
	a, ok := st.adapters[p.Name]
	if !ok {
		return nil, false
	}
	for i := range st.snap.Providers {
		if q := &st.snap.Providers[i]; q.Name == p.Name {
			return a, reflect.DeepEqual(q, p)
		}
	}
	return nil, false
}

func ms(v int) time.Duration { return time.Duration(v) * time.Millisecond }
