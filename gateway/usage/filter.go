package usage

import (
	"errors"
	"fmt"
	"slices"
)

// The endpoints a record can name (Record.Endpoint): the APIs whose
// requests are routed to providers. Records written before the ledger
// stored the endpoint have "" (schema version 4 does not guess: see
// migrations).
const (
	EndpointChat       = "chat"       // POST /v1/chat/completions
	EndpointEmbeddings = "embeddings" // POST /v1/embeddings
	EndpointMessages   = "messages"   // POST /v1/messages
	EndpointResponses  = "responses"  // POST /v1/responses
)

// Endpoints are the endpoint names a filter accepts, in a fixed order (for
// error messages and docs).
var Endpoints = []string{EndpointChat, EndpointEmbeddings, EndpointMessages, EndpointResponses}

// MaxSessionLen is the longest session id the gateway keeps, in bytes.
const MaxSessionLen = 128

// ValidEndpoint says whether s is one of Endpoints.
func ValidEndpoint(s string) bool { return slices.Contains(Endpoints, s) }

// ValidSession says whether s can be a stored session id: at most
// MaxSessionLen bytes, each printable ASCII (space through '~'). "" is
// valid: no session. The server keeps only such ids in Record.Session, so
// every stored session can be asked for by a filter.
func ValidSession(s string) bool {
	if len(s) > MaxSessionLen {
		return false
	}
	for i := range len(s) {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// ErrBadFilter is returned for a Filter whose endpoint or session no record
// can have.
var ErrBadFilter = errors.New("usage: invalid filter")

// Filter narrows a listing or a summary to the records of one endpoint
// and/or one agent session, by exact match. A zero field matches every
// record: the zero Filter is no filter. (So a filter cannot ask for the
// records without a session or without an endpoint.)
type Filter struct {
	Endpoint string
	Session  string
}

// Validate returns an error wrapping ErrBadFilter when f names an endpoint
// that is not one of Endpoints or a session that is not ValidSession.
func (f Filter) Validate() error {
	if f.Endpoint != "" && !ValidEndpoint(f.Endpoint) {
		return fmt.Errorf("%w: unknown endpoint %q", ErrBadFilter, f.Endpoint)
	}
	if !ValidSession(f.Session) {
		return fmt.Errorf("%w: session must be at most %d printable ASCII characters", ErrBadFilter, MaxSessionLen)
	}
	return nil
}

// where is the filter's part of a WHERE clause (each term after an AND)
// and its arguments, appended to args. The session term repeats the
// condition of the partial index usage_records_key_session word for word:
// that is how SQLite learns the index holds every row the query wants.
func (f Filter) where(args []any) (string, []any) {
	clause := ""
	if f.Endpoint != "" {
		clause += ` AND endpoint = ?`
		args = append(args, f.Endpoint)
	}
	if f.Session != "" {
		clause += ` AND session = ? AND session != ''`
		args = append(args, f.Session)
	}
	return clause, args
}
