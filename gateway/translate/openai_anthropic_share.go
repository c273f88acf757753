package translate

import "bytes"

// antShareMin is the size from which an image's base64 data in a
// translated request is sent from the caller's own bytes rather than from
// the request the translator encoded: below it a copy costs nothing worth
// a segment.
const antShareMin = 4 << 10

// antImageData starts the data member of an encoded base64 image source:
// the encoder writes ImageSource's members in declaration order.
var antImageData = []byte(`"type":"base64","media_type":"`)

// antShareImages splits an encoded Messages request into segments in which
// every large base64 image's data is the caller's own bytes (found in
// body, the caller's request, where the data URL carries it unchanged): a
// request holds one copy of its images, not two, for as long as its
// attempts last. The encoded request's other parts are copied out, so that
// it can be let go of.
func antShareImages(enc, body []byte) [][]byte {
	var segs [][]byte
	from := 0 // enc[from:] is not in segs yet
	at := 0
	for {
		i := bytes.Index(enc[at:], antImageData)
		if i < 0 {
			break
		}
		at += i + len(antImageData)
		// ...image/png","data":"<data>"
		j := bytes.Index(enc[at:], []byte(`","data":"`))
		if j < 0 {
			break
		}
		start := at + j + len(`","data":"`)
		end := bytes.IndexByte(enc[start:], '"')
		if end < 0 {
			break
		}
		end += start
		at = end
		data := enc[start:end]
		if len(data) < antShareMin {
			continue
		}
		k := bytes.Index(body, data)
		if k < 0 {
			continue // escaped in the caller's body: sent as encoded
		}
		segs = append(segs, bytes.Clone(enc[from:start]), body[k:k+len(data)])
		from = end
	}
	if segs == nil {
		return [][]byte{enc}
	}
	return append(segs, bytes.Clone(enc[from:]))
}
