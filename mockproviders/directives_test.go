package mockproviders

import (
	"strings"
	"testing"
	"unsafe"
)

func TestParseDirectives(t *testing.T) {
	tests := []struct {
		name        string
		text        string
		alpha, beta string // Fault.String() per flavor
	}{
		{"no directive", "hello there", "", ""},
		{"empty directive", "@mock", "", ""},
		{"prose starting with @mock word", "@mockingbird sings\n@mocked", "", ""},
		{"example from the issue", "@mock alpha:status=503 beta:chunks=5", "status=503", "chunks=5"},
		{"star applies to both", "@mock *:delay_ms=200", "delay_ms=200", "delay_ms=200"},
		{"specific overrides star either order", "@mock alpha:status=429 *:status=503 *:retry_after=2", "status=429 retry_after=2", "status=503 retry_after=2"},
		{"every key", "@mock alpha:status=500 alpha:retry_after=0 alpha:delay_ms=1 alpha:first_byte_delay_ms=2 alpha:chunks=3 alpha:chunk_delay_ms=4 alpha:drop_after=0 alpha:no_usage=1",
			"status=500 retry_after=0 delay_ms=1 first_byte_delay_ms=2 chunks=3 chunk_delay_ms=4 drop_after=0 no_usage=1", ""},
		{"error and stall", "@mock alpha:error_after=2 beta:stall_after=0", "error_after=2", "stall_after=0"},
		{"no_usage=0 is given but false", "@mock *:no_usage=0", "no_usage=0", "no_usage=0"},
		{"inside a message, with CRLF and indentation", "please answer\r\n  @mock\tbeta:chunks=2\r\nthanks", "", "chunks=2"},
		{"several lines merge", "@mock alpha:chunks=2\ntext\n@mock beta:chunks=3", "chunks=2", "chunks=3"},
		{"extra spaces", "@mock    alpha:chunks=2     ", "chunks=2", ""},
		{"bounds", "@mock alpha:status=599 beta:status=400 *:chunks=10000", "status=599 chunks=10000", "status=400 chunks=10000"},
		{"tool and args with spaces", `@mock *:tool=get_weather beta:args={"city": "New York", "n": [1, 2]} alpha:chunks=2`,
			"chunks=2 tool=get_weather", `tool=get_weather args={"city":"New York","n":[1,2]}`},
		{"args before more items", "@mock alpha:args={\"a\":1}\t  alpha:tool=first", `tool=first args={"a":1}`, ""},
		{"args with nested braces and an equals sign", `@mock *:args={"q":"a=b {c}","o":{"p":{}}} *:tool=t-1_x`,
			`tool=t-1_x args={"q":"a=b {c}","o":{"p":{}}}`, `tool=t-1_x args={"q":"a=b {c}","o":{"p":{}}}`},
		{"own args override star args", `@mock *:args={"a":1} beta:args={"b":2}`, `args={"a":1}`, `args={"b":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDirectives(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 {
				t.Fatalf("want both flavors, got %v", got)
			}
			if s := got[Alpha].String(); s != tt.alpha {
				t.Errorf("alpha = %q, want %q", s, tt.alpha)
			}
			if s := got[Beta].String(); s != tt.beta {
				t.Errorf("beta = %q, want %q", s, tt.beta)
			}
		})
	}
}

func TestParseDirectivesFields(t *testing.T) {
	got, err := ParseDirectives("@mock *:drop_after=0 beta:chunks=7 alpha:no_usage=1")
	if err != nil {
		t.Fatal(err)
	}
	a, b := got[Alpha], got[Beta]
	if !a.Has("drop_after") || a.DropAfter != 0 || !a.NoUsage || a.Has("chunks") || a.Has("bogus") {
		t.Errorf("alpha: %+v", a)
	}
	if !b.Has("drop_after") || b.Chunks != 7 || b.NoUsage || b.IsZero() {
		t.Errorf("beta: %+v", b)
	}
	if !(Fault{}).IsZero() || (Fault{}).String() != "" {
		t.Error("zero Fault is not empty")
	}
}

func TestParseDirectivesErrors(t *testing.T) {
	tests := []struct{ text, want string }{
		{"@mock gamma:status=500", "unknown target"},
		{"@mock Alpha:status=500", "unknown target"},
		{"@mock :status=500", "unknown target"},
		{"@mock alpha:colour=red", "unknown key"},
		{"@mock alpha:Status=500", "unknown key"},
		{"@mock status=500", "not TARGET:KEY=VALUE"},
		{"@mock alpha:status", "not TARGET:KEY=VALUE"},
		{"@mock alpha", "not TARGET:KEY=VALUE"},
		{"@mock alpha:status=", "integer in 400..599"},
		{"@mock alpha:status=200", "integer in 400..599"},
		{"@mock alpha:status=600", "integer in 400..599"},
		{"@mock alpha:status=5o3", "integer in 400..599"},
		{"@mock alpha:status=+503", "integer in 400..599"},
		{"@mock alpha:delay_ms=-1", "integer in 0..3600000"},
		{"@mock alpha:delay_ms=1.5", "integer in 0..3600000"},
		{"@mock alpha:delay_ms=3600001", "integer in 0..3600000"},
		{"@mock alpha:delay_ms=99999999999999999999", "integer in 0..3600000"},
		{"@mock alpha:chunks=0", "integer in 1..10000"},
		{"@mock alpha:no_usage=2", "integer in 0..1"},
		{"@mock alpha:no_usage=true", "integer in 0..1"},
		{"@mock alpha:chunks=2 alpha:chunks=3", "given twice"},
		{"@mock *:chunks=2\n@mock *:chunks=2", "given twice"},
		{"@mock alpha:drop_after=1 alpha:error_after=1", "more than one of drop_after"},
		{"@mock *:stall_after=1 beta:drop_after=2", "more than one of drop_after"},
		{"ok\n@mock alpha:status=503 beta:nope=1", "unknown key"},
		{"@mock *:tool=a.b", "tool wants a tool name"},
		{"@mock *:tool=", "tool wants a tool name"},
		{"@mock *:tool=" + strings.Repeat("a", 129), "tool wants a tool name"},
		{"@mock *:tool=a *:tool=b", "given twice"},
		{"@mock *:args=[1]", "args wants a JSON object"},
		{"@mock *:args=", "args wants a JSON object"},
		{"@mock *:args={\"a\":1}x", "args wants a JSON object"},
		{"@mock *:args={\"a\": 1", "args wants a JSON object"},
		{"@mock *:args={\"a\":1,\"a\":2}", "args wants a JSON object"},
		{"@mock *:args={\"a\":\"" + strings.Repeat("x", 20000) + "\"}", "args wants a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			got, err := ParseDirectives(tt.text)
			if err == nil {
				t.Fatalf("no error, got %v", got)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "@mock: ") {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestParseDirectivesLongItemIsShortenedInError(t *testing.T) {
	_, err := ParseDirectives("@mock alpha:" + strings.Repeat("x", 500) + "=1")
	if err == nil || len(err.Error()) > 200 {
		t.Fatalf("error too long or missing: %v", err)
	}
}

func TestStripDirectives(t *testing.T) {
	tests := []struct{ in, clean, lines string }{
		{"hello", "hello", ""},
		{"@mock alpha:chunks=2", "", "@mock alpha:chunks=2"},
		{"hello\n@mock alpha:chunks=2", "hello\n", "@mock alpha:chunks=2"},
		{"@mock alpha:chunks=2\nhello", "hello", "@mock alpha:chunks=2"},
		{"a\r\n @mock *:chunks=2\r\nb\n", "a\r\nb\n", " @mock *:chunks=2"},
		{"say @mock alpha:status=500 please", "say @mock alpha:status=500 please", ""},
		{"@mockery\n@mock", "@mockery\n", "@mock"},
	}
	for _, tt := range tests {
		clean, lines := StripDirectives(tt.in)
		if clean != tt.clean || strings.Join(lines, "|") != tt.lines {
			t.Errorf("StripDirectives(%q) = %q, %q; want %q, %q", tt.in, clean, lines, tt.clean, tt.lines)
		}
	}
}

func TestDirectiveRoundTrip(t *testing.T) {
	in, err := ParseDirectives("@mock *:chunks=3 alpha:status=429 alpha:retry_after=1 beta:stall_after=2 *:no_usage=1")
	if err != nil {
		t.Fatal(err)
	}
	line := Directive(in)
	out, err := ParseDirectives(line)
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	for _, fl := range flavors {
		if in[fl] != out[fl] {
			t.Errorf("%s: %v became %v via %q", fl, in[fl], out[fl], line)
		}
	}
}

func TestFaultKeysFitTheSetBits(t *testing.T) {
	if n, bits := len(faultKeys), 8*int(unsafe.Sizeof(Fault{}.set)); n > bits {
		t.Fatalf("%d keys, %d bits in Fault.set", n, bits)
	}
}

func TestDirectiveRoundTripArgs(t *testing.T) {
	in, err := ParseDirectives(`@mock alpha:tool=first beta:tool=f *:args={ "city" : "New York",  "tags": ["a b", "c"] }`)
	if err != nil {
		t.Fatal(err)
	}
	line := Directive(in)
	if want := `@mock alpha:tool=first alpha:args={"city":"New York","tags":["a b","c"]} beta:tool=f beta:args={"city":"New York","tags":["a b","c"]}`; line != want {
		t.Fatalf("rendered %q, want %q", line, want)
	}
	out, err := ParseDirectives(line)
	if err != nil || out[Alpha] != in[Alpha] || out[Beta] != in[Beta] {
		t.Fatalf("%v / %v: %v", in, out, err)
	}
}

func FuzzParseDirectives(f *testing.F) {
	for _, s := range []string{
		"@mock *:tool=get_weather *:args={\"city\": \"Paris\"}",
		"@mock alpha:args={\"a\":[1, {\"b\": \"c d\"}]}x beta:tool=first",
		"@mock *:args={\"a\":\"\\u00a0\u00a0\"} *:tool=f",
		"@mock alpha:status=503 beta:chunks=5",
		"hello\n@mock *:drop_after=0 alpha:error_after=1",
		"@mock *:stall_after=3\r\n@mock beta:no_usage=1",
		"@mock alpha:status=99999999999",
		"@mockx", "@mock ::=", "@mock *:=1", " \t@mock\t*:chunks=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		clean, lines := StripDirectives(text)
		for _, l := range strings.Split(clean, "\n") {
			if isDirectiveLine(l) {
				t.Fatalf("directive line %q survived stripping", l)
			}
		}
		if len(lines) == 0 && clean != text {
			t.Fatalf("text changed without a directive: %q -> %q", text, clean)
		}
		got, err := ParseDirectives(text)
		if err != nil {
			return
		}
		// A parsed directive must render to a line that parses back to the same faults.
		again, err := ParseDirectives(Directive(got))
		if err != nil {
			t.Fatalf("rendering %q does not parse: %v", Directive(got), err)
		}
		for _, fl := range flavors {
			if got[fl] != again[fl] {
				t.Fatalf("%s: %v != %v", fl, got[fl], again[fl])
			}
			f := got[fl]
			if f.Has("chunks") && (f.Chunks < 1 || f.Chunks > MaxChunks) {
				t.Fatalf("chunks out of range: %v", f)
			}
			if f.Has("status") && (f.Status < 400 || f.Status > 599) {
				t.Fatalf("status out of range: %v", f)
			}
		}
	})
}
