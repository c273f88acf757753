package translate

import "bytes"

// aoImageURL and aoImageBase64 frame the base64 data of a data URL the
// encoder wrote for an image block: `"url":"data:<media type>;base64,<data>"`.
var (
	aoImageURL    = []byte(`"url":"data:`)
	aoImageBase64 = []byte(`;base64,`)
)

// aoShareImages splits an encoded chat-completions request into segments
// in which every large base64 image's data is the caller's own bytes
// (found in body, the caller's request, whose image source holds the same
// base64 text): a request holds one copy of its images, not two, for as
// long as its attempts last. The encoded request's other parts are copied
// out, so that it can be let go of. It is antShareImages' mirror, with the
// same threshold.
func aoShareImages(enc, body []byte) [][]byte {
	var segs [][]byte
	from := 0 // enc[from:] is not in segs yet
	at := 0
	for {
		i := bytes.Index(enc[at:], aoImageURL)
		if i < 0 {
			break
		}
		at += i + len(aoImageURL)
		end := bytes.IndexByte(enc[at:], '"')
		if end < 0 {
			break
		}
		end += at
		j := bytes.Index(enc[at:end], aoImageBase64)
		if j < 0 {
			at = end
			continue
		}
		start := at + j + len(aoImageBase64)
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
