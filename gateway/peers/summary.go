package peers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/llmgw/llmgw/gateway/usage"
)

// SummaryView is the query value (view=summary) that makes the peer usage
// endpoint answer with one key's totals over a time range instead of a
// page of records. It shares Path so the management port needs no second
// route and the same token guards both.
const SummaryView = "summary"

// SummaryPage is one replica's totals for a key, as the peer endpoint writes
// them; the caller decodes and adds them up.
type SummaryPage struct {
	Replica string
	Body    json.RawMessage
}

// Summary asks every sibling, in parallel, for keyID's totals of the
// records matching f over [from, to), broken down by the column by when it
// is not "" (usage.GroupByEndpoint, usage.GroupBySession). It returns the
// answers of those that answered and the names of those that did not (or
// did not apply f and by: see Applied).
func (s *Set) Summary(ctx context.Context, keyID string, f usage.Filter, by string, from, to time.Time) (pages []SummaryPage, missing []string) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	q := url.Values{"key_id": {keyID}, "view": {SummaryView},
		"from": {from.UTC().Format(time.RFC3339Nano)}, "to": {to.UTC().Format(time.RFC3339Nano)}}
	asked := AppliedOf(f, by)
	asked.setQuery(q)
	var mu sync.Mutex
	missing = s.each(func(name string) error {
		body, err := s.get(ctx, name, q)
		if err != nil {
			return err
		}
		var head struct {
			Applied Applied `json:"applied"`
		}
		if err := json.Unmarshal(body, &head); err != nil {
			return err
		}
		if err := asked.check(name, head.Applied); err != nil {
			return err
		}
		mu.Lock()
		pages = append(pages, SummaryPage{Replica: name, Body: body})
		mu.Unlock()
		return nil
	})
	return pages, missing
}

// get fetches one sibling's answer to q as raw JSON.
func (s *Set) get(ctx context.Context, name string, q url.Values) (json.RawMessage, error) {
	u := fmt.Sprintf("http://%s.%s:%d%s?%s", name, s.cfg.Service, s.cfg.Port, Path, q.Encode())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.cfg.Token)
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, fmt.Errorf("peer %s: HTTP %d", name, resp.StatusCode)
	}
	var raw json.RawMessage
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&raw); err != nil {
		return nil, fmt.Errorf("peer %s: %w", name, err)
	}
	return raw, nil
}
