// Command resident tells which parts of a running Go binary are resident in
// its process: it reads the process's page table (/proc/PID/pagemap) over
// the mappings of its executable and charges every present page to the ELF
// section and the symbols it holds, then sums by package and by module. It
// answers "why is RssFile 36 MB" with names instead of guesses
// (docs/BENCHMARK.md, "Where the memory goes").
//
// Usage: go run ./hack/bench/resident -pid PID [-top 25] [-depth 3]
//
// Modules and packages need the executable's symbol table (built without
// -s); a stripped one is reported by section only, and pages of a section
// without symbols (.gopclntab) are charged to the section. .gopclntab is
// also split by the tables its header names (pclntab.go), stripped or not.
// Reading another process's pagemap needs the right to ptrace it (root, or
// the same user with ptrace_scope 0).
package main

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/llmgw/llmgw/gateway/residency"
)

const pageSize = 4096

func main() {
	pid := flag.Int("pid", 0, "process to inspect")
	top := flag.Int("top", 25, "rows of each table")
	depth := flag.Int("depth", 3, "path elements that name a module in the rollup (std packages: 1)")
	flag.Parse()
	if *pid <= 0 {
		fmt.Fprintln(os.Stderr, "resident: -pid is required")
		os.Exit(2)
	}
	if err := run(os.Stdout, *pid, *top, *depth); err != nil {
		fmt.Fprintln(os.Stderr, "resident:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, pid, top, depth int) error {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return fmt.Errorf("find executable: %w", err)
	}
	maps, err := exeMappings(pid, exe)
	if err != nil {
		return err
	}
	pages, err := presentPages(pid, maps)
	if err != nil {
		return err
	}
	img, err := loadImage(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return err
	}
	bySection, bySym := img.charge(pages)
	byPkg := map[string]float64{}
	byMod := map[string]float64{}
	for name, b := range bySym {
		p := packageOf(name)
		byPkg[p] += b
		byMod[moduleOf(p, depth)] += b
	}
	total := float64(len(pages) * pageSize)
	fmt.Fprintf(w, "%s (pid %d): %.1f MB of the executable resident (%d pages)\n", exe, pid, total/1e6, len(pages))
	printTable(w, "section", bySection, total, top)
	if img.pcln != nil {
		printTable(w, "table of .gopclntab", chargeRanges(pages, img.pcln), total, top)
	}
	if img.stripped {
		fmt.Fprintln(w, "\n(no symbol table: built with -s; rebuild without it for modules and packages)")
		return nil
	}
	printTable(w, "module", byMod, total, top)
	printTable(w, "package", byPkg, total, top)
	return nil
}

type mapping struct{ start, end uint64 }

// exeMappings returns the address ranges where pid maps its executable.
func exeMappings(pid int, exe string) ([]mapping, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, fmt.Errorf("read maps: %w", err)
	}
	defer f.Close()
	maps, err := residency.ParseSmaps(f)
	if err != nil {
		return nil, fmt.Errorf("read maps: %w", err)
	}
	var out []mapping
	for _, m := range maps {
		if m.Path == exe {
			out = append(out, mapping{m.Start, m.End})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no mapping of %s in process %d", exe, pid)
	}
	return out, nil
}

// presentPages returns the start address of every page of maps that is in
// the process's page table (pagemap bit 63).
func presentPages(pid int, maps []mapping) ([]uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		return nil, fmt.Errorf("open pagemap: %w", err)
	}
	defer f.Close()
	var out []uint64
	for _, m := range maps {
		n := (m.end - m.start) / pageSize
		buf := make([]byte, n*8)
		if _, err := f.ReadAt(buf, int64(m.start/pageSize*8)); err != nil {
			return nil, fmt.Errorf("read pagemap at %#x: %w", m.start, err)
		}
		for i := range n {
			if binary.LittleEndian.Uint64(buf[i*8:])&(1<<63) != 0 {
				out = append(out, m.start+i*pageSize)
			}
		}
	}
	return out, nil
}

type symbol struct {
	name       string
	start, end uint64
}

type section struct {
	name       string
	start, end uint64
}

type image struct {
	sections []section
	syms     []symbol  // sorted by start, sized, not overlapping in practice
	pcln     []section // .gopclntab's tables; nil when its layout is not known
	stripped bool      // no symbol table: everything is charged by section
}

func loadImage(path string) (*image, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open executable: %w", err)
	}
	defer f.Close()
	img := &image{}
	for _, s := range f.Sections {
		if s.Addr != 0 && s.Flags&elf.SHF_ALLOC != 0 {
			img.sections = append(img.sections, section{s.Name, s.Addr, s.Addr + s.Size})
		}
	}
	// Unknown layouts (another toolchain) only lose this split.
	img.pcln, _ = pclnTables(f)
	syms, err := f.Symbols()
	if errors.Is(err, elf.ErrNoSymbols) {
		// Stripped (-s, as go test and the image build do): the
		// sections still tell text from read-only data and pclntab.
		img.stripped = true
		return img, nil
	}
	if err != nil {
		return nil, fmt.Errorf("symbols: %w", err)
	}
	for _, s := range syms {
		if s.Size > 0 && s.Value != 0 {
			img.syms = append(img.syms, symbol{s.Name, s.Value, s.Value + s.Size})
		}
	}
	sort.Slice(img.syms, func(i, j int) bool { return img.syms[i].start < img.syms[j].start })
	return img, nil
}

// charge splits every present page among the sections and symbols it
// overlaps, byte for byte; bytes no symbol covers go to "(section name)".
func (img *image) charge(pages []uint64) (bySection, bySym map[string]float64) {
	bySection, bySym = map[string]float64{}, map[string]float64{}
	for _, p := range pages {
		lo, hi := p, p+pageSize
		covered := chargePage(bySection, p, img.sections)
		if covered < pageSize {
			bySection["(between sections)"] += float64(pageSize - covered)
		}
		// First symbol that may overlap: the last one starting before hi.
		i := sort.Search(len(img.syms), func(i int) bool { return img.syms[i].start >= hi })
		named := uint64(0)
		for j := i - 1; j >= 0 && named < pageSize; j-- {
			s := img.syms[j]
			if s.end <= lo {
				// Symbols are sorted by start, not end: a big one (a
				// whole table) may still reach this page from below.
				if lo-s.start > 1<<24 {
					break
				}
				continue
			}
			if o := overlap(lo, hi, s.start, s.end); o > 0 {
				bySym[s.name] += float64(o)
				named += o
			}
		}
		if named < pageSize {
			bySym["("+img.sectionAt(p)+")"] += float64(pageSize - min(named, pageSize))
		}
	}
	return bySection, bySym
}

// chargeRanges sums the bytes of every present page that fall in each range.
func chargeRanges(pages []uint64, ranges []section) map[string]float64 {
	out := map[string]float64{}
	for _, p := range pages {
		chargePage(out, p, ranges)
	}
	return out
}

// chargePage adds to out the bytes of the page at p that fall in each range
// and returns how many of its bytes the ranges covered.
func chargePage(out map[string]float64, p uint64, ranges []section) (covered uint64) {
	for _, r := range ranges {
		if o := overlap(p, p+pageSize, r.start, r.end); o > 0 {
			out[r.name] += float64(o)
			covered += o
		}
	}
	return covered
}

func (img *image) sectionAt(addr uint64) string {
	for _, s := range img.sections {
		if addr >= s.start && addr < s.end {
			return s.name
		}
	}
	return "between sections"
}

func overlap(a0, a1, b0, b1 uint64) uint64 {
	lo, hi := max(a0, b0), min(a1, b1)
	if hi <= lo {
		return 0
	}
	return hi - lo
}

// packageOf names the package a Go symbol belongs to: the import path up to
// the first dot after its last slash, with the linker's prefixes (type:,
// go:itab., go:string.) read past. Symbols without a package keep their
// name in parentheses.
func packageOf(sym string) string {
	if strings.HasPrefix(sym, "(") {
		return sym
	}
	for _, pre := range []string{"type:.eq.", "type:.namedata.", "type:*", "type:", "go:itab.*", "go:itab.", "go:info.", "go:cuinfo.", "go:link.", "go:"} {
		if strings.HasPrefix(sym, pre) {
			sym = sym[len(pre):]
			if pre == "go:" {
				// go:string.*, go:func.*, go:constinfo.*: not a package.
				if k, _, ok := strings.Cut(sym, "."); ok {
					return "(go:" + k + ")"
				}
			}
			break
		}
	}
	sym = strings.TrimLeft(sym, "*[]")
	slash := strings.LastIndex(sym, "/")
	if slash < 0 {
		slash = 0
	}
	if dot := strings.Index(sym[slash:], "."); dot >= 0 {
		return sym[:slash+dot]
	}
	return sym
}

// moduleOf shortens a package path to its first depth elements (std
// packages, which have no dot in their first element, to one).
func moduleOf(pkg string, depth int) string {
	if strings.HasPrefix(pkg, "(") {
		return pkg
	}
	parts := strings.Split(pkg, "/")
	if !strings.Contains(parts[0], ".") {
		return "std:" + parts[0]
	}
	if len(parts) > depth {
		parts = parts[:depth]
	}
	return strings.Join(parts, "/")
}

func printTable(w io.Writer, what string, m map[string]float64, total float64, top int) {
	type row struct {
		k string
		v float64
	}
	rows := make([]row, 0, len(m))
	for k, v := range m {
		rows = append(rows, row{k, v})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].v > rows[j].v })
	fmt.Fprintf(w, "\n%-60s %9s %6s\n", "by "+what, "MB", "share")
	rest := 0.0
	for i, r := range rows {
		if i >= top {
			rest += r.v
			continue
		}
		fmt.Fprintf(w, "%-60s %9.2f %5.1f%%\n", r.k, r.v/1e6, 100*r.v/total)
	}
	if rest > 0 {
		fmt.Fprintf(w, "%-60s %9.2f %5.1f%%\n", fmt.Sprintf("(%d more)", len(rows)-top), rest/1e6, 100*rest/total)
	}
}
