package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/llmgw/gateway/peers"
	"github.com/llmgw/llmgw/gateway/usage"
)

// Peers reads one key's usage records from the sibling gateway replicas (a
// *peers.Set in a StatefulSet; nil when the gateway runs alone).
type Peers interface {
	// Usage is the siblings' pages of keyID's records matching f.
	Usage(ctx context.Context, keyID string, f usage.Filter, limit int, cursor string) (pages []peers.Page, missing []string)
	// Summary is the siblings' totals of keyID's records matching f over
	// [from, to), broken down by the column by unless it is "".
	Summary(ctx context.Context, keyID string, f usage.Filter, by string, from, to time.Time) (pages []peers.SummaryPage, missing []string)
	// Stranded are the volumes of scaled-away replicas whose records no
	// replica serves yet (not handed off, not imported).
	Stranded() []string
}

// completenessJSON says what an answer across replicas lacks: the replicas
// that did not answer and the stranded ledgers it could not read. Partial
// is true whenever either is not empty; an answer without it is whole.
type completenessJSON struct {
	Partial         bool     `json:"partial,omitempty"`
	MissingReplicas []string `json:"missing_replicas,omitempty"`
	StrandedLedgers []string `json:"stranded_ledgers,omitempty"`
}

// completeness is what an answer made with the siblings' pages lacks
// (missing: the siblings that did not answer), logged once per answer.
func (s *Server) completeness(missing []string, what, reqID string) completenessJSON {
	stranded := s.peers.Stranded()
	if len(missing) == 0 && len(stranded) == 0 {
		return completenessJSON{}
	}
	slices.Sort(missing)
	s.log.Warn(what+" answered without some records", "request_id", reqID, "missing", missing, "stranded", stranded)
	return completenessJSON{Partial: true, MissingReplicas: missing, StrandedLedgers: stranded}
}

// peerListJSON is a replica's page for a sibling: /v1/usage's list, and
// what it applied of the query (peers.Applied), so that a sibling knows a
// filtered page from an older replica's unfiltered one.
type peerListJSON struct {
	Object  string        `json:"object"`
	Data    []recordJSON  `json:"data"`
	HasMore bool          `json:"has_more"`
	Applied peers.Applied `json:"applied,omitzero"`
}

// usageListJSON is GET /v1/usage across replicas: a list in the OpenAI shape
// that says when a replica did not answer, never a silently shorter list.
type usageListJSON struct {
	Object     string            `json:"object"`
	Data       []json.RawMessage `json:"data"`
	HasMore    bool              `json:"has_more"`
	NextCursor string            `json:"next_cursor,omitempty"`
	completenessJSON
}

// PeerUsageHandler serves this replica's own records of one key to a
// sibling (matching the endpoint and session parameters, if any), or with
// view=summary its totals over a time range. It belongs on the management
// port only, behind the peers' token.
func (s *Server) PeerUsageHandler(token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !peers.Authorized(r, token) {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "peer token required"})
			return
		}
		q := r.URL.Query()
		if q.Get("view") == peers.SummaryView {
			s.servePeerSummary(w, r)
			return
		}
		limit, err := strconv.Atoi(q.Get("limit"))
		if err != nil || limit < 1 || limit > usage.MaxListLimit {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid limit"})
			return
		}
		f := peerFilter(q)
		recs, _, more, err := s.ledger.ListFiltered(r.Context(), q.Get("key_id"), f, limit, q.Get("cursor"))
		if err != nil {
			code := http.StatusInternalServerError
			if errors.Is(err, usage.ErrBadCursor) || errors.Is(err, usage.ErrBadFilter) {
				code = http.StatusBadRequest
			}
			writeJSON(w, code, map[string]string{"error": "usage list failed"})
			return
		}
		out := peerListJSON{Object: "list", Data: make([]recordJSON, 0, len(recs)), HasMore: more, Applied: peers.AppliedOf(f, "")}
		for _, rec := range recs {
			out.Data = append(out.Data, toRecordJSON(rec))
		}
		writeJSON(w, http.StatusOK, out)
	})
}

// peerFilter is the filter of a sibling's query, as sent (the ledger
// refuses an invalid one; the sibling validated it for its client).
func peerFilter(q url.Values) usage.Filter {
	return usage.Filter{Endpoint: q.Get("endpoint"), Session: q.Get("session")}
}

// mergeUsage is one page across replicas: the newest limit records by
// request id (gateway request ids are time-ordered across replicas, so the
// same cursor is valid on every ledger), each once. There are more when any
// replica had more or records fell past the page.
func mergeUsage(local []usage.Record, localMore bool, pages []peers.Page, limit int) (usageListJSON, error) {
	type entry struct {
		id  string
		raw json.RawMessage
	}
	seen := map[string]bool{}
	var all []entry
	more := localMore
	add := func(id string, raw json.RawMessage) {
		if id != "" && !seen[id] {
			seen[id] = true
			all = append(all, entry{id, raw})
		}
	}
	for _, rec := range local {
		raw, err := json.Marshal(toRecordJSON(rec))
		if err != nil {
			return usageListJSON{}, err
		}
		add(rec.RequestID, raw)
	}
	for _, p := range pages {
		more = more || p.HasMore
		for _, raw := range p.Data {
			var head struct {
				RequestID string `json:"request_id"`
			}
			if err := json.Unmarshal(raw, &head); err != nil {
				return usageListJSON{}, err
			}
			add(head.RequestID, raw)
		}
	}
	slices.SortFunc(all, func(a, b entry) int { return strings.Compare(b.id, a.id) })
	if len(all) > limit {
		all, more = all[:limit], true
	}
	out := usageListJSON{Object: "list", Data: make([]json.RawMessage, 0, len(all)), HasMore: more}
	for _, e := range all {
		out.Data = append(out.Data, e.raw)
	}
	if more && len(all) > 0 {
		out.NextCursor = usage.EncodeCursor(all[len(all)-1].id)
	}
	return out, nil
}

// writeUsageAcrossReplicas answers GET /v1/usage with this replica's page
// merged with its siblings' pages for the same key, filter and cursor. The
// cursor is a position in time, valid on every replica, so the merged
// page's cursor pages on through every replica's records of the filter.
func (s *Server) writeUsageAcrossReplicas(w http.ResponseWriter, r *http.Request, keyID string, f usage.Filter, local []usage.Record, localMore bool, limit int, reqID string) {
	pages, missing := s.peers.Usage(r.Context(), keyID, f, limit, r.URL.Query().Get("cursor"))
	out, err := mergeUsage(local, localMore, pages, limit)
	if err != nil {
		s.log.Error("usage merge failed", "request_id", reqID, "err", err)
		writeError(w, &apiError{status: http.StatusInternalServerError, typ: typeInternal, code: "usage_unavailable",
			message: "the usage store could not be read"}, reqID)
		return
	}
	out.completenessJSON = s.completeness(missing, "usage", reqID)
	writeJSON(w, http.StatusOK, out)
}
