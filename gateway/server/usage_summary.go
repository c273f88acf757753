package server

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/api/snapshot"
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
//
// With endpoint= or session= the totals are those of the matching records
// (echoed back); with group_by= groups breaks them down by that column's
// values, each group naming its value in the member of that name ("" for
// records without one) and adding up to the totals.
type summaryJSON struct {
	Object   string `json:"object"`
	KeyID    string `json:"key_id"`
	From     string `json:"from"`
	To       string `json:"to"`
	Endpoint string `json:"endpoint,omitempty"`
	Session  string `json:"session,omitempty"`
	GroupBy  string `json:"group_by,omitempty"`
	totalsJSON
	Groups []groupJSON `json:"groups,omitempty"`
	completenessJSON
}

// totalsJSON are the sums of some records: the whole summary's, or one
// group's.
type totalsJSON struct {
	Requests          int64      `json:"requests"`
	InputTokens       int64      `json:"input_tokens"`
	CachedInputTokens int64      `json:"cached_input_tokens"`
	OutputTokens      int64      `json:"output_tokens"`
	ReasoningTokens   int64      `json:"reasoning_tokens"`
	Cost              *string    `json:"cost"`
	Currency          *string    `json:"currency"`
	Costs             []costJSON `json:"costs"`
}

// groupJSON is one group of a summary: the value it is for, in the member
// named after the grouped column (exactly one is set; "owner" for
// group_by=owner.<label>, the label's value), and its totals.
type groupJSON struct {
	Endpoint *string `json:"endpoint,omitempty"`
	Session  *string `json:"session,omitempty"`
	Owner    *string `json:"owner,omitempty"`
	totalsJSON
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

// peerSummaryJSON is a replica's answer to view=summary: its totals
// (members of peerTotalsJSON, as replicas older than groups read them),
// with group_by each group's, and what it applied of the query
// (peers.Applied). TooManyGroups says the replica alone has more than
// usage.MaxSummaryGroups groups, and then Groups is empty.
type peerSummaryJSON struct {
	peerTotalsJSON
	Groups        []peerGroupJSON `json:"groups,omitempty"`
	TooManyGroups bool            `json:"too_many_groups,omitempty"`
	Applied       peers.Applied   `json:"applied,omitzero"`
}

// peerGroupJSON is one group's totals between replicas.
type peerGroupJSON struct {
	Value  string         `json:"value"`
	Totals peerTotalsJSON `json:"totals"`
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

// onceParam is the value of the query parameter name, "" when it is absent
// or empty; given twice it is an error (a filter matches one value, and
// taking one of two silently would answer another question).
func onceParam(q url.Values, name string) (string, *apiError) {
	if len(q[name]) > 1 {
		return "", errInvalid("invalid_value", name, name+" may be given only once")
	}
	return q.Get(name), nil
}

// usageFilter reads the endpoint= and session= parameters of GET /v1/usage
// and GET /v1/usage/summary: exact matches, each optional (absent or empty:
// no filter).
func usageFilter(q url.Values) (usage.Filter, *apiError) {
	var f usage.Filter
	var aerr *apiError
	if f.Endpoint, aerr = onceParam(q, "endpoint"); aerr != nil {
		return f, aerr
	}
	if f.Endpoint != "" && !usage.ValidEndpoint(f.Endpoint) {
		return f, errInvalid("invalid_value", "endpoint", "endpoint must be one of "+strings.Join(usage.Endpoints, ", "))
	}
	if f.Session, aerr = onceParam(q, "session"); aerr != nil {
		return f, aerr
	}
	if !usage.ValidSession(f.Session) {
		return f, errInvalid("invalid_value", "session",
			fmt.Sprintf("session must be at most %d printable ASCII characters", usage.MaxSessionLen))
	}
	return f, nil
}

// summaryGroupBy reads group_by=: "" (no groups), endpoint, session or
// owner.<label> (an owner label of the key's records).
func summaryGroupBy(q url.Values) (string, *apiError) {
	by, aerr := onceParam(q, "group_by")
	if aerr != nil {
		return "", aerr
	}
	switch by {
	case "", usage.GroupByEndpoint, usage.GroupBySession:
		return by, nil
	}
	if label, ok := strings.CutPrefix(by, usage.GroupByOwnerPrefix); ok && snapshot.ValidOwnerLabel(label) {
		return by, nil
	}
	return "", errInvalid("invalid_value", "group_by", "group_by must be endpoint, session or owner.<label> (an owner label such as owner.team)")
}

// errTooManyGroups is the answer to a grouped summary with more groups than
// one answer holds.
func errTooManyGroups(by string) *apiError {
	return errInvalid("too_many_groups", "group_by", fmt.Sprintf(
		"more than %d values of %s in the range: narrow from..to, or filter by endpoint or session", usage.MaxSummaryGroups, by))
}

// handleUsageSummary answers the calling key's totals; a key sees only its
// own, as with GET /v1/usage. endpoint= and session= narrow them, group_by=
// breaks them down.
func (s *Server) handleUsageSummary(w http.ResponseWriter, r *http.Request) {
	_, k, ok := s.admitRead(w, r, apiOpenAI)
	if !ok {
		return
	}
	reqID := requestID(w)
	q := r.URL.Query()
	from, to, aerr := summaryRange(q, s.now())
	var f usage.Filter
	var by string
	if aerr == nil {
		f, aerr = usageFilter(q)
	}
	if aerr == nil {
		by, aerr = summaryGroupBy(q)
	}
	if aerr != nil {
		writeError(w, aerr, reqID)
		return
	}
	fail := func(msg string, err error) {
		s.log.Error(msg, "request_id", reqID, "err", err)
		writeError(w, &apiError{status: http.StatusInternalServerError, typ: typeInternal, code: "usage_unavailable",
			message: "the usage store could not be read"}, reqID)
	}
	var (
		total  usage.Totals
		groups map[string]usage.Totals
		err    error
	)
	if by == "" {
		total, err = s.ledger.SummaryFiltered(r.Context(), k.ID, f, from, to)
	} else {
		groups, err = s.ledger.SummaryGroups(r.Context(), k.ID, f, by, from, to)
	}
	if errors.Is(err, usage.ErrTooManyGroups) {
		writeError(w, errTooManyGroups(by), reqID)
		return
	}
	if err != nil {
		fail("usage summary failed", err)
		return
	}
	var missing []string
	if s.peers != nil {
		var pages []peers.SummaryPage
		pages, missing = s.peers.Summary(r.Context(), k.ID, f, by, from, to)
		if by == "" {
			err = addPeerTotals(&total, pages)
		} else {
			err = addPeerGroups(groups, pages)
		}
		if errors.Is(err, usage.ErrTooManyGroups) {
			writeError(w, errTooManyGroups(by), reqID)
			return
		}
		if err != nil {
			fail("usage summary merge failed", err)
			return
		}
	}
	if by != "" {
		if total, err = sumGroups(groups); err != nil {
			fail("usage summary merge failed", err)
			return
		}
	}
	out := toSummaryJSON(k.ID, from, to, total)
	out.Endpoint, out.Session, out.GroupBy = f.Endpoint, f.Session, by
	if by != "" {
		out.Groups = toGroupsJSON(by, groups)
	}
	if s.peers != nil {
		out.completenessJSON = s.completeness(missing, "usage summary", reqID)
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

// addPeerGroups adds the siblings' groups to this replica's, value by
// value. A sibling with too many groups on its own, or more than
// usage.MaxSummaryGroups groups in all, is usage.ErrTooManyGroups.
func addPeerGroups(groups map[string]usage.Totals, pages []peers.SummaryPage) error {
	for _, p := range pages {
		var ps peerSummaryJSON
		if err := json.Unmarshal(p.Body, &ps); err != nil {
			return fmt.Errorf("replica %s: %w", p.Replica, err)
		}
		if ps.TooManyGroups {
			return fmt.Errorf("replica %s: %w", p.Replica, usage.ErrTooManyGroups)
		}
		for _, g := range ps.Groups {
			t, ok := groups[g.Value]
			if !ok && len(groups) == usage.MaxSummaryGroups {
				return fmt.Errorf("replicas together: %w", usage.ErrTooManyGroups)
			}
			if err := t.Add(fromPeerTotals(g.Totals)); err != nil {
				return fmt.Errorf("replica %s: %w", p.Replica, err)
			}
			groups[g.Value] = t
		}
	}
	return nil
}

// sumGroups is the totals of all groups.
func sumGroups(groups map[string]usage.Totals) (usage.Totals, error) {
	var t usage.Totals
	for _, g := range groups {
		if err := t.Add(g); err != nil {
			return usage.Totals{}, err
		}
	}
	return t, nil
}

func toSummaryJSON(keyID string, from, to time.Time, t usage.Totals) summaryJSON {
	return summaryJSON{Object: "usage.summary", KeyID: keyID,
		From: from.Format(time.RFC3339Nano), To: to.Format(time.RFC3339Nano), totalsJSON: toTotalsJSON(t)}
}

// toTotalsJSON: cost and currency are the total when there is at most one
// currency (cost "0" and currency "" when nothing was priced); after a
// change of currency they are null and costs lists each.
func toTotalsJSON(t usage.Totals) totalsJSON {
	out := totalsJSON{Requests: t.Requests, InputTokens: t.InputTokens, CachedInputTokens: t.CachedInputTokens,
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

// toGroupsJSON lists the groups by value, "" (the records without one)
// first.
func toGroupsJSON(by string, groups map[string]usage.Totals) []groupJSON {
	out := make([]groupJSON, 0, len(groups))
	for _, v := range slices.Sorted(maps.Keys(groups)) {
		g := groupJSON{totalsJSON: toTotalsJSON(groups[v])}
		switch by {
		case usage.GroupByEndpoint:
			g.Endpoint = &v
		case usage.GroupBySession:
			g.Session = &v
		default:
			g.Owner = &v
		}
		out = append(out, g)
	}
	return out
}

// servePeerSummary is the view=summary answer of the peer usage endpoint:
// this replica's own totals (of the records matching the endpoint and
// session parameters; with group_by each group's), for a sibling to add
// up.
func (s *Server) servePeerSummary(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, err1 := time.Parse(time.RFC3339Nano, q.Get("from"))
	to, err2 := time.Parse(time.RFC3339Nano, q.Get("to"))
	if err := errors.Join(err1, err2); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid from or to"})
		return
	}
	f, by := peerFilter(q), q.Get("group_by")
	out := peerSummaryJSON{Applied: peers.AppliedOf(f, by)}
	var (
		t      usage.Totals
		groups map[string]usage.Totals
		err    error
	)
	if by == "" {
		t, err = s.ledger.SummaryFiltered(r.Context(), q.Get("key_id"), f, from, to)
	} else {
		groups, err = s.ledger.SummaryGroups(r.Context(), q.Get("key_id"), f, by, from, to)
		if err == nil {
			t, err = sumGroups(groups)
		}
	}
	switch {
	case errors.Is(err, usage.ErrTooManyGroups):
		out.TooManyGroups = true
	case err != nil:
		code := http.StatusInternalServerError
		if errors.Is(err, usage.ErrBadRange) || errors.Is(err, usage.ErrInvalidRecord) ||
			errors.Is(err, usage.ErrBadFilter) || errors.Is(err, usage.ErrBadGroup) {
			code = http.StatusBadRequest
		}
		writeJSON(w, code, map[string]string{"error": "usage summary failed"})
		return
	}
	out.peerTotalsJSON = toPeerTotals(t)
	for _, v := range slices.Sorted(maps.Keys(groups)) {
		out.Groups = append(out.Groups, peerGroupJSON{Value: v, Totals: toPeerTotals(groups[v])})
	}
	writeJSON(w, http.StatusOK, out)
}
