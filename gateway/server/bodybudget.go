package server

import (
	"math"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// bodyBudget bounds the request bodies that the requests in flight hold
// together. One body may be as large as limits.maxBodyBytes (20 MiB by
// default, room for images), and a burst of such requests would otherwise
// take a replica past its memory limit; past the budget a request is
// refused with 503 gateway_overloaded before its body is read, like one
// past maxConcurrent.
type bodyBudget struct {
	left atomic.Int64
}

// defaultBodyBudget is a quarter of the Go runtime's memory limit
// (GOMEMLIMIT, which the chart sets from the container's), or 256 MiB when
// there is none.
func defaultBodyBudget() int64 {
	if limit := debug.SetMemoryLimit(-1); limit > 0 && limit < math.MaxInt64 {
		return max(limit/4, 64<<20)
	}
	return 256 << 20
}

func newBodyBudget(n int64) *bodyBudget {
	b := &bodyBudget{}
	b.left.Store(n)
	return b
}

// take reserves n bytes; false when they are not left.
func (b *bodyBudget) take(n int64) bool {
	if b.left.Add(-n) >= 0 {
		return true
	}
	b.left.Add(n)
	return false
}

func (b *bodyBudget) give(n int64) { b.left.Add(n) }

// reserveBody takes from the budget what the request's body may hold
// (takeBody).
func (x *exchange) reserveBody(maxBody int64) *apiError {
	n, aerr := x.s.takeBody(x.r, maxBody)
	x.bodyHeld = n
	return aerr
}

// takeBody takes from the budget what r's body may hold: its
// Content-Length, or the body limit when it is sent without one. It
// returns what it took, for bodies.give.
func (s *Server) takeBody(r *http.Request, maxBody int64) (int64, *apiError) {
	n := r.ContentLength
	if n < 0 || n > maxBody {
		n = maxBody // a declared length over the limit is refused by readBody
	}
	if !s.bodies.take(n) {
		return 0, &apiError{status: http.StatusServiceUnavailable, typ: typeOverloaded, code: "gateway_overloaded",
			message: "the gateway holds as many request bodies as its memory allows; retry shortly", retryAfter: time.Second}
	}
	return n, nil
}

// releaseBody gives the body's reservation back, once.
func (x *exchange) releaseBody() {
	if x.bodyHeld > 0 {
		x.s.bodies.give(x.bodyHeld)
		x.bodyHeld = 0
	}
}
