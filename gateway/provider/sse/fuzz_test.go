package sse

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"
)

// reference is a direct, unoptimised reading of the specification over the whole
// input, with this package's size limit and end-of-stream reporting.
func reference(in []byte, max int) ([]ev, error) {
	var out []ev
	var typ, data []byte
	hasData := false
	first := true
	for len(in) > 0 {
		seg := in
		if i := bytes.IndexByte(in, '\n'); i >= 0 {
			seg = in[:i+1]
		}
		in = in[len(seg):]
		if len(seg) > max+lineSlack {
			return out, ErrEventTooLarge
		}
		for len(seg) > 0 {
			var line []byte
			i := bytes.IndexAny(seg, "\r\n")
			if i < 0 {
				return out, io.ErrUnexpectedEOF
			}
			line = seg[:i]
			if seg[i] == '\r' && i+1 < len(seg) && seg[i+1] == '\n' {
				seg = seg[i+2:]
			} else {
				seg = seg[i+1:]
			}
			if first {
				first = false
				line = bytes.TrimPrefix(line, bom)
			}
			switch {
			case len(line) == 0:
				if hasData {
					out = append(out, ev{string(typ), string(data[:len(data)-1])})
				}
				typ, data, hasData = nil, nil, false
			case line[0] == ':':
			default:
				name, value := line, []byte(nil)
				if i := bytes.IndexByte(line, ':'); i >= 0 {
					name, value = line[:i], line[i+1:]
					value = bytes.TrimPrefix(value, []byte(" "))
				}
				switch string(name) {
				case "data":
					if len(data)+len(value) > max {
						return out, ErrEventTooLarge
					}
					data = append(append(data, value...), '\n')
					hasData = true
				case "event":
					typ = append([]byte(nil), value...)
				}
			}
		}
	}
	if hasData || len(typ) > 0 {
		return out, io.ErrUnexpectedEOF
	}
	return out, io.EOF
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"data: hello\n\n",
		"event: message_start\ndata: {}\n\n",
		"data: a\ndata: b\n\n",
		"event: x\r\ndata: 1\r\n\r\n",
		"data: 1\r\rdata: 2\r\r",
		": ping\n\ndata: [DONE]\n\n",
		"\xEF\xBB\xBFdata: x\n\n",
		"data: x\n\ndata: y",
		"data:" + string(bytes.Repeat([]byte("z"), 80)) + "\n\n",
		"event\ndata\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, max := range []int{64, DefaultMaxEventSize} {
			want, wantErr := reference(in, max)
			readers := map[string]*Reader{
				"whole":    NewReaderSize(bytes.NewReader(in), 4096, max),
				"smallbuf": NewReaderSize(bytes.NewReader(in), 16, max),
				"onebyte":  NewReaderSize(iotest.OneByteReader(bytes.NewReader(in)), 16, max),
				// Reads of varied sizes, some filling the buffer and some
				// leaving room, move the input between the small and the
				// large buffer (128 B, small 16 B) at every point of a line.
				"switching": NewReaderSize(&stutterReader{src: in}, 128, max),
			}
			for name, r := range readers {
				got, err := collect(r)
				if !equal(got, want) || err != wantErr {
					t.Fatalf("max %d %s: got %q, %v; reference %q, %v", max, name, got, err, want, wantErr)
				}
			}
		}
	})
}
