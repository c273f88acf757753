package translate

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"unsafe"

	"github.com/go-json-experiment/json"
)

// A large base64 image goes to the Anthropic provider from the caller's own
// bytes: one copy per request, whatever the number of images; a small one,
// or one whose data the caller escaped, is encoded as usual. Either way the
// segments join into the request the translator encodes.
func TestOpenAIToAnthropicSharesLargeImages(t *testing.T) {
	big := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 40<<10))
	small := base64.StdEncoding.EncodeToString([]byte("tiny"))
	other := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xff, 0xd8, 0xff, '?'}, 40<<10))
	escaped := strings.ReplaceAll(other, "/", `\/`)
	part := func(data string) string {
		return `{"type":"image_url","image_url":{"url":"data:image/png;base64,` + data + `"}}`
	}
	body := []byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"two images"},` +
		part(big) + `,` + part(small) + `,` + part(big) + `,` + part(escaped) + `]}]}`)
	segs, err := openAIToAnthropic().Request(&ChatRequest{Body: body}, "claude")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Messages []struct {
			Content []struct {
				Source *struct {
					Data string `json:"data"`
				} `json:"source"`
			} `json:"content"`
		} `json:"messages"`
	}
	joined := bytes.Join(segs, nil)
	if err := json.Unmarshal(joined, &r); err != nil {
		t.Fatalf("%v: %.300s", err, joined)
	}
	var datas []string
	for _, b := range r.Messages[0].Content {
		if b.Source != nil {
			datas = append(datas, b.Source.Data)
		}
	}
	if len(datas) != 4 || datas[0] != big || datas[1] != small || datas[2] != big || datas[3] != other || other == escaped {
		t.Fatalf("images sent: %d, equal to the caller's: %v", len(datas), len(datas) == 4 && datas[0] == big)
	}
	lo, hi := uintptr(unsafe.Pointer(&body[0])), uintptr(unsafe.Pointer(&body[len(body)-1]))
	shared, copied := 0, 0
	for _, s := range segs {
		if len(s) == 0 {
			continue
		}
		if p := uintptr(unsafe.Pointer(&s[0])); p >= lo && p <= hi {
			shared += len(s)
		} else {
			copied += len(s)
		}
	}
	// The two unescaped large images are shared; the escaped one and
	// everything else is encoded.
	if shared != 2*len(big) || copied > len(other)+4096 {
		t.Fatalf("shared %d B (want %d), copied %d B", shared, 2*len(big), copied)
	}
}
