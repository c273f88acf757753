package specs

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
)

// Attempt is one upstream call of a usage record.
type Attempt struct {
	Provider   string `json:"provider"`
	Model      string `json:"model"`
	Outcome    string `json:"outcome"`
	StatusCode int    `json:"status_code"`
}

// Record is a usage record as GET /v1/usage shows it.
type Record struct {
	RequestID string `json:"request_id"`
	KeyID     string `json:"key_id"`
	// KeyFingerprint is of the key the request was made with (a rotated
	// key's previous key has its own).
	KeyFingerprint string    `json:"key_fingerprint"`
	Model          string    `json:"model"`
	Provider       string    `json:"provider"`
	Status         string    `json:"status"`
	HTTPStatus     int       `json:"http_status"`
	ErrorType      string    `json:"error_type"`
	Fallbacks      int       `json:"fallbacks"`
	Attempts       []Attempt `json:"attempts"`
	Stream         bool      `json:"stream"`
	InputTokens    int       `json:"input_tokens"`
	OutputTokens   int       `json:"output_tokens"`
	// Endpoint is the API the request came in on: chat, embeddings,
	// messages or responses. Session is the caller's agent session (the
	// X-Claude-Code-Session-Id or Session-Id it sent), "" without one.
	Endpoint string `json:"endpoint"`
	Session  string `json:"session"`
}

func (r Record) String() string {
	var at []string
	for _, a := range r.Attempts {
		at = append(at, fmt.Sprintf("%s/%s:%s(%d)", a.Provider, a.Model, a.Outcome, a.StatusCode))
	}
	return fmt.Sprintf("%s %s status=%s http=%d provider=%s fallbacks=%d attempts=[%s] stream=%v",
		r.RequestID, r.Model, r.Status, r.HTTPStatus, r.Provider, r.Fallbacks, strings.Join(at, " "), r.Stream)
}

// UsageList is every page of GET /v1/usage for one key, through one replica.
type UsageList struct {
	Records []Record
	// Partial and Missing: some replica did not answer on some page, or a
	// scaled-away replica's ledger was not handed off yet (its volume is
	// named).
	Partial bool
	Missing []string
}

// IDs are the request ids, in the order listed (newest first).
func (u UsageList) IDs() []string {
	ids := make([]string, len(u.Records))
	for i, r := range u.Records {
		ids[i] = r.RequestID
	}
	return ids
}

// ByID indexes the records by request id (a duplicate is kept once: use
// Duplicates to find it).
func (u UsageList) ByID() map[string]Record {
	m := make(map[string]Record, len(u.Records))
	for _, r := range u.Records {
		m[r.RequestID] = r
	}
	return m
}

// Duplicates are request ids listed more than once.
func (u UsageList) Duplicates() []string {
	seen := map[string]int{}
	var dup []string
	for _, r := range u.Records {
		seen[r.RequestID]++
		if seen[r.RequestID] == 2 {
			dup = append(dup, r.RequestID)
		}
	}
	return dup
}

// ListUsage reads every page of GET /v1/usage with key through base.
func ListUsage(ctx context.Context, base, key string) (UsageList, error) {
	var out UsageList
	cursor := ""
	for page := 0; ; page++ {
		if page > 1000 {
			return out, fmt.Errorf("GET /v1/usage: more than 1000 pages")
		}
		u := base + "/v1/usage?limit=500"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return out, err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := HTTP.Do(req)
		if err != nil {
			return out, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return out, err
		}
		if resp.StatusCode != http.StatusOK {
			return out, fmt.Errorf("GET /v1/usage: HTTP %d: %.300s", resp.StatusCode, body)
		}
		var p struct {
			Data            []Record `json:"data"`
			HasMore         bool     `json:"has_more"`
			NextCursor      string   `json:"next_cursor"`
			Partial         bool     `json:"partial"`
			MissingReplicas []string `json:"missing_replicas"`
			StrandedLedgers []string `json:"stranded_ledgers"`
		}
		if err := jsonv2.Unmarshal(body, &p); err != nil {
			return out, fmt.Errorf("GET /v1/usage: %w", err)
		}
		out.Records = append(out.Records, p.Data...)
		if p.Partial {
			out.Partial = true
			for _, m := range append(p.MissingReplicas, p.StrandedLedgers...) {
				if !slices.Contains(out.Missing, m) {
					out.Missing = append(out.Missing, m)
				}
			}
		}
		if !p.HasMore || p.NextCursor == "" {
			return out, nil
		}
		cursor = p.NextCursor
	}
}

// Want is what one sent request's record must say; zero fields are not checked
// (Fallbacks: -1 is "not checked", 0 is checked).
type Want struct {
	RequestID  string
	What       string // for messages: what the request was
	Model      string
	Status     string
	HTTPStatus int
	Provider   string
	Fallbacks  int
	Stream     bool
	// AnyStream: the record may say either (an interrupted record keeps only
	// what was known at admission).
	AnyStream bool
	// Endpoint and Session, when not empty, are what the record must say
	// (Record.Endpoint, Record.Session).
	Endpoint, Session string
}

// Sent is the list of chat requests a spec sent with one key, and what their
// records must say.
type Sent struct{ Wants []Want }

// Add records one request; an empty request id is an error at check time.
func (s *Sent) Add(w Want) { s.Wants = append(s.Wants, w) }

// CheckExactlyOne checks the invariant "one request, exactly one final
// record" for a key whose every chat request is in s: the list holds each
// sent request id exactly once, nothing else, and each record says what was
// expected. It returns every problem found.
func (s *Sent) CheckExactlyOne(u UsageList) []string {
	var problems []string
	if u.Partial {
		problems = append(problems, fmt.Sprintf("the list is partial: replicas %v did not answer", u.Missing))
	}
	for _, d := range u.Duplicates() {
		problems = append(problems, "request "+d+" is listed more than once")
	}
	byID := u.ByID()
	want := map[string]bool{}
	for _, w := range s.Wants {
		if w.RequestID == "" {
			problems = append(problems, "a request ("+w.What+") had no X-Request-Id")
			continue
		}
		want[w.RequestID] = true
		r, ok := byID[w.RequestID]
		if !ok {
			problems = append(problems, fmt.Sprintf("no record for %s (%s)", w.RequestID, w.What))
			continue
		}
		var bad []string
		if w.Status != "" && r.Status != w.Status {
			bad = append(bad, "status "+r.Status+", want "+w.Status)
		}
		if w.HTTPStatus != 0 && r.HTTPStatus != w.HTTPStatus {
			bad = append(bad, fmt.Sprintf("http_status %d, want %d", r.HTTPStatus, w.HTTPStatus))
		}
		if w.Model != "" && r.Model != w.Model {
			bad = append(bad, "model "+r.Model+", want "+w.Model)
		}
		if w.Provider != "" && r.Provider != w.Provider {
			bad = append(bad, "provider "+r.Provider+", want "+w.Provider)
		}
		if w.Fallbacks >= 0 && r.Fallbacks != w.Fallbacks {
			bad = append(bad, fmt.Sprintf("fallbacks %d, want %d", r.Fallbacks, w.Fallbacks))
		}
		if w.Endpoint != "" && r.Endpoint != w.Endpoint {
			bad = append(bad, "endpoint "+r.Endpoint+", want "+w.Endpoint)
		}
		if w.Session != "" && r.Session != w.Session {
			bad = append(bad, "session "+r.Session+", want "+w.Session)
		}
		if !w.AnyStream && r.Stream != w.Stream {
			bad = append(bad, fmt.Sprintf("stream %v, want %v", r.Stream, w.Stream))
		}
		if len(bad) > 0 {
			problems = append(problems, fmt.Sprintf("record of %s (%s): %s; record: %s", w.RequestID, w.What, strings.Join(bad, ", "), r))
		}
	}
	for _, r := range u.Records {
		if !want[r.RequestID] {
			problems = append(problems, "record of a request this key did not send: "+r.String())
		}
	}
	return problems
}
