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

// IsRequestID reports whether s has the shape NewRequestID produces.
func IsRequestID(s string) bool {
	if len(s) != len(RequestIDPrefix)+26 || s[:len(RequestIDPrefix)] != RequestIDPrefix {
		return false
	}
	body := s[len(RequestIDPrefix):]
	if body[0] > '7' {
		return false
	}
	for i := 0; i < len(body); i++ {
		if decodeCrockford(body[i]) < 0 {
			return false
		}
	}
	return true
}

// RequestIDTime returns the millisecond timestamp inside a request id.
func RequestIDTime(s string) (time.Time, bool) {
	if !IsRequestID(s) {
		return time.Time{}, false
	}
	var ms int64
	// The first 10 chars are the top 50 bits: 2 zero bits + the 48-bit ms.
	for i := 0; i < 10; i++ {
		ms = ms<<5 | int64(decodeCrockford(s[len(RequestIDPrefix)+i]))
	}
	return time.UnixMilli(ms).UTC(), true
}

func decodeCrockford(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'Z':
		i := 10
		for _, x := range crockford[10:] {
			if byte(x) == c {
				return i
			}
			i++
		}
	}
	return -1
}
