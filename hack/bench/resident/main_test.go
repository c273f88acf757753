package main

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestPackageOf(t *testing.T) {
	for _, c := range []struct{ sym, want string }{
		{"net/http.(*conn).serve", "net/http"},
		{"runtime.mallocgc", "runtime"},
		{"github.com/llmgw/llmgw/gateway/server.(*Server).edges.func1", "github.com/llmgw/llmgw/gateway/server"},
		{"modernc.org/sqlite/lib._sqlite3VdbeExec", "modernc.org/sqlite/lib"},
		{"type:*k8s.io/api/core/v1.Pod", "k8s.io/api/core/v1"},
		{"type:.eq.net/http.Header", "net/http"},
		{"go:itab.*net.TCPConn,net.Conn", "net"},
		{"go:string.*", "(go:string)"},
		{"go:func.*", "(go:func)"},
		{"(.rodata)", "(.rodata)"},
		{"gopkg.in/yaml.v2.Unmarshal", "gopkg.in/yaml"}, // a dot in the last element: read as far as it
	} {
		if got := packageOf(c.sym); got != c.want {
			t.Errorf("packageOf(%q) = %q, want %q", c.sym, got, c.want)
		}
	}
}

func TestModuleOf(t *testing.T) {
	for _, c := range []struct {
		pkg   string
		depth int
		want  string
	}{
		{"net/http", 3, "std:net"},
		{"runtime", 3, "std:runtime"},
		{"k8s.io/api/core/v1", 2, "k8s.io/api"},
		{"k8s.io/api/core/v1", 3, "k8s.io/api/core"},
		{"modernc.org/sqlite/lib", 3, "modernc.org/sqlite/lib"},
		{"(go:func)", 3, "(go:func)"},
	} {
		if got := moduleOf(c.pkg, c.depth); got != c.want {
			t.Errorf("moduleOf(%q, %d) = %q, want %q", c.pkg, c.depth, got, c.want)
		}
	}
}

// TestChargeSplitsPagesByteForByte: a page is shared among the symbols in
// it, the uncovered rest goes to its section, and a large symbol that
// starts pages below is still charged.
func TestChargeSplitsPagesByteForByte(t *testing.T) {
	img := &image{
		sections: []section{{".text", 0x1000, 0x5000}},
		syms: []symbol{
			{"a.F", 0x1000, 0x1800},         // half of page 0x1000
			{"b.G", 0x1800, 0x1c00},         // a quarter of it
			{"c.Table", 0x2000, 0x4000},     // pages 0x2000 and 0x3000
			{"d.H", 0x4000 + 0x800, 0x5000}, // half of page 0x4000
		},
	}
	secs, syms := img.charge([]uint64{0x1000, 0x3000, 0x4000})
	want := map[string]float64{"a.F": 2048, "b.G": 1024, "c.Table": 4096, "d.H": 2048, "(.text)": 1024 + 2048}
	for k, v := range want {
		if syms[k] != v {
			t.Errorf("%s charged %v bytes, want %v (all: %v)", k, syms[k], v, syms)
		}
	}
	if len(syms) != len(want) {
		t.Errorf("charged %v, want exactly %v", syms, want)
	}
	if secs[".text"] != 3*pageSize {
		t.Errorf(".text charged %v, want %d", secs[".text"], 3*pageSize)
	}
}

// TestOwnProcess reads this test binary's own resident pages: some of it
// is resident (the code running now), never more than it maps, and the
// report shows the code's section (go test strips the binary, so the
// report is by section).
func TestOwnProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	pid := os.Getpid()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	maps, err := exeMappings(pid, exe)
	if err != nil {
		t.Fatal(err)
	}
	pages, err := presentPages(pid, maps)
	if err != nil {
		t.Fatal(err)
	}
	mapped := uint64(0)
	for _, m := range maps {
		mapped += (m.end - m.start) / pageSize
	}
	if len(pages) == 0 || uint64(len(pages)) > mapped {
		t.Fatalf("%d resident pages of %d mapped", len(pages), mapped)
	}
	var out bytes.Buffer
	if err := run(&out, pid, 1000, 3); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "\n.text ") {
		t.Errorf("report has no .text row:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "\nby table of .gopclntab") {
		t.Errorf("report does not split .gopclntab:\n%s", out.String())
	}
}

func TestSplitPcln(t *testing.T) {
	hdr := func(magic uint32, ptr byte, offs ...uint64) []byte {
		b := make([]byte, headerLen)
		binary.LittleEndian.PutUint32(b, magic)
		b[7] = ptr
		for i, o := range offs {
			binary.LittleEndian.PutUint64(b[8+8*(3+i):], o)
		}
		return b
	}
	got, err := splitPcln(hdr(go120Magic, 8, 72, 100, 200, 300, 1000), 0x10000, 5000)
	if err != nil {
		t.Fatal(err)
	}
	want := []section{
		{".gopclntab pcHeader", 0x10000, 0x10000 + 72},
		{".gopclntab funcnametab", 0x10000 + 72, 0x10000 + 100},
		{".gopclntab cutab", 0x10000 + 100, 0x10000 + 200},
		{".gopclntab filetab", 0x10000 + 200, 0x10000 + 300},
		{".gopclntab pctab", 0x10000 + 300, 0x10000 + 1000},
		{".gopclntab functab", 0x10000 + 1000, 0x10000 + 5000},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	for name, h := range map[string][]byte{
		"Go 1.18 magic": hdr(0xfffffff0, 8, 72, 100, 200, 300, 1000),
		"32-bit":        hdr(go120Magic, 4, 72, 100, 200, 300, 1000),
		"out of order":  hdr(go120Magic, 8, 72, 300, 200, 300, 1000),
		"past the end":  hdr(go120Magic, 8, 72, 100, 200, 300, 6000),
	} {
		if _, err := splitPcln(h, 0x10000, 5000); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestPclnTablesOfThisBinary splits the test binary's own table: the split
// covers the section, and the function names table holds this test's name.
func TestPclnTablesOfThisBinary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Skip("not an ELF binary:", err)
	}
	defer f.Close()
	tabs, err := pclnTables(f)
	if err != nil {
		t.Fatal(err)
	}
	s := f.Section(".gopclntab")
	if tabs[0].start != s.Addr || tabs[len(tabs)-1].end != s.Addr+s.Size {
		t.Errorf("tables %v do not cover .gopclntab %#x-%#x", tabs, s.Addr, s.Addr+s.Size)
	}
	data, err := s.Data()
	if err != nil {
		t.Fatal(err)
	}
	names := data[tabs[1].start-s.Addr : tabs[1].end-s.Addr]
	if !bytes.Contains(names, []byte(".TestPclnTablesOfThisBinary\x00")) {
		t.Error("funcnametab does not hold this test's name")
	}
}
