// Package peers lets one gateway replica read the usage records that its
// StatefulSet siblings hold, so that `GET /v1/usage` shows a key all of its
// records whichever replica answers.
//
// Replicas are addressed by their stable StatefulSet names through the
// headless Service (<statefulset>-<ordinal>.<service>), on the management
// port, which the client Service does not expose; each call carries a token
// only gateways hold. The expected set is the StatefulSet's ordinals
// 0..spec.replicas-1, read from the cluster and watched (Discovery), so a
// replica that is down is reported missing rather than silently absent, and
// `kubectl scale` or an autoscaler needs no flag kept in step. A scaled-away
// replica hands its records to a remaining one (HandOff); until it has, its
// volume is a stranded ledger that every answer names.
package peers

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmgw/llmgw/gateway/usage"
)

// Path is the peer usage endpoint on the management port.
const Path = "/peer/v1/usage"

// Config describes this replica and its siblings.
type Config struct {
	Self    string // this pod's name: <statefulset>-<ordinal>
	Service string // the headless Service, e.g. llmgw-gateway-peers
	// Roster says which replicas are expected now (a Discovery's
	// Membership). Nil: the fixed ordinals 0..Replicas-1 (standalone runs
	// and tests, where nothing can be watched).
	Roster   func() Membership
	Replicas int    // without a Roster: the replica count
	Port     int    // the peers' management port
	Token    string // shared secret of the gateways
	Timeout  time.Duration
	Client   *http.Client
}

// Page is one replica's answer: its newest records of the key after the
// cursor (JSON objects as /v1/usage writes them), and whether it has more.
type Page struct {
	Replica string
	Data    []json.RawMessage
	HasMore bool
}

// Applied is what a replica's answer says it applied of a filtered query,
// in the answer's "applied" member. A replica older than filters ignores
// the parameters it does not know and answers without it: its unfiltered
// answer must not be taken for a filtered one, so a sibling whose Applied
// differs from the query's counts as missing (the answer is partial),
// never as a source of other records or other totals.
type Applied struct {
	Endpoint string `json:"endpoint,omitempty"`
	Session  string `json:"session,omitempty"`
	GroupBy  string `json:"group_by,omitempty"`
}

// AppliedOf is the Applied of a query with filter f, grouped by by ("" for
// none).
func AppliedOf(f usage.Filter, by string) Applied {
	return Applied{Endpoint: f.Endpoint, Session: f.Session, GroupBy: by}
}

// setQuery adds a's parameters to q.
func (a Applied) setQuery(q url.Values) {
	for name, v := range map[string]string{"endpoint": a.Endpoint, "session": a.Session, "group_by": a.GroupBy} {
		if v != "" {
			q.Set(name, v)
		}
	}
}

// check is nil when an answer that says it applied got may stand for the
// query of a.
func (a Applied) check(name string, got Applied) error {
	if got != a {
		return fmt.Errorf("peer %s applied %+v of the query's %+v (a replica older than usage filters?)", name, got, a)
	}
	return nil
}

// Set is the sibling replicas of this one.
type Set struct {
	cfg Config
}

// New checks cfg and derives the siblings' names from this pod's name.
func New(cfg Config) (*Set, error) {
	i := strings.LastIndexByte(cfg.Self, '-')
	if i <= 0 {
		return nil, fmt.Errorf("peers: pod name %q is not <statefulset>-<ordinal>", cfg.Self)
	}
	if _, err := strconv.Atoi(cfg.Self[i+1:]); err != nil {
		return nil, fmt.Errorf("peers: pod name %q is not <statefulset>-<ordinal>", cfg.Self)
	}
	switch {
	case cfg.Service == "":
		return nil, errors.New("peers: the headless Service name is required")
	case cfg.Roster == nil && cfg.Replicas < 1:
		return nil, errors.New("peers: replicas must be at least 1")
	case cfg.Port < 1 || cfg.Port > 65535:
		return nil, fmt.Errorf("peers: invalid port %d", cfg.Port)
	case cfg.Token == "":
		return nil, errors.New("peers: a token is required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 3 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.Roster == nil {
		fixed := StaticMembership(cfg.Self, cfg.Replicas)
		cfg.Roster = func() Membership { return fixed }
	}
	return &Set{cfg: cfg}, nil
}

// Stranded are the volumes of scaled-away replicas whose records were not
// handed off (yet): records no replica serves, which every usage answer
// must name.
func (s *Set) Stranded() []string { return s.cfg.Roster().Stranded }

// Usage asks every sibling, in parallel, for keyID's records matching f
// after cursor. It returns the pages of those that answered and the names
// of those that did not (down, unreachable, answering with an error, or
// not applying f).
func (s *Set) Usage(ctx context.Context, keyID string, f usage.Filter, limit int, cursor string) (pages []Page, missing []string) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	var mu sync.Mutex
	missing = s.each(func(name string) error {
		p, err := s.fetch(ctx, name, keyID, f, limit, cursor)
		if err == nil {
			mu.Lock()
			pages = append(pages, p)
			mu.Unlock()
		}
		return err
	})
	return pages, missing
}

// each runs ask for every sibling expected now, in parallel, and returns
// the names of those it failed for. While the replica set is not known yet
// (the StatefulSet not read since the start) every sibling is missing: the
// answer is "<statefulset>-*", never a silently shorter one.
func (s *Set) each(ask func(name string) error) (missing []string) {
	m := s.cfg.Roster()
	if !m.Known {
		return []string{s.cfg.Self[:strings.LastIndexByte(s.cfg.Self, '-')+1] + "*"}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range m.Others(s.cfg.Self) {
		wg.Go(func() {
			if err := ask(name); err != nil {
				mu.Lock()
				missing = append(missing, name)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return missing
}

func (s *Set) fetch(ctx context.Context, name, keyID string, f usage.Filter, limit int, cursor string) (Page, error) {
	q := url.Values{"key_id": {keyID}, "limit": {strconv.Itoa(limit)}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	asked := AppliedOf(f, "")
	asked.setQuery(q)
	u := fmt.Sprintf("http://%s.%s:%d%s?%s", name, s.cfg.Service, s.cfg.Port, Path, q.Encode())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Page{}, err
	}
	req.Header.Set("Authorization", "Bearer "+s.cfg.Token)
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return Page{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return Page{}, fmt.Errorf("peer %s: HTTP %d", name, resp.StatusCode)
	}
	var body struct {
		Data    []json.RawMessage `json:"data"`
		HasMore bool              `json:"has_more"`
		Applied Applied           `json:"applied"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&body); err != nil {
		return Page{}, fmt.Errorf("peer %s: %w", name, err)
	}
	if err := asked.check(name, body.Applied); err != nil {
		return Page{}, err
	}
	return Page{Replica: name, Data: body.Data, HasMore: body.HasMore}, nil
}

// Authorized reports, in constant time, whether r carries the peers' token.
func Authorized(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}
