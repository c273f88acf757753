package mockproviders

import (
	"strings"
	"testing"
)

// pngData is a few bytes of base64, enough for a mock that never decodes images.
const pngData = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="

func TestImagesCount(t *testing.T) {
	tests := []struct {
		name   string
		fl     Flavor
		parts  string // the user message's content array
		images int
		text   int // tokens of the text parts
	}{
		{"alpha https and data URL", Alpha, `[{"type":"text","text":"what is in these"},` +
			`{"type":"image_url","image_url":{"url":"https://example.invalid/cat.png","detail":"low"}},` +
			`{"type":"image_url","image_url":{"url":"data:image/png;base64,` + pngData + `"}}]`, 2, 4},
		{"alpha audio and file count like images", Alpha, `[{"type":"text","text":"listen"},{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}},` +
			`{"type":"file","file":{"file_id":"file-1"}}]`, 2, 1},
		{"beta base64, url and file images", Beta, `[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + pngData + `"},"cache_control":{"type":"ephemeral"}},` +
			`{"type":"image","source":{"type":"url","url":"https://example.invalid/a.jpg"}},` +
			`{"type":"image","source":{"type":"file","file_id":"file_1"}},{"type":"text","text":"compare them"}]`, 3, 2},
		{"beta documents: text counts as text, others as images", Beta, `[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"three word doc"},"title":"t","citations":{"enabled":true}},` +
			`{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0="}},` +
			`{"type":"document","source":{"type":"content","content":[{"type":"text","text":"x"}]}},{"type":"text","text":"summarise"}]`, 2, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMock(t, Options{Flavor: tt.fl})
			res := m.do(t, t.Context(), chatBody(tt.fl, `[{"role":"user","content":`+tt.parts+`}]`, false), nil)
			if res.resp.StatusCode != 200 {
				t.Fatalf("%d %s", res.resp.StatusCode, res.body)
			}
			a := decodeAnswer(t, tt.fl, res.body)
			if want := tt.text + tt.images*ImageInputTokens; a.in != want {
				t.Fatalf("input tokens %d, want %d", a.in, want)
			}
		})
	}
}

// TestImagesChangeTheAnswer: the same words with an image are another
// conversation; without images the hash is what it always was.
func TestImagesChangeTheAnswer(t *testing.T) {
	plain, withImage := chat("m", "look"), chat("m", "look")
	withImage.messages[0].images = 1
	if a, b := buildAnswer(Alpha, plain, 4), buildAnswer(Alpha, withImage, 4); a.text == b.text || a.id == b.id {
		t.Fatalf("an image does not change the answer: %q", a.text)
	}
	if a, b := buildAnswer(Alpha, plain, 4), buildAnswer(Alpha, chat("m", "look"), 4); a.text != b.text {
		t.Fatal("not deterministic")
	}
}

func TestImageErrors(t *testing.T) {
	tests := []struct {
		name string
		fl   Flavor
		msg  string // one message
		want string
	}{
		{"alpha ftp URL", Alpha, `{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/y.png"}}]}`, "http(s) URL or a data: URL"},
		{"alpha data URL not base64", Alpha, `{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,@@@"}}]}`, "data:image/<type>;base64"},
		{"alpha data URL of text", Alpha, `{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:text/plain;base64,AAAA"}}]}`, "data:image/<type>;base64"},
		{"alpha missing image_url", Alpha, `{"role":"user","content":[{"type":"image_url"}]}`, "image_url is required"},
		{"alpha bad detail", Alpha, `{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://a/b","detail":"max"}}]}`, "detail"},
		{"alpha image in a system message", Alpha, `{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://a/b"}}]}`, `"image_url" is not allowed in a system message`},
		{"alpha image in an assistant message", Alpha, `{"role":"assistant","content":[{"type":"image_url","image_url":{"url":"https://a/b"}}]}`, "not allowed in a assistant message"},
		{"alpha unknown part", Alpha, `{"role":"user","content":[{"type":"video"}]}`, `"video" is not allowed`},
		{"alpha text part without text", Alpha, `{"role":"user","content":[{"type":"text"}]}`, "text is required"},
		{"beta bad media type", Beta, `{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/bmp","data":"AAAA"}}]}`, "media_type"},
		{"beta bad base64", Beta, `{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"***"}}]}`, "base64 data"},
		{"beta relative URL", Beta, `{"role":"user","content":[{"type":"image","source":{"type":"url","url":"/a.png"}}]}`, "http(s) URL"},
		{"beta file without id", Beta, `{"role":"user","content":[{"type":"image","source":{"type":"file"}}]}`, "file_id"},
		{"beta unknown source", Beta, `{"role":"user","content":[{"type":"image","source":{"type":"path","url":"x"}}]}`, `"path" is not one of base64, url, file`},
		{"beta image in an assistant turn", Beta, `{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"image","source":{"type":"url","url":"https://a/b"}}]}`, "not a content block type of a assistant"},
		{"beta document without source", Beta, `{"role":"user","content":[{"type":"document"}]}`, "source: field required"},
		{"beta unknown block", Beta, `{"role":"user","content":[{"type":"hologram"}]}`, `"hologram" is not a content block type`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMock(t, Options{Flavor: tt.fl})
			res := m.do(t, t.Context(), chatBody(tt.fl, `[`+tt.msg+`]`, false), nil)
			if res.resp.StatusCode != 400 {
				t.Fatalf("%d %s", res.resp.StatusCode, res.body)
			}
			if _, _, msg := errorType(t, tt.fl, res.body); !strings.Contains(msg, tt.want) {
				t.Fatalf("message %q, want %q", msg, tt.want)
			}
		})
	}
}
