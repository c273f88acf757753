package provider

import "io"

// requestBody is an upstream request's body that lets go of its bytes once
// they are read or it is closed. The transport keeps the request, body and
// GetBody included, until the answer ends: for a stream that is its whole
// life, and a long prompt's encoded copy stayed with it (docs/BENCHMARK.md,
// "tenth round"). net/http closes a request's body once it is written.
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
