package snapshot

import (
	"slices"
	"testing"
)

// TestFindPlaintextKeysWalksEveryString: the per-type walk plans reach
// strings behind interfaces, pointers, arrays and recursive types, skip
// unexported fields, and name each path as before.
func TestFindPlaintextKeysWalksEveryString(t *testing.T) {
	type node struct {
		Name string `json:"name"`
		Next *node  `json:"next"`
	}
	type holder struct {
		Any    any       `json:"any"`
		Arr    [2]string `json:"arr"`
		List   *node     `json:"list"`
		N      int       `json:"n"`
		hidden string
	}
	v := holder{Any: &Key{ID: plainA}, Arr: [2]string{"", plainB}, List: &node{Name: "a", Next: &node{Name: plainA}}, hidden: plainA}
	var got []string
	for _, err := range findPlaintextKeys(v) {
		got = append(got, err.Error())
	}
	slices.Sort(got)
	want := []string{
		"any.id: looks like a plaintext gateway key; store only its sha256: hash",
		"arr[1]: looks like a plaintext gateway key; store only its sha256: hash",
		"list.next.name: looks like a plaintext gateway key; store only its sha256: hash",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}
