package mockproviders

import (
	"maps"
	"slices"
	"strconv"
	"sync"
)

// Calls is the body of GET /mock/calls. It counts protocol calls only: every
// request that is not /healthz or /mock/*, including the ones the mock rejected,
// so a test can prove a provider was called exactly once, or never.
type Calls struct {
	Total    int64            `json:"total"`
	ByPath   map[string]int64 `json:"by_path"`
	ByFault  map[string]int64 `json:"by_fault"`  // "status=503", "chunks=5", ...; "invalid" for a rejected directive
	ByStatus map[string]int64 `json:"by_status"` // the HTTP status the mock answered with ("200", "401", ...)
	// Done counts the calls that have ended (answered, failed or abandoned):
	// once it equals Total, the token counts are final.
	Done int64 `json:"done"`
	// Tokens is what the answers delivered (see Tokens), in total and by the
	// request's user (alpha's user, beta's metadata.user_id; "" when unset).
	Tokens       Tokens            `json:"tokens"`
	TokensByUser map[string]Tokens `json:"tokens_by_user"`
	// ToolResults are the tool results that chat calls carried in their
	// last turn — the results an agent sent back after running a tool —
	// oldest first, the last maxToolResults of them. Left out when there
	// are none.
	ToolResults []ToolResult `json:"tool_results,omitzero"`
	// TraceParents are the W3C traceparent headers protocol calls carried,
	// oldest first, the last maxTraceParents of them (calls without one
	// add nothing): a test checks here that a trace reached the provider.
	TraceParents []string `json:"traceparents,omitzero"`
}

// ToolResult is one tool result a chat call carried in its last turn, as
// the mock received it: an agent test checks here that the output of the
// command it ran reached the provider. It is the one place /mock/calls
// holds caller text (keep such tests' tool output free of secrets).
type ToolResult struct {
	Path   string `json:"path"`    // the endpoint called, e.g. /v1/messages
	CallID string `json:"call_id"` // the tool call it answers (beta tool_use_id, alpha tool_call_id / call_id)
	// Content is the result's text parts joined by "\n" (directive lines
	// included), cut to maxToolResultBytes; images and documents are not
	// in it.
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitzero"`
}

// maxPaths caps by_path (maxUsers tokens_by_user, maxFaultLabels by_fault)
// so a client probing random URLs, users or tool arguments cannot grow
// memory without bound.
const (
	maxPaths       = 64
	maxUsers       = 64
	maxFaultLabels = 256
	// maxToolResults and maxToolResultBytes bound tool_results.
	maxToolResults     = 32
	maxToolResultBytes = 4096
	// maxTraceParents bounds traceparents; a longer header than a W3C
	// traceparent (55 characters in version 00) is cut.
	maxTraceParents   = 64
	maxTraceParentLen = 128
)

type callCounter struct {
	mu sync.Mutex
	c  Calls
}

func newCallCounter() *callCounter {
	cc := &callCounter{}
	cc.reset()
	return cc
}

func (cc *callCounter) reset() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.c = Calls{ByPath: map[string]int64{}, ByFault: map[string]int64{}, ByStatus: map[string]int64{},
		TokensByUser: map[string]Tokens{}}
}

func (cc *callCounter) arrive(path, traceparent string) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.c.Total++
	if traceparent != "" {
		cc.c.TraceParents = append(cc.c.TraceParents, traceparent[:min(len(traceparent), maxTraceParentLen)])
		if n := len(cc.c.TraceParents); n > maxTraceParents {
			cc.c.TraceParents = slices.Clone(cc.c.TraceParents[n-maxTraceParents:])
		}
	}
	if _, ok := cc.c.ByPath[path]; !ok && len(cc.c.ByPath) >= maxPaths {
		path = "other"
	}
	cc.c.ByPath[path]++
}

func (cc *callCounter) faults(labels []string) {
	if len(labels) == 0 {
		return
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	for _, l := range labels {
		l = shorten(l) // an args= label is as long as its JSON
		if _, ok := cc.c.ByFault[l]; !ok && len(cc.c.ByFault) >= maxFaultLabels {
			l = "other"
		}
		cc.c.ByFault[l]++
	}
}

// toolResults records the tool results of a call to path.
func (cc *callCounter) toolResults(path string, results []ToolResult) {
	if len(results) == 0 {
		return
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	for _, r := range results {
		r.Path = path
		cc.c.ToolResults = append(cc.c.ToolResults, r)
	}
	if n := len(cc.c.ToolResults); n > maxToolResults {
		cc.c.ToolResults = slices.Clone(cc.c.ToolResults[n-maxToolResults:])
	}
}

func (cc *callCounter) status(code int) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.c.ByStatus[strconv.Itoa(code)]++
}

// finish closes one call with the tokens it delivered.
func (cc *callCounter) finish(user string, t Tokens) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.c.Done++
	if t == (Tokens{}) {
		return
	}
	cc.c.Tokens.add(t)
	if _, ok := cc.c.TokensByUser[user]; !ok && len(cc.c.TokensByUser) >= maxUsers {
		user = "other"
	}
	u := cc.c.TokensByUser[user]
	u.add(t)
	cc.c.TokensByUser[user] = u
}

func (cc *callCounter) snapshot() Calls {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return Calls{Total: cc.c.Total, ByPath: maps.Clone(cc.c.ByPath), ByFault: maps.Clone(cc.c.ByFault), ByStatus: maps.Clone(cc.c.ByStatus),
		Done: cc.c.Done, Tokens: cc.c.Tokens, TokensByUser: maps.Clone(cc.c.TokensByUser), ToolResults: slices.Clone(cc.c.ToolResults),
		TraceParents: slices.Clone(cc.c.TraceParents)}
}
