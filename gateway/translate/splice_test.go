package translate

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

func TestSplice(t *testing.T) {
	obj := []byte("0123456789")
	for _, tc := range []struct {
		name  string
		edits []edit
		want  []string
	}{
		{"none", nil, []string{"0123456789"}},
		{"replace inside", []edit{{3, 5, []byte("ab")}}, []string{"012", "ab", "56789"}},
		{"insert", []edit{{4, 4, []byte("x")}}, []string{"0123", "x", "456789"}},
		{"delete", []edit{{4, 6, nil}}, []string{"0123", "6789"}},
		{"at both ends", []edit{{9, 10, []byte("Z")}, {0, 1, []byte("A")}}, []string{"A", "12345678", "Z"}},
		{"out of order", []edit{{7, 8, []byte("c")}, {1, 2, []byte("a")}, {4, 4, []byte("b")}},
			[]string{"0", "a", "23", "b", "456", "c", "89"}},
		{"adjacent", []edit{{2, 3, []byte("x")}, {3, 4, []byte("y")}}, []string{"01", "x", "y", "456789"}},
		{"whole", []edit{{0, 10, []byte("all")}}, []string{"all"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			segs := splice(obj, tc.edits)
			var got []string
			for _, s := range segs {
				if len(s) == 0 {
					t.Errorf("empty segment in %q", segs)
				}
				got = append(got, string(s))
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("segments %q, want %q", got, tc.want)
			}
		})
	}
	// The caller's bytes between the edits are the caller's, not copies.
	segs := splice(obj, []edit{{3, 5, []byte("ab")}})
	if !within(segs[0], obj) || !within(segs[2], obj) {
		t.Fatal("the unchanged parts were copied")
	}
}

func TestMemberSpans(t *testing.T) {
	for _, tc := range []struct {
		name, obj string
		names     []string
		want      map[string]string // name → value as written
	}{
		{"top level only", `{"a":{"model":1},"model":"m","b":[{"model":2}]}`, []string{"model"}, map[string]string{"model": `"m"`}},
		{"spaces kept out of the value", `{ "model" :  "m"  , "s" : { "x" : 1 } }`, []string{"model", "s"}, map[string]string{"model": `"m"`, "s": `{ "x" : 1 }`}},
		{"escaped name", `{"mod\u0065l":null}`, []string{"model"}, map[string]string{"model": `null`}},
		{"absent", `{"a":1}`, []string{"model"}, map[string]string{}},
		{"empty object", `{}`, []string{"model"}, map[string]string{}},
		{"values of every kind", `{"n":-1.5e3,"t":true,"s":"\"}","a":[1,{}]}`, []string{"n", "t", "s", "a"},
			map[string]string{"n": `-1.5e3`, "t": `true`, "s": `"\"}"`, "a": `[1,{}]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := []byte(tc.obj)
			o, err := memberSpans(obj, tc.names...)
			if err != nil {
				t.Fatal(err)
			}
			found, closing := o.found, o.closing
			if obj[closing] != '}' || strings.TrimSpace(tc.obj[closing+1:]) != "" {
				t.Errorf("closing brace at %d of %s", closing, obj)
			}
			if len(found) != len(tc.want) {
				t.Errorf("found %d members, want %d", len(found), len(tc.want))
			}
			for name, want := range tc.want {
				sp, ok := found[name]
				if !ok {
					t.Errorf("%s not found", name)
					continue
				}
				if got := string(obj[sp.start:sp.end]); got != want || string(sp.value) != want {
					t.Errorf("%s: span %q value %q, want %q", name, got, sp.value, want)
				}
				if !within(sp.value, obj) {
					t.Errorf("%s: value copied", name)
				}
			}
		})
	}
}

func TestMemberSpansRejects(t *testing.T) {
	for _, in := range []string{``, `[]`, `"x"`, `{"a":1`, `{"a":}`, `{"a":1,"a":2}`, "{\"a\":\"\xff\"}"} {
		if _, err := memberSpans([]byte(in), "a"); err == nil {
			t.Errorf("memberSpans(%q) accepted", in)
		}
	}
}

func TestSetMembers(t *testing.T) {
	for _, tc := range []struct {
		obj, want string
	}{
		{`{"model":"a","x":1}`, `{"model":"v","x":1,"s":2}`},
		{`{"x":1}`, `{"x":1,"model":"v","s":2}`},
		{`{"x":1 }`, `{"x":1 ,"model":"v","s":2}`},
		{`{"s":0,"model":"a"}`, `{"s":2,"model":"v"}`},
		{`{}`, `{"model":"v","s":2}`},
		{"{\n}", "{\n\"model\":\"v\",\"s\":2}"},
		{" {} ", ` {"model":"v","s":2} `}, // space before the object (FuzzOpenAIPassthroughRequest)
	} {
		obj := []byte(tc.obj)
		o, err := memberSpans(obj, "model", "s")
		if err != nil {
			t.Fatal(err)
		}
		edits := setMembers(o, memberValue{"model", []byte(`"v"`)}, memberValue{"s", []byte(`2`)})
		got := bytes.Join(splice(obj, edits), nil)
		if string(got) != tc.want {
			t.Errorf("%s → %s, want %s", tc.obj, got, tc.want)
		}
	}
}

// Every edit of a pass-through request, made on bodies with members in
// every order, keeps the body one valid JSON object.
func TestSpliceKeepsJSONValid(t *testing.T) {
	members := []string{`"model":"a"`, `"stream_options":{"x":1}`, `"messages":[]`, `"n":1`}
	for i := range members {
		for j := range members {
			body := []byte("{" + strings.Join(rotate(members, i)[:j+1], ",") + "}")
			for _, stream := range []bool{false, true} {
				segs, err := Chat(ProtocolOpenAI).Request(&ChatRequest{Body: body, Stream: stream}, "m")
				if err != nil {
					t.Fatal(err)
				}
				got := bytes.Join(segs, nil)
				m := decodeObject(t, got)
				if m["model"] != "m" {
					t.Errorf("%s (stream %v) → %s", body, stream, got)
				}
				if opts, _ := m["stream_options"].(map[string]any); stream && opts["include_usage"] != true {
					t.Errorf("%s (stream %v) → %s", body, stream, got)
				}
			}
		}
	}
}

func rotate(s []string, n int) []string {
	return append(append([]string(nil), s[n:]...), s[:n]...)
}

func BenchmarkOpenAIPassthroughRequest(b *testing.B) {
	for _, n := range []int{1 << 10, 1 << 20} {
		body := []byte(`{"model":"chat-alpha","messages":[{"role":"user","content":"` + strings.Repeat("a", n) + `"}],"stream":true}`)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := Chat(ProtocolOpenAI).Request(&ChatRequest{Body: body, Stream: true}, "gpt-4.1"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
