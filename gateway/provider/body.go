package provider

import (
	"bytes"
	"context"
	"io"
	"net/http/httptrace"
)

// requestBody is an upstream request's body that lets go of its bytes once
// they are read or it is closed. The transport keeps the request, body and
// GetBody included, until the answer ends: for a stream that is its whole
// life, and a long prompt's encoded copy would stay with it. net/http closes a request's body once it is written.
// GetBody hands one out for a request sent again; the first send uses a
// sentBody.
type requestBody struct {
	b   []byte
	off int
}

func (r *requestBody) Read(p []byte) (int, error) {
	if r.off >= len(r.b) {
		r.b = nil
		return 0, io.EOF
	}
	n := copy(p, r.b[r.off:])
	r.off += n
	return n, nil
}

func (r *requestBody) Close() error {
	r.b = nil
	return nil
}

// sentBody is the first send's body: a *bytes.Reader behind io.NopCloser,
// which net/http knows to be in memory, so the request's head and body go
// out in one write. For any other body type the transport flushes the head
// on its own first: a second system call and TCP segment for every
// request, and a copy buffer the size of the body. The reader cannot let go of its bytes itself the
// way requestBody does, so the trace's WroteRequest, which the transport
// calls on its writing goroutine once the body has been copied out, empties
// it.
type sentBody struct {
	r     bytes.Reader
	trace httptrace.ClientTrace
}

// newSentBody returns the body for b and ctx with the trace that empties
// it once written.
func newSentBody(ctx context.Context, b []byte) (context.Context, io.ReadCloser) {
	s := &sentBody{}
	s.r.Reset(b)
	s.trace.WroteRequest = s.wrote
	return httptrace.WithClientTrace(ctx, &s.trace), io.NopCloser(&s.r)
}

func (s *sentBody) wrote(httptrace.WroteRequestInfo) { s.r.Reset(nil) }
