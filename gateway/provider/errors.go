package provider

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind classifies a failure by what happened upstream. What the router does
// about each kind (fall back or answer, and with which status) is its own
// decision: the failures table and nextStep in gateway/server.
type Kind string

// The kinds of failure an adapter reports.
const (
	KindTimeout    Kind = "timeout"    // connect, response headers, or the ctx deadline
	KindConnection Kind = "connection" // dial, reset, EOF before or while reading a response
	KindStatus     Kind = "status"     // the provider answered non-2xx
	KindProtocol   Kind = "protocol"   // malformed or unexpected upstream data
	KindStream     Kind = "stream"     // failure after the stream began: error event, cut, truncation
	KindCanceled   Kind = "canceled"   // the caller's ctx was cancelled
)

// Error is the only error type adapters and streams return (besides io.EOF from
// Stream.Next). Its fields and its text never contain the provider's URL or
// credential; upstream texts are redacted and clipped (base.seal) before they
// get here.
type Error struct {
	Kind       Kind
	Provider   string        // the configured provider name
	StatusCode int           // KindStatus: the upstream HTTP status
	RetryAfter time.Duration // from Retry-After / retry-after-ms, when sent
	Type       string        // the upstream's error type, if any
	Message    string
	// Body is a KindStatus error's JSON body as the upstream sent it, with
	// the provider's URL and credential redacted (at most 64 KiB): a caller
	// of the provider's own protocol gets it unchanged. nil when the body
	// was not JSON.
	Body []byte
	// Err is the sanitised cause: for transport failures it unwraps only to
	// address-free values (syscall.Errno, context errors, io.EOF...), so errors.Is
	// works without the chain leading back to the URL. For cancellation it is
	// context.Cause of the caller's ctx.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("provider ")
	b.WriteString(e.Provider)
	b.WriteString(": ")
	if e.Kind == KindStatus {
		b.WriteString("upstream status ")
		b.WriteString(strconv.Itoa(e.StatusCode))
	} else {
		b.WriteString(string(e.Kind))
	}
	if e.Type != "" {
		b.WriteString(" (")
		b.WriteString(e.Type)
		b.WriteString(")")
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

const (
	maxMessageLen = 512
	maxTypeLen    = 64
)

// clip makes upstream text safe for one log line: whitespace and control runs
// collapse to one space, invalid UTF-8 becomes '?', and the result is cut at a
// rune boundary.
func clip(s string, max int) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			r = '?'
		case r <= ' ' || r == 0x7f:
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		if b.Len()+utf8.RuneLen(r) > max {
			b.WriteString("...")
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}
