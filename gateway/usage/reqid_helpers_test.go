package usage

import "time"

// IsRequestID reports whether s has the shape NewRequestID produces (tests
// check ids with it; the gateway never parses its own ids).
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
