package translate

import (
	"errors"
	"strings"
	"testing"
)

// eachMember hands out each top-level member as written: its name unquoted,
// its raw name and value byte for byte, still intact once the next member
// is read (a writer copies them after the call).
func TestEachMember(t *testing.T) {
	obj := []byte(` { "a" : 1 , "b\u0063":{"model":"x"} ,"s":"\u00e9<>","e":[] , "long":"` + strings.Repeat("x", 10_000) + `"} `)
	type got struct{ name, rawName, value string }
	var seen []got
	var raws []member
	err := eachMember(obj, func(m *member) error {
		seen = append(seen, got{m.name, string(m.rawName), string(m.value)})
		raws = append(raws, *m)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []got{
		{"a", `"a"`, `1`},
		{"bc", `"b\u0063"`, `{"model":"x"}`},
		{"s", `"s"`, `"\u00e9<>"`},
		{"e", `"e"`, `[]`},
		{"long", `"long"`, `"` + strings.Repeat("x", 10_000) + `"`},
	}
	if len(seen) != len(want) {
		t.Fatalf("members %q, want %q", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Errorf("member %d: %q, want %q", i, seen[i], want[i])
		}
		// Kept past the call: the bytes are still the member's.
		if r := raws[i]; string(r.rawName) != want[i].rawName || string(r.value) != want[i].value {
			t.Errorf("member %d changed after the call: %q %q", i, r.rawName, r.value)
		}
	}
}

func TestEachMemberRejects(t *testing.T) {
	for _, tc := range []struct {
		in      string
		lenient bool
	}{
		{``, false}, {`[]`, false}, {`"s"`, false}, {`null`, false},
		{`{"a":1`, false}, {`{"a"}`, false}, {`{"a":1,}`, false},
		{`{"a":1} {}`, false}, {`{"a":1}]`, false},
		{`{"a":1,"a":2}`, false},
		{"{\"a\":\"\xff\"}", false},
		{`{"a":1} x`, true},
	} {
		var err error
		if tc.lenient {
			err = eachMember([]byte(tc.in), func(*member) error { return nil }, lenient)
		} else {
			err = eachMember([]byte(tc.in), func(*member) error { return nil })
		}
		if err == nil {
			t.Errorf("eachMember(%q, lenient %v) accepted", tc.in, tc.lenient)
		}
	}
}

// What providers send is read with encoding/json's tolerance: a repeated
// name, invalid UTF-8, spaces after the object.
func TestEachMemberLenient(t *testing.T) {
	for _, in := range []string{`{"a":1,"a":2}`, "{\"a\":\"\xff\"}", "{\"a\":1}\n", `{}`} {
		if err := eachMember([]byte(in), func(*member) error { return nil }, lenient); err != nil {
			t.Errorf("eachMember(%q, lenient): %v", in, err)
		}
	}
}

// An error fn returns stops the walk and is eachMember's.
func TestEachMemberStops(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := eachMember([]byte(`{"a":1,"b":2,"c":3}`), func(m *member) error {
		n++
		if m.name == "b" {
			return stop
		}
		return nil
	})
	if err != stop || n != 2 {
		t.Fatalf("error %v after %d members", err, n)
	}
}

func TestUnquote(t *testing.T) {
	for in, want := range map[string]string{
		`"plain"`:         "plain",
		`""`:              "",
		`"caf\u00e9"`:     "café",
		`"a\"b"`:          `a"b`,
		`"\ud83d\ude00"`:  "😀",
		`"bad \u12"`:      "",
		"\"raw \xff\"":    "raw \xff",
		`"mod\u0065l"`:    "model",
		`"tab\there\n"`:   "tab\there\n",
		`"\/slash\\back"`: `/slash\back`,
	} {
		if got := unquote([]byte(in)); got != want {
			t.Errorf("unquote(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestObjectWriter(t *testing.T) {
	var w objectWriter
	w.begin([]byte("prefix:"))
	if got := string(w.end()); got != "prefix:{}" {
		t.Errorf("empty object %q", got)
	}
	w.begin(nil)
	w.raw([]byte(`"a"`), []byte(`{"x":[]}`))
	w.set("b\"", []byte(`1`))
	w.set("é", []byte(`null`))
	if got, want := string(w.end()), `{"a":{"x":[]},"b\"":1,"é":null}`; got != want {
		t.Errorf("object %s, want %s", got, want)
	}
}

func TestQuoted(t *testing.T) {
	for in, want := range map[string]string{
		"chat-alpha": `"chat-alpha"`,
		`a"b\c`:      `"a\"b\\c"`,
		"<é>\n":      `"<é>\n"`,
		"bad \xff":   "\"bad \ufffd\"",
	} {
		if got := string(quoted(in)); got != want {
			t.Errorf("quoted(%q) = %s, want %s", in, got, want)
		}
	}
}
