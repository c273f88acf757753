package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
)

// The file-backed part of RSS counts every page of the binary the kernel
// has mapped in: the code and tables every package's init touched once,
// and the neighbours each page fault maps along with them. How much of it
// a process actually uses while it serves is what its accessed bits say:
// clearRefs resets them (writing 1 to /proc/PID/clear_refs), and after the
// load fileTouched sums the Referenced pages of its file mappings. Pages
// that stay mapped but untouched are clean page cache the kernel can take
// back under pressure without writing anything.

// clearRefs resets the accessed bits of every page the process maps.
func (p *proc) clearRefs() error {
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.pid()), []byte("1"), 0); err != nil {
		return fmt.Errorf("%s: clear_refs: %w", p.name, err)
	}
	return nil
}

// fileTouched is how many bytes of the process's file mappings were
// accessed since clearRefs.
func (p *proc) fileTouched() (uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps", p.pid()))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p.name, err)
	}
	defer f.Close()
	n, err := fileReferenced(f)
	if err != nil {
		return 0, fmt.Errorf("%s: smaps: %w", p.name, err)
	}
	return n, nil
}

// fileReferenced sums the Referenced lines of the mappings in an smaps
// listing that map a file: a header with a path that is not a
// pseudo-mapping ([heap], [stack], [vdso], ...). RssFile counts the same
// mappings.
func fileReferenced(r io.Reader) (uint64, error) {
	sc := bufio.NewScanner(r)
	var total uint64
	file := false
	for sc.Scan() {
		line := sc.Bytes()
		fields := bytes.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if isMappingHeader(fields[0]) {
			file = len(fields) >= 6 && fields[5][0] == '/'
			continue
		}
		if !file || string(fields[0]) != "Referenced:" {
			continue
		}
		if len(fields) != 3 || string(fields[2]) != "kB" {
			return 0, fmt.Errorf("unexpected line %q", line)
		}
		kb, err := strconv.ParseUint(string(fields[1]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("line %q: %w", line, err)
		}
		total += kb * 1024
	}
	return total, sc.Err()
}

// isMappingHeader: a header starts with the mapping's range, "start-end"
// in hex; the attribute lines start with "Name:".
func isMappingHeader(first []byte) bool {
	dash := bytes.IndexByte(first, '-')
	if dash <= 0 || dash == len(first)-1 {
		return false
	}
	for _, c := range bytes.ReplaceAll(first, []byte("-"), nil) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
