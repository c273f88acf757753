package snapshot

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmgw/llmgw/api/keyformat"
)

// FuzzParse: Parse never panics, never quotes a plaintext key in an error, and
// whatever it accepts is valid, encodes canonically, contains no plaintext key,
// and survives a round trip unchanged.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(minimal))
	f.Add([]byte(`{"keys":[{"id":"` + plainA + `"}]}`))
	f.Add([]byte(`{"providers":[{"name":"p","name":"q"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			if keyformat.LooksLikeKey(err.Error()) {
				t.Fatalf("error quotes a plaintext key: %v", err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("Parse accepted an invalid snapshot: %v", err)
		}
		enc, err := Encode(s)
		if err != nil {
			t.Fatalf("Encode rejected a parsed snapshot: %v", err)
		}
		if keyformat.LooksLikeKey(string(enc)) {
			t.Fatal("accepted snapshot contains a plaintext key")
		}
		again, err := Parse(enc)
		if err != nil {
			t.Fatalf("canonical form does not parse: %v\n%s", err, enc)
		}
		enc2, _ := Encode(again)
		if again.Version != s.Version || !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed the snapshot:\n%s\n%s", enc, enc2)
		}
	})
}
