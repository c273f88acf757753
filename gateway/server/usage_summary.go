package server

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/gateway/peers"
	"github.com/llmgw/llmgw/gateway/usage"
)

// MaxSummaryRange bounds one GET /v1/usage/summary: a key's records in the
// range are summed on every replica, so the range bounds the work a read
// can cause. Longer periods are the sum of several calls.
const MaxSummaryRange = 366 * 24 * time.Hour

// costJSON is an exact amount: a decimal string, never a float.
type costJSON struct {
	Currency string `json:"currency"`
	Cost     string `json:"cost"`
}

// summaryJSON is GET /v1/usage/summary: the calling key's totals over
// [from, to), across replicas. cost and currency are the total when the
// range has at most one currency (cost "0" and currency "" when nothing was
// priced); after a change of currency they are null and costs lists each.
type summaryJSON struct {
	Object            string     `json:"object"`
	KeyID             string     `json:"key_id"`
	From              string     `json:"from"`
	To                string     `json:"to"`
	Requests          int64      `json:"requests"`
	InputTokens       int64      `json:"input_tokens"`
	CachedInputTokens int64      `json:"cached_input_tokens"`
	OutputTokens      int64      `json:"output_tokens"`
	ReasoningTokens   int64      `json:"reasoning_tokens"`
	Cost              *string    `json:"cost"`
	Currency          *string    `json:"currency"`
	Costs             []costJSON `json:"costs"`
	Partial           bool       `json:"partial,omitempty"`
	MissingReplicas   []string   `json:"missing_replicas,omitempty"`
}

// peerTotalsJSON is one replica's totals on the wire between replicas:
// costs as integer pico-units, so adding them up stays exact.
type peerTotalsJSON struct {
	Requests          int64            `json:"requests"`
	InputTokens       int64            `json:"input_tokens"`
	CachedInputTokens int64            `json:"cached_input_tokens"`
	OutputTokens      int64            `json:"output_tokens"`
	ReasoningTokens   int64            `json:"reasoning_tokens"`
	CostPicos         map[string]int64 `json:"cost_picos"`
}

func toPeerTotals(t usage.Totals) peerTotalsJSON {
	p := peerTotalsJSON{Requests: t.Requests, InputTokens: t.InputTokens, CachedInputTokens: t.CachedInputTokens,
		OutputTokens: t.OutputTokens, ReasoningTokens: t.ReasoningTokens, CostPicos: map[string]int64{}}
	for cur, c := range t.Costs {
		p.CostPicos[cur] = int64(c)
	}
	return p
}

func fromPeerTotals(p peerTotalsJSON) usage.Totals {
	t := usage.Totals{Requests: p.Requests, InputTokens: p.InputTokens, CachedInputTokens: p.CachedInputTokens,
		OutputTokens: p.OutputTokens, ReasoningTokens: p.ReasoningTokens}
	for cur, c := range p.CostPicos {
		if t.Costs == nil {
			t.Costs = map[string]money.Picos{}
		}
		t.Costs[cur] = money.Picos(c)
	}
	return t
}

// summaryRange reads from and to (RFC 3339). Defaults: to is now, from the
// start of to's UTC calendar month, the period a monthly budget counts.
func summaryRange(q url.Values, now time.Time) (from, to time.Time, aerr *apiError) {
	parse := func(name string) (time.Time, bool, *apiError) {
		v := q.Get(name)
		if v == "" {
			return time.Time{}, false, nil
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return time.Time{}, false, errInvalid("invalid_value", name, name+" must be an RFC 3339 time such as 2026-05-01T00:00:00Z")
		}
		return t.UTC(), true, nil
	}
	to, hasTo, aerr := parse("to")
	if aerr != nil {
		return from, to, aerr
	}
	if !hasTo {
		to = now.UTC()
	}
	from, hasFrom, aerr := parse("from")
	if aerr != nil {
		return from, to, aerr
	}
	if !hasFrom {
		from = time.Date(to.Year(), to.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	switch {
	case to.Before(from):
		return from, to, errInvalid("invalid_value", "to", "to must not be before from")
	case to.Sub(from) > MaxSummaryRange:
		return from, to, errInvalid("invalid_value", "from", "the range from..to may span at most 366 days")
	}
	return from, to, nil
}

// handleUsageSummary answers the calling key's totals; a key sees only its
// own, as with GET /v1/usage.
func (s *Server) handleUsageSummary(w http.ResponseWriter, r *http.Request) {
	_, k, ok := s.authOnly(w, r)
	if !ok {
		return
	}
	reqID := requestID(w)
	from, to, aerr := summaryRange(r.URL.Query(), s.now())
	if aerr != nil {
		writeError(w, aerr, reqID)
		return
	}
	fail := func(msg string, err error) {
		s.log.Error(msg, "request_id", reqID, "err", err)
		writeError(w, &apiError{status: http.StatusInternalServerError, typ: typeInternal, code: "usage_unavailable",
			message: "the usage store could not be read"}, reqID)
	}
	total, err := s.ledger.Summary(r.Context(), k.ID, from, to)
	if err != nil {
		fail("usage summary failed", err)
		return
	}
	var missing []string
	if s.peers != nil {
		var pages []peers.SummaryPage
		pages, missing = s.peers.Summary(r.Context(), k.ID, from, to)
		if err := addPeerTotals(&total, pages); err != nil {
			fail("usage summary merge failed", err)
			return
		}
	}
	out := toSummaryJSON(k.ID, from, to, total)
	if len(missing) > 0 {
		slices.Sort(missing)
		out.Partial, out.MissingReplicas = true, missing
		s.log.Warn("usage summary answered without some replicas", "request_id", reqID, "missing", missing)
	}
	writeJSON(w, http.StatusOK, out)
}

// addPeerTotals adds the siblings' totals to this replica's. Each replica
// holds the records of the requests it served, so the sum counts each once.
func addPeerTotals(total *usage.Totals, pages []peers.SummaryPage) error {
	for _, p := range pages {
		var pt peerTotalsJSON
		if err := json.Unmarshal(p.Body, &pt); err != nil {
			return fmt.Errorf("replica %s: %w", p.Replica, err)
		}
		if err := total.Add(fromPeerTotals(pt)); err != nil {
			return fmt.Errorf("replica %s: %w", p.Replica, err)
		}
	}
	return nil
}

func toSummaryJSON(keyID string, from, to time.Time, t usage.Totals) summaryJSON {
	out := summaryJSON{Object: "usage.summary", KeyID: keyID,
		From: from.Format(time.RFC3339Nano), To: to.Format(time.RFC3339Nano),
		Requests: t.Requests, InputTokens: t.InputTokens, CachedInputTokens: t.CachedInputTokens,
		OutputTokens: t.OutputTokens, ReasoningTokens: t.ReasoningTokens, Costs: []costJSON{}}
	for cur, c := range t.Costs {
		out.Costs = append(out.Costs, costJSON{Currency: cur, Cost: c.String()})
	}
	slices.SortFunc(out.Costs, func(a, b costJSON) int { return cmp.Compare(a.Currency, b.Currency) })
	switch len(out.Costs) {
	case 0:
		zero, none := "0", ""
		out.Cost, out.Currency = &zero, &none
	case 1:
		out.Cost, out.Currency = &out.Costs[0].Cost, &out.Costs[0].Currency
	}
	return out
}

// servePeerSummary is the view=summary answer of the peer usage endpoint:
// this replica's own totals, for a sibling to add up.
func (s *Server) servePeerSummary(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, err1 := time.Parse(time.RFC3339Nano, q.Get("from"))
	to, err2 := time.Parse(time.RFC3339Nano, q.Get("to"))
	if err := errors.Join(err1, err2); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid from or to"})
		return
	}
	t, err := s.ledger.Summary(r.Context(), q.Get("key_id"), from, to)
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, usage.ErrBadRange) || errors.Is(err, usage.ErrInvalidRecord) {
			code = http.StatusBadRequest
		}
		writeJSON(w, code, map[string]string{"error": "usage summary failed"})
		return
	}
	writeJSON(w, http.StatusOK, toPeerTotals(t))
}
