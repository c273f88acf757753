// Package sse reads server-sent events (the text/event-stream format) from an
// upstream response body.
//
// It implements the parsing rules of the WHATWG HTML "event stream
// interpretation" section, minus reconnection: a relay to a model provider never
// reconnects, so "id" and "retry" fields are ignored. Lines may end in LF, CRLF
// or a bare CR; a bare CR is honoured, but because lines are read up to LF, an
// event whose lines end only in CR is delivered when the next LF or the end of
// the stream arrives.
package sse

import (
	"bytes"
	"errors"
	"io"
)

// DefaultMaxEventSize bounds one event's data and any single line, so a hostile or
// broken upstream cannot make the gateway buffer without limit.
const DefaultMaxEventSize = 1 << 20

// lineSlack lets a line carry its field name ("data: ") on top of a maximal value.
const lineSlack = 64

// ErrEventTooLarge is returned when an event's data or one line exceeds the
// maximum size. It is sticky: the stream cannot be resynchronised after it.
var ErrEventTooLarge = errors.New("sse: event exceeds maximum size")

// Event is one dispatched event. Both slices alias the Reader's buffers and are
// valid only until the next call to Next; copy what must outlive it.
type Event struct {
	// Type is the value of the last "event:" field, empty when there was none
	// (which the specification calls "message").
	Type []byte
	// Data is the "data:" field values joined by '\n'.
	Data []byte
}

var bom = []byte("\xEF\xBB\xBF")

// Reader parses events from an io.Reader. It is not safe for concurrent use.
type Reader struct {
	in      readBuffer
	max     int
	line    []byte // assembles a line longer than the read buffer
	rest    []byte // unparsed remainder of the current segment (bare-CR lines)
	typ     []byte
	data    []byte
	hasData bool
	started bool
	eof     bool // the underlying reader is exhausted; rest is its final segment
	readErr error
	err     error // sticky result once the stream is finished or broken
}

// NewReader returns a Reader with a 4 KiB read buffer and DefaultMaxEventSize.
func NewReader(r io.Reader) *Reader {
	return NewReaderSize(r, defaultBufSize, DefaultMaxEventSize)
}

// NewReaderSize returns a Reader with the given read buffer size and maximum event
// size (values below 16 are raised to 16). Lines longer than the buffer are
// assembled in a separate, reused buffer, so the buffer size only trades memory
// for copies. A read that will probably wait for the source gets an eighth of
// the buffer size (readBuffer).
func NewReaderSize(r io.Reader, bufSize, maxEvent int) *Reader {
	if bufSize < 16 {
		bufSize = 16
	}
	if maxEvent < 16 {
		maxEvent = 16
	}
	rd := &Reader{in: newReadBuffer(bufSize), max: maxEvent}
	rd.in.reset(r)
	return rd
}

// keepCap bounds the buffers Reset keeps, so a pooled Reader does not pin the
// memory of one outsized event.
const keepCap = 64 << 10

// Reset discards all state and reads from rd, keeping the buffers so a pooled
// Reader costs no allocations per stream (the large read buffer goes back to
// its pool).
func (r *Reader) Reset(rd io.Reader) {
	r.in.reset(rd)
	r.line = shrink(r.line)
	r.rest = nil
	r.typ = shrink(r.typ)
	r.data = shrink(r.data)
	r.hasData = false
	r.started = false
	r.eof = false
	r.readErr = nil
	r.err = nil
}

func shrink(b []byte) []byte {
	if cap(b) > keepCap {
		return nil
	}
	return b[:0]
}

// Next returns the next event. At the end of the input it returns io.EOF, or
// io.ErrUnexpectedEOF when an incomplete line or an undispatched event was
// discarded (the specification drops them; callers may treat it as truncation).
// A read error from the underlying reader is returned as is. Every error is
// sticky.
func (r *Reader) Next() (Event, error) {
	if r.err != nil {
		return Event{}, r.err
	}
	for {
		if len(r.rest) == 0 {
			if r.eof {
				return Event{}, r.finish(false)
			}
			seg, err := r.readSegment()
			if err != nil {
				if err == ErrEventTooLarge {
					r.err = err
					return Event{}, err
				}
				r.eof = true
				r.readErr = err
			}
			r.rest = seg
			if len(seg) == 0 {
				continue
			}
		}
		line, ok := r.cutLine()
		if !ok {
			// Only a final segment lacks a terminator.
			return Event{}, r.finish(true)
		}
		if !r.started {
			r.started = true
			line = bytes.TrimPrefix(line, bom)
		}
		if len(line) == 0 {
			if !r.hasData {
				// The specification dispatches nothing for an event without data.
				r.typ = r.typ[:0]
				continue
			}
			ev := Event{Type: r.typ, Data: r.data[:len(r.data)-1]}
			r.typ = r.typ[:0]
			r.data = r.data[:0]
			r.hasData = false
			return ev, nil
		}
		if err := r.field(line); err != nil {
			r.err = err
			return Event{}, err
		}
	}
}

// finish settles the sticky end-of-stream result.
func (r *Reader) finish(partialLine bool) error {
	r.rest = nil
	switch {
	case r.readErr != nil && r.readErr != io.EOF:
		r.err = r.readErr
	case partialLine || r.hasData || len(r.typ) > 0:
		r.err = io.ErrUnexpectedEOF
	default:
		r.err = io.EOF
	}
	return r.err
}

// readSegment returns input up to and including the next LF, or the final
// unterminated bytes together with the read error. The fast path returns a
// slice of the read buffer without copying.
func (r *Reader) readSegment() ([]byte, error) {
	seg, err := r.in.readSlice()
	if err != errBufferFull {
		if len(seg) > r.max+lineSlack {
			return nil, ErrEventTooLarge
		}
		return seg, err
	}
	r.line = append(r.line[:0], seg...)
	for {
		if len(r.line) > r.max+lineSlack {
			return nil, ErrEventTooLarge
		}
		seg, err = r.in.readSlice()
		r.line = append(r.line, seg...)
		if err != errBufferFull {
			if len(r.line) > r.max+lineSlack {
				return nil, ErrEventTooLarge
			}
			return r.line, err
		}
	}
}

// cutLine takes the next terminated line off r.rest. A CR is a terminator on its
// own and merges with a following LF. Two IndexByte scans beat IndexAny on the
// common LF-only input.
func (r *Reader) cutLine() ([]byte, bool) {
	i := bytes.IndexByte(r.rest, '\n')
	end := i
	if i < 0 {
		end = len(r.rest)
	}
	if j := bytes.IndexByte(r.rest[:end], '\r'); j >= 0 {
		line := r.rest[:j]
		if j+1 < len(r.rest) && r.rest[j+1] == '\n' {
			r.rest = r.rest[j+2:]
		} else {
			r.rest = r.rest[j+1:]
		}
		return line, true
	}
	if i < 0 {
		return nil, false
	}
	line := r.rest[:i]
	r.rest = r.rest[i+1:]
	return line, true
}

func (r *Reader) field(line []byte) error {
	if line[0] == ':' {
		return nil // comment, typically a keep-alive
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		if len(r.data)+len(value)+1 > r.max+1 {
			return ErrEventTooLarge
		}
		r.data = append(r.data, value...)
		r.data = append(r.data, '\n')
		r.hasData = true
	case "event":
		r.typ = append(r.typ[:0], value...)
	}
	return nil
}
