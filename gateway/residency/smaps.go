package residency

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
)

// Mapping is one entry of /proc/PID/smaps, or of /proc/PID/maps, which has
// the same header lines and no size lines (proc(5)).
type Mapping struct {
	Start, End uint64
	Perms      string // "r-xp": read, write, execute, private or shared
	Dev        string // "major:minor" in hex, as the kernel prints it
	Inode      uint64
	Path       string // "" for anonymous memory; "[heap]" and the like for pseudo-mappings
	// Anonymous is the bytes of the mapping's anonymous pages. In a private
	// file mapping these are copy-on-write copies: where the process or its
	// loader wrote, e.g. the relocated RELRO data of a position-independent
	// executable. A page of the file that is dirty in the page cache (a
	// binary just written) shows as Private_Dirty, not as Anonymous.
	Anonymous uint64
	// Referenced is the bytes of resident pages accessed since the accessed
	// bits were last cleared (/proc/PID/clear_refs).
	Referenced uint64
	// FilePmdMapped is the bytes of the file mapped by huge (PMD) entries:
	// where the page cache holds the file in 2 MiB folios, one fault maps
	// the whole folio.
	FilePmdMapped uint64
}

// ParseSmaps reads /proc/PID/smaps or /proc/PID/maps.
func ParseSmaps(r io.Reader) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if !bytes.HasSuffix(f[0], []byte(":")) {
			m, err := parseHeader(line, f)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
			continue
		}
		// A field of the mapping above; only the sizes kept here are read
		// (VmFlags, THPeligible and the others are not sizes).
		if len(out) == 0 {
			return nil, fmt.Errorf("smaps line %q before any mapping", line)
		}
		var dst *uint64
		switch string(f[0]) {
		case "Anonymous:":
			dst = &out[len(out)-1].Anonymous
		case "Referenced:":
			dst = &out[len(out)-1].Referenced
		case "FilePmdMapped:":
			dst = &out[len(out)-1].FilePmdMapped
		default:
			continue
		}
		if len(f) != 3 || !bytes.Equal(f[2], []byte("kB")) {
			return nil, fmt.Errorf("smaps line %q: want \"Name: N kB\"", line)
		}
		kb, err := strconv.ParseUint(string(f[1]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("smaps line %q: %w", line, err)
		}
		*dst = kb << 10
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading smaps: %w", err)
	}
	return out, nil
}

// parseHeader parses "start-end perms offset dev inode [path]"; f is the
// line's fields.
func parseHeader(line []byte, f [][]byte) (Mapping, error) {
	var m Mapping
	if len(f) < 5 {
		return m, fmt.Errorf("smaps line %q: want a mapping header", line)
	}
	lo, hi, ok := bytes.Cut(f[0], []byte("-"))
	if !ok {
		return m, fmt.Errorf("smaps line %q: no address range", line)
	}
	var err error
	if m.Start, err = strconv.ParseUint(string(lo), 16, 64); err != nil {
		return m, fmt.Errorf("smaps line %q: %w", line, err)
	}
	if m.End, err = strconv.ParseUint(string(hi), 16, 64); err != nil {
		return m, fmt.Errorf("smaps line %q: %w", line, err)
	}
	if m.End < m.Start {
		return m, fmt.Errorf("smaps line %q: range ends before it starts", line)
	}
	if m.Inode, err = strconv.ParseUint(string(f[4]), 10, 64); err != nil {
		return m, fmt.Errorf("smaps line %q: %w", line, err)
	}
	m.Perms, m.Dev = string(f[1]), string(f[3])
	if len(f) > 5 {
		// The path is the rest of the line: it may hold spaces, and the
		// kernel appends " (deleted)" to a file removed since.
		m.Path = string(bytes.TrimSpace(line[bytes.Index(line, f[5]):]))
	}
	return m, nil
}
