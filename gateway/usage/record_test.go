package usage

import (
	"reflect"
	"testing"
)

// The attempts column reads back as the list that was written, whatever the
// strings hold, and keeps its compact one-letter form.
func TestAttemptsColumnRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []Attempt
		want []Attempt // when it differs from in
	}{
		{"none", nil, nil},
		{"one, every field", []Attempt{{Provider: "alpha", Model: "alpha-large", Outcome: "success", StatusCode: 200, LatencyMs: 12}}, nil},
		{"a fallback", []Attempt{
			{Provider: "alpha", Model: "m", Outcome: "upstream_5xx", StatusCode: 503, LatencyMs: 3},
			{Provider: "beta", Model: "b", Outcome: "success", StatusCode: 200, LatencyMs: 40},
		}, nil},
		{"every field empty", []Attempt{{}, {}}, nil},
		{"only numbers", []Attempt{{StatusCode: -1, LatencyMs: 1 << 40}}, nil},
		{"strings that need escaping", []Attempt{{Provider: `q"uo\te`, Model: "tab\tnl\n<&>\u2028", Outcome: "ünïcödé 漢字"}}, nil},
		{"invalid UTF-8", []Attempt{{Provider: "a\xffb", Model: string([]byte{0xc3})}},
			[]Attempt{{Provider: "a\uFFFDb", Model: "\uFFFD"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			col := encodeAttempts(tc.in)
			got, err := decodeAttempts(col)
			if err != nil {
				t.Fatalf("column %s: %v", col, err)
			}
			want := tc.want
			if want == nil {
				want = tc.in
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("column %s reads as %+v, want %+v", col, got, want)
			}
		})
	}
	const want = `[{"p":"alpha","m":"alpha-large","o":"ok","s":200,"l":3},{}]`
	if got := encodeAttempts([]Attempt{{Provider: "alpha", Model: "alpha-large", Outcome: OutcomeOK, StatusCode: 200, LatencyMs: 3}, {}}); got != want {
		t.Fatalf("column = %s, want %s", got, want)
	}
	if got := encodeAttempts(nil); got != "[]" {
		t.Fatalf("empty column = %s, want []", got)
	}
}
