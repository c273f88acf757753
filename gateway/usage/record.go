// Package usage is the gateway's durable usage ledger: one SQLite file per
// gateway pod, beside the journal that makes each record durable
// (journal.go), written by a single goroutine in batches, read by a
// separate pool.
//
// Every chat request opens its record with Begin (state in_progress) when it
// arrives and closes it exactly once with Finish. Open writes what the
// journal holds and the file does not, then turns rows a crashed process
// left in_progress into "interrupted", so a request always ends with
// exactly one final record whatever happened to the process.
//
// The ledger never stores prompt text, completion text or plaintext keys:
// Record has no field that could carry them, and it must stay that way.
package usage

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/money"
)

// Record statuses. Only StatusInProgress is written by Begin; the rest are
// final and may only be written by Finish (or by recovery, for interrupted).
const (
	StatusInProgress  = "in_progress"
	StatusSuccess     = "success"
	StatusPartial     = "partial" // a stream was cut after content reached the client
	StatusError       = "error"
	StatusRejected    = "rejected" // refused by the gateway itself: auth, validation, rate limit
	StatusCanceled    = "canceled" // the client went away
	StatusInterrupted = "interrupted"
)

// Attempt outcomes, one per upstream attempt.
const (
	OutcomeOK          = "ok"
	OutcomeTimeout     = "timeout"
	OutcomeConnection  = "connection"
	OutcomeStatus      = "status" // upstream answered with a non-2xx status
	OutcomeStreamError = "stream_error"
	OutcomeCanceled    = "canceled"
	OutcomeProtocol    = "protocol" // upstream answered with data the gateway could not read
	// OutcomeUnavailable: the provider was not called because the gateway
	// could not read its credential (the alias's last usable route).
	OutcomeUnavailable = "unavailable"
)

// Errors callers can test with errors.Is.
var (
	ErrNotFound         = errors.New("usage: record not found")
	ErrAlreadyFinished  = errors.New("usage: record already finished")
	ErrDuplicate        = errors.New("usage: request id already recorded")
	ErrBadCursor        = errors.New("usage: invalid cursor")
	ErrInvalidRecord    = errors.New("usage: invalid record")
	ErrClosed           = errors.New("usage: ledger closed")
	ErrLocked           = errors.New("usage: ledger file is in use by another ledger")
	ErrSchemaTooNew     = errors.New("usage: database schema is newer than this binary")
	ErrNotCommittedYet  = errors.New("usage: not committed yet")
	errKeyRequired      = fmt.Errorf("%w: key id required", ErrInvalidRecord)
	errRequestIDMissing = fmt.Errorf("%w: request id required", ErrInvalidRecord)
)

// Attempt summarizes one upstream call. It deliberately has no room for
// request or response bodies.
type Attempt struct {
	Provider   string
	Model      string
	Outcome    string
	StatusCode int
	LatencyMs  int64
}

// Record is one row of the ledger. Times are stored with microsecond
// precision and come back in UTC.
type Record struct {
	RequestID       string // gateway-generated, time-ordered (see NewRequestID)
	ClientRequestID string // echoed client id, may be empty
	// Endpoint is the API the request came in on (EndpointChat...), set by
	// the server; "" on records written before the ledger stored it.
	Endpoint string
	// Session is the caller's agent session id (Claude Code's
	// X-Claude-Code-Session-Id, Codex's session id), "" when it sent none.
	// The server sanitizes it (ValidSession); the ledger stores it as is.
	Session string
	// Group is the budget group the key belonged to when the request was
	// made ("" for none, and on records written before the ledger stored
	// it): a group's spend is what its members spent while they were
	// members (GroupSpendSince), whatever the key's group is now.
	Group string
	// Owners are the owner labels the record carries
	// (snapshot.RecordOwners of the key and its group at request time);
	// nil for none. Summaries can total by one of them (GroupByOwner).
	Owners map[string]string

	KeyID          string // empty when unauthenticated
	KeyFingerprint string // empty when unauthenticated
	Alias          string
	Provider       string // the provider that produced the final answer
	ProviderModel  string
	Status         string
	HTTPStatus     int
	ErrorType      string
	Fallbacks      int
	Attempts       []Attempt
	Stream         bool
	InputTokens    int
	OutputTokens   int
	// CachedInputTokens are the part of InputTokens the provider served
	// from its prompt cache; ReasoningTokens the part of OutputTokens spent
	// on reasoning. Both are priced apart (money.Cost).
	CachedInputTokens int
	ReasoningTokens   int
	// Cost is what the tokens cost at the price of the route that answered,
	// in Currency; 0 and "" for an unpriced route.
	Cost       money.Picos
	Currency   string
	LatencyMs  int64
	CreatedAt  time.Time
	FinishedAt time.Time // zero while in_progress
}

func isFinalStatus(s string) bool {
	switch s {
	case StatusSuccess, StatusPartial, StatusError, StatusRejected, StatusCanceled, StatusInterrupted:
		return true
	}
	return false
}

// attemptJSON uses one-letter keys because the column is repeated in every
// row and read by programs, not people.
type attemptJSON struct {
	P string `json:"p,omitzero"`
	M string `json:"m,omitzero"`
	O string `json:"o,omitzero"`
	S int    `json:"s,omitzero"`
	L int64  `json:"l,omitzero"`
}

// encodeAttempts is the attempts column: a JSON array, "[]" when empty.
// Invalid UTF-8 in a name becomes U+FFFD rather than failing the record.
func encodeAttempts(as []Attempt) string {
	if len(as) == 0 {
		return "[]"
	}
	js := make([]attemptJSON, len(as))
	for i, a := range as {
		js[i] = attemptJSON{P: a.Provider, M: a.Model, O: a.Outcome, S: a.StatusCode, L: a.LatencyMs}
	}
	b, err := json.Marshal(js, jsontext.AllowInvalidUTF8(true))
	if err != nil {
		// Strings and integers always encode; keep the record, not the list.
		return "[]"
	}
	return string(b)
}

func decodeAttempts(s string) ([]Attempt, error) {
	if s == "" || s == "[]" {
		return nil, nil
	}
	var js []attemptJSON
	if err := json.Unmarshal([]byte(s), &js); err != nil {
		return nil, fmt.Errorf("usage: decode attempts: %w", err)
	}
	as := make([]Attempt, len(js))
	for i, a := range js {
		as[i] = Attempt{Provider: a.P, Model: a.M, Outcome: a.O, StatusCode: a.S, LatencyMs: a.L}
	}
	return as, nil
}

// encodeOwners is the owners column: a JSON object with its keys sorted
// (so equal labels are equal columns), "" when there are none. Invalid
// UTF-8 becomes U+FFFD rather than failing the record.
func encodeOwners(owners map[string]string) string {
	if len(owners) == 0 {
		return ""
	}
	b, err := json.Marshal(owners, json.Deterministic(true), jsontext.AllowInvalidUTF8(true))
	if err != nil {
		// A map of strings always encodes; keep the record, not the labels.
		return ""
	}
	return string(b)
}

func decodeOwners(s string) (map[string]string, error) {
	if s == "" || s == "{}" {
		return nil, nil
	}
	var owners map[string]string
	if err := json.Unmarshal([]byte(s), &owners); err != nil {
		return nil, fmt.Errorf("usage: decode owners: %w", err)
	}
	return owners, nil
}

// Times are integer microseconds since the epoch: sortable, compact, and
// free of the driver's time-format conventions. Zero time is stored as 0.
// The peers' hand-off wire carries them the same way (Micros, FromMicros).
func toMicros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromMicros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

// Micros is t as the ledger stores it: microseconds since the epoch, 0 for
// the zero time.
func Micros(t time.Time) int64 { return toMicros(t) }

// FromMicros is Micros' inverse, in UTC.
func FromMicros(us int64) time.Time { return fromMicros(us) }
