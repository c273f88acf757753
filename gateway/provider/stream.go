package provider

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/llmgw/llmgw/gateway/provider/sse"
	"github.com/llmgw/llmgw/gateway/translate"
)

const (
	// drainTimeout bounds Close's read to the end of a finished stream. A
	// well-behaved upstream ends the response right after its terminal event, so
	// the read returns at once; reaching the end is what lets the transport reuse
	// the connection instead of closing it.
	drainTimeout = 100 * time.Millisecond
	maxDrain     = 64 << 10
)

// queue holds the chunks one upstream event yielded, until Next hands them
// out.
type queue struct {
	c    []translate.Chunk
	head int
}

func (q *queue) pop() (translate.Chunk, bool) {
	if q.head == len(q.c) {
		q.c, q.head = q.c[:0], 0
		return translate.Chunk{}, false
	}
	c := q.c[q.head]
	q.c[q.head] = translate.Chunk{}
	q.head++
	return c, true
}

var readerPool = sync.Pool{New: func() any { return sse.NewReader(nil) }}

type sseStream struct {
	b      *base
	ctx    context.Context
	body   io.ReadCloser
	rd     *sse.Reader
	dec    translate.ChatStream
	q      queue
	err    error // sticky: io.EOF after the terminal event, else an *Error
	closed bool
}

func newStream(ctx context.Context, b *base, body io.ReadCloser, dec translate.ChatStream) *sseStream {
	rd := readerPool.Get().(*sse.Reader)
	rd.Reset(body)
	return &sseStream{b: b, ctx: ctx, body: body, rd: rd, dec: dec}
}

func (s *sseStream) Next() (translate.Chunk, error) {
	if s.err == nil {
		// Once the caller gave up (first-chunk or idle timeout, client gone), even
		// events already buffered must not come out.
		if e := s.b.ctxError(s.ctx); e != nil {
			s.err = e
			s.q = queue{}
		}
	}
	for {
		if ev, ok := s.q.pop(); ok {
			return ev, nil
		}
		if s.err != nil {
			return translate.Chunk{}, s.err
		}
		s.read()
	}
}

// TryNext implements Buffered: Next, as long as it needs no network read.
func (s *sseStream) TryNext() (translate.Chunk, bool, error) {
	if s.err == nil {
		if e := s.b.ctxError(s.ctx); e != nil { // as in Next
			s.err = e
			s.q = queue{}
		}
	}
	for {
		if ev, ok := s.q.pop(); ok {
			return ev, true, nil
		}
		if s.err != nil {
			return translate.Chunk{}, true, s.err
		}
		if !s.rd.Ready() {
			return translate.Chunk{}, false, nil
		}
		s.read()
	}
}

// read parses one SSE event into the queue, or settles the sticky error.
func (s *sseStream) read() {
	ev, err := s.rd.Next()
	if err != nil {
		s.err = s.readFailure(err)
		return
	}
	var done bool
	var derr error
	s.q.c, done, derr = s.dec.Event(ev.Type, ev.Data, s.q.c[:0])
	s.q.head = 0
	switch {
	case derr != nil:
		s.err = s.b.seal(streamError(derr))
	case done:
		s.err = io.EOF
	}
}

// streamError is the *Error of a stream event its translator reported: an
// upstream error event, or data it could not read.
func streamError(err error) *Error {
	var f *translate.Failure
	if !errors.As(err, &f) || f.Malformed {
		msg := "malformed stream event JSON"
		if f != nil && f.Message != "" {
			msg = f.Message
		}
		return &Error{Kind: KindProtocol, Message: msg}
	}
	msg := f.Message
	if msg == "" {
		msg = "upstream error event"
	}
	return &Error{Kind: KindStream, Type: f.Type, Message: msg}
}

func (s *sseStream) readFailure(err error) error {
	if e := s.b.ctxError(s.ctx); e != nil {
		return e
	}
	switch {
	case errors.Is(err, sse.ErrEventTooLarge):
		return s.b.seal(&Error{Kind: KindProtocol, Message: "stream event exceeds 1 MiB"})
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return s.b.seal(&Error{Kind: KindStream, Message: "stream ended before its end marker (cut or truncated)", Err: io.ErrUnexpectedEOF})
	}
	e := s.b.transportError(s.ctx, err)
	if e.Kind == KindConnection {
		e.Kind = KindStream
		e.Message = "stream cut: " + e.Message
	}
	return e
}

func (s *sseStream) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.err == io.EOF {
		t := time.AfterFunc(drainTimeout, func() { s.body.Close() })
		_, _ = io.CopyN(io.Discard, s.body, maxDrain) // best effort: a drained body lets the connection be reused
		t.Stop()
	}
	s.body.Close() // nothing the caller could act on
	s.rd.Reset(nil)
	readerPool.Put(s.rd)
	s.rd = nil
	if s.err == nil {
		s.err = s.b.seal(&Error{Kind: KindCanceled, Message: "stream closed"})
	}
	s.q = queue{}
	return nil
}

// eventStreamType is the media type of h's Content-Type. The usual
// "text/event-stream" is taken as it is: ParseMediaType was ≈ 0.5 % of the
// gateway's CPU in a profile of streams at c=8.
func eventStreamType(h http.Header) string {
	var ct string
	if v := h["Content-Type"]; len(v) > 0 {
		ct = v[0]
	}
	if ct == "text/event-stream" {
		return ct
	}
	mt, _, _ := mime.ParseMediaType(ct)
	return mt
}

// openStream checks that a 2xx answer really is an event stream before handing
// it out, so a proxy's JSON or HTML page fails as a protocol error up front.
func (b *base) openStream(ctx context.Context, resp *http.Response, dec translate.ChatStream) (Stream, error) {
	mt := eventStreamType(resp.Header)
	if mt != "text/event-stream" {
		resp.Body.Close()
		return nil, b.seal(&Error{Kind: KindProtocol, Message: "expected an event stream, got content type " + quoteOrNone(mt)})
	}
	// The stream keeps only the body. The transport's read loop holds the
	// response until the body is closed, so its header map (about 0.5 KB)
	// would otherwise live as long as the stream; nothing reads it again.
	resp.Header = nil
	return newStream(ctx, b, resp.Body, dec), nil
}

func quoteOrNone(s string) string {
	if s == "" {
		return "none"
	}
	return `"` + s + `"`
}
