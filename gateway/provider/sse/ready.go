package sse

import "bytes"

// Ready reports whether Next would return without reading from the
// underlying reader: an event with data is complete in what is already
// buffered, or the stream has ended. A relay uses it to write the events that
// arrived together with one flush instead of one each. It may say false when
// Next would in fact not block (lines ending in a bare CR), never true when it
// would, so a caller that flushes on false never holds an event back.
func (r *Reader) Ready() bool {
	if r.err != nil || r.eof {
		return true
	}
	hasData := r.hasData
	for _, b := range [2][]byte{r.rest, r.in.buffered()} {
		for len(b) > 0 {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				return false // an unterminated line: the rest is still on its way
			}
			line := bytes.TrimSuffix(b[:i], []byte{'\r'})
			b = b[i+1:]
			switch {
			case bytes.IndexByte(line, '\r') >= 0:
				return false // bare-CR lines: Next's rules, not worth repeating here
			case len(line) == 0:
				if hasData {
					return true
				}
				// Next skips an event without data and reads on.
			case bytes.HasPrefix(line, []byte("data")) && (len(line) == 4 || line[4] == ':'):
				hasData = true
			}
		}
	}
	return false
}
