package provider

import (
	"bytes"
	"context"
	"io"
	"net/http/httptrace"
	"sync"
)

// flatBody is the largest body sent as one slice: a translator hands a
// body over as segments (a pass-through body shares the caller's bytes), and
// one below this is joined, so that net/http sends the request's head and
// body in one write (it does for a *bytes.Reader). A larger body, a prompt
// with images, is sent segment by segment and never copied: a request holds
// one copy of it.
const flatBody = 64 << 10

// requestBody is an upstream request's body that lets go of its bytes once
// they are read or it is closed. The transport keeps the request, body and
// GetBody included, until the answer ends: for a stream that is its whole
// life, and a long prompt would stay with it. net/http closes a request's
// body once it is written. GetBody hands one out for a request sent again;
// the first send uses a sentBody.
//
// net/http may close a body on another goroutine than the one reading it
// (HTTP/2 aborts a stream that way), so its state is behind a mutex.
type requestBody struct {
	mu   sync.Mutex
	segs [][]byte
}

func (r *requestBody) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.segs) > 0 && len(r.segs[0]) == 0 {
		r.segs = r.segs[1:]
	}
	if len(r.segs) == 0 {
		r.segs = nil
		return 0, io.EOF
	}
	n := copy(p, r.segs[0])
	r.segs[0] = r.segs[0][n:]
	return n, nil
}

func (r *requestBody) Close() error {
	r.mu.Lock()
	r.segs = nil
	r.mu.Unlock()
	return nil
}

// bodyLen is the length of a segmented body.
func bodyLen(segs [][]byte) int {
	n := 0
	for _, s := range segs {
		n += len(s)
	}
	return n
}

// joinSmall joins a body of several segments up to flatBody into one.
func joinSmall(segs [][]byte) [][]byte {
	if len(segs) <= 1 || bodyLen(segs) > flatBody {
		return segs
	}
	return [][]byte{bytes.Join(segs, nil)}
}

// sentBody is the first send's body. One segment is a *bytes.Reader behind
// io.NopCloser, which net/http knows to be in memory, so the request's head
// and body go out in one write; for any other body type the transport
// flushes the head on its own first. The reader cannot let go of its bytes
// itself the way requestBody does, so the trace's WroteRequest, which the
// transport calls on its writing goroutine once the body has been copied
// out, empties it.
type sentBody struct {
	r     bytes.Reader
	rest  requestBody // a body of several segments
	trace httptrace.ClientTrace
}

// newSentBody returns the body for segs and ctx with the trace that empties
// it once written.
func newSentBody(ctx context.Context, segs [][]byte) (context.Context, io.ReadCloser) {
	s := &sentBody{}
	s.trace.WroteRequest = s.wrote
	ctx = httptrace.WithClientTrace(ctx, &s.trace)
	if len(segs) == 1 {
		s.r.Reset(segs[0])
		return ctx, io.NopCloser(&s.r)
	}
	s.rest.segs = append([][]byte(nil), segs...) // Read shortens the segments it holds
	return ctx, &s.rest
}

func (s *sentBody) wrote(httptrace.WroteRequestInfo) {
	s.r.Reset(nil)
	_ = s.rest.Close()
}
