package gatewaystatus

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestReportRoundTrip(t *testing.T) {
	at := time.Date(2026, 6, 1, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	for _, r := range []Report{
		{Version: "sha256:aa", At: at},
		{Version: "sha256:aa", RefusedVersion: "sha256:bb", RefusedReason: "alias x: provider y does not exist", At: at},
		{RefusedReason: "snapshot.json: not JSON", At: at},
	} {
		s, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := Parse(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		want := r
		want.At = at.UTC().Round(time.Millisecond)
		if got != want {
			t.Fatalf("round trip of %s: got %+v, want %+v", s, got, want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for name, s := range map[string]string{
		"not JSON":                         "sha256:aa",
		"unknown field":                    `{"version":"v","at":"2026-01-01T00:00:00Z","extra":1}`,
		"trailing data":                    `{"version":"v","at":"2026-01-01T00:00:00Z"} {}`,
		"refused version without a reason": `{"version":"v","refusedVersion":"w","at":"2026-01-01T00:00:00Z"}`,
	} {
		if _, err := Parse(s); err == nil {
			t.Errorf("%s: %q parsed", name, s)
		}
	}
}

func TestShortReason(t *testing.T) {
	const plain = "lgw_abcdefghij_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn"
	cases := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("alias a: provider b does not exist"), "alias a: provider b does not exist"},
		{errors.Join(errors.New("first"), errors.New("second")), "first (and more)"},
		{fmt.Errorf("key %s is bad", plain), "key lgw_abcdefghij_<redacted> is bad"},
		{errors.New("  "), "refused"},
	}
	for _, c := range cases {
		got := ShortReason(c.err)
		if c.err != nil && strings.Contains(got, plain) {
			t.Fatalf("plaintext key kept: %q", got)
		}
		if got != c.want {
			t.Errorf("ShortReason(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	long := ShortReason(errors.New(strings.Repeat("é", 1000)))
	if len(long) > MaxReasonLen || !strings.HasSuffix(long, "...") || !json.Valid([]byte(`"`+long+`"`)) {
		t.Fatalf("long reason: %d bytes, %q...", len(long), long[:20])
	}
}

func TestMergePatchTouchesOneKey(t *testing.T) {
	b, err := MergePatch("llmgw-gateway-0", `{"version":"v"}`)
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]map[string]string
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	if len(p) != 1 || len(p["data"]) != 1 || p["data"]["llmgw-gateway-0"] != `{"version":"v"}` {
		t.Fatalf("patch %s", b)
	}
}
