package translate

import "bytes"

// shareMin is the size from which an image's base64 data in a translated
// request is sent from the caller's own bytes rather than from the request
// the translator encoded: below it a copy costs nothing worth a segment.
const shareMin = 4 << 10

// imageData finds the base64 data of the next image an encoder wrote in
// enc at or after at: its bounds, or ok false when there is none.
type imageData func(enc []byte, at int) (start, end int, ok bool)

// shareImages splits an encoded request into segments in which every large
// base64 image's data (found by next) is the caller's own bytes (found in
// body, the caller's request, which carries the same base64 text): a
// request holds one copy of its images, not two, for as long as its
// attempts last. The encoded request's other parts are copied out, so that
// it can be let go of.
func shareImages(enc, body []byte, next imageData) [][]byte {
	var segs [][]byte
	from := 0 // enc[from:] is not in segs yet
	at := 0
	for {
		start, end, ok := next(enc, at)
		if !ok {
			break
		}
		at = end
		data := enc[start:end]
		if len(data) < shareMin {
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

// antImageData starts the data member of an encoded base64 image source
// of a Messages request: the encoder writes ImageSource's members in
// declaration order (...image/png","data":"<data>").
var (
	antImageData  = []byte(`"type":"base64","media_type":"`)
	antDataMember = []byte(`","data":"`)
)

// antShareImages is shareImages for an encoded Messages request.
func antShareImages(enc, body []byte) [][]byte {
	return shareImages(enc, body, func(enc []byte, at int) (int, int, bool) {
		i := bytes.Index(enc[at:], antImageData)
		if i < 0 {
			return 0, 0, false
		}
		at += i + len(antImageData)
		j := bytes.Index(enc[at:], antDataMember)
		if j < 0 {
			return 0, 0, false
		}
		start := at + j + len(antDataMember)
		end := bytes.IndexByte(enc[start:], '"')
		if end < 0 {
			return 0, 0, false
		}
		return start, start + end, true
	})
}

// aoImageURL and aoImageBase64 frame the base64 data of a data URL the
// encoder wrote for an image part of a chat-completions request:
// `"url":"data:<media type>;base64,<data>"`.
var (
	aoImageURL    = []byte(`"url":"data:`)
	aoImageBase64 = []byte(`;base64,`)
)

// aoShareImages is shareImages for an encoded chat-completions request.
func aoShareImages(enc, body []byte) [][]byte {
	return shareImages(enc, body, func(enc []byte, at int) (int, int, bool) {
		for {
			i := bytes.Index(enc[at:], aoImageURL)
			if i < 0 {
				return 0, 0, false
			}
			at += i + len(aoImageURL)
			end := bytes.IndexByte(enc[at:], '"')
			if end < 0 {
				return 0, 0, false
			}
			end += at
			if j := bytes.Index(enc[at:end], aoImageBase64); j >= 0 {
				return at + j + len(aoImageBase64), end, true
			}
			at = end // a data URL that is not base64: sent as encoded
		}
	})
}
