package usage

import (
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// RequestIDPrefix starts every gateway request id.
const RequestIDPrefix = "req_"

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// idClock holds the last issued (milliseconds << 16 | sequence). A CAS on it
// is all the coordination NewRequestID needs: no mutex.
var idClock atomic.Uint64

// NewRequestID returns "req_" + 26 Crockford base32 characters encoding 128
// bits, like a ULID: 48 bits of Unix milliseconds, a 16-bit sequence, then
// 64 random bits.
//
// Within a process ids are strictly increasing in the order they are issued:
// the (milliseconds, sequence) pair only moves forward, even if the wall
// clock steps back or more than 65536 ids are taken in one millisecond (the
// sequence then carries into the millisecond field, running a little ahead
// of the clock). Lexicographic order is therefore issue order. Across
// replicas the 64 random bits keep ids unique, and the millisecond prefix
// keeps them time-ordered to within clock skew.
func NewRequestID() string {
	var next uint64
	for {
		last := idClock.Load()
		now := uint64(time.Now().UnixMilli()) << 16
		next = now
		if now <= last {
			next = last + 1
		}
		if idClock.CompareAndSwap(last, next) {
			break
		}
	}
	// math/rand/v2's top-level source is per-thread ChaCha8, seeded from the
	// OS: unpredictable enough for an identifier and lock-free.
	return encodeRequestID(next, rand.Uint64())
}

func encodeRequestID(hi, lo uint64) string {
	var b [len(RequestIDPrefix) + 26]byte
	copy(b[:], RequestIDPrefix)
	out := b[len(RequestIDPrefix):]
	// 26 chars hold 130 bits; the 128-bit value is right-aligned, so the
	// first char carries only 3 bits and is always 0-7.
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(b[:])
}
