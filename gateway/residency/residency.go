// Package residency gives back, once a process has started, the pages of its
// executable that only startup touched.
//
// llmgw is one binary: the gateway links client-go and controller-runtime for
// its Kubernetes mode and the controller subcommand. Every linked package's
// init runs in every process, and the kernel maps each faulting page's
// neighbours too (fault-around), so a gateway that has served nothing yet maps
// about 30 MB of its executable, most of which it never reads again. Those
// pages are clean copies of the file: dropping them from the process's page
// tables loses nothing. They stay in the page cache, and a later read maps
// them back with a minor fault, so what stays resident is the gateway's
// working set rather than the sum of every dependency's init.
package residency

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// mapping is one entry of /proc/PID/smaps (proc(5)).
type mapping struct {
	start, end uint64
	perms      string
	dev        string // "major:minor" in hex, as the kernel prints it
	inode      uint64
	// anonymous counts the mapping's copy-on-write pages (kB): a private file
	// mapping holds them where the process or its loader wrote, e.g. the
	// relocated RELRO data of a position-independent executable.
	// A page of the file that is dirty in the page cache (a binary just
	// written) shows as Private_Dirty but not as Anonymous, and dropping the
	// mapping leaves it in the cache: Anonymous is the measure of what only
	// this mapping holds.
	anonymous uint64
}

// parseSmaps reads /proc/PID/smaps: a header line per mapping, as in
// /proc/PID/maps, followed by "Name: value kB" lines.
func parseSmaps(r io.Reader) ([]mapping, error) {
	var out []mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if bytes.HasSuffix(f[0], []byte(":")) {
			// A field of the mapping above. Only sizes ("Name: N kB") matter
			// here; others (VmFlags, THPeligible) are skipped.
			if len(out) == 0 {
				return nil, fmt.Errorf("smaps line %q before any mapping", line)
			}
			if len(f) != 3 || !bytes.Equal(f[2], []byte("kB")) {
				continue
			}
			v, err := strconv.ParseUint(string(f[1]), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("smaps line %q: %w", line, err)
			}
			m := &out[len(out)-1]
			if string(f[0]) == "Anonymous:" {
				m.anonymous = v
			}
			continue
		}
		m, err := parseHeader(line, f)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading smaps: %w", err)
	}
	return out, nil
}

// parseHeader parses "start-end perms offset dev inode [path]"; f is the
// line's fields.
func parseHeader(line []byte, f [][]byte) (mapping, error) {
	var m mapping
	if len(f) < 5 {
		return m, fmt.Errorf("smaps line %q: want a mapping header", line)
	}
	lo, hi, ok := bytes.Cut(f[0], []byte("-"))
	if !ok {
		return m, fmt.Errorf("smaps line %q: no address range", line)
	}
	var err error
	if m.start, err = strconv.ParseUint(string(lo), 16, 64); err != nil {
		return m, fmt.Errorf("smaps line %q: %w", line, err)
	}
	if m.end, err = strconv.ParseUint(string(hi), 16, 64); err != nil {
		return m, fmt.Errorf("smaps line %q: %w", line, err)
	}
	if m.end < m.start {
		return m, fmt.Errorf("smaps line %q: range ends before it starts", line)
	}
	if m.inode, err = strconv.ParseUint(string(f[4]), 10, 64); err != nil {
		return m, fmt.Errorf("smaps line %q: %w", line, err)
	}
	m.perms, m.dev = string(f[1]), string(f[3])
	return m, nil
}

// clean picks the mappings of the executable (matched by device and inode, so
// a binary replaced on disk while it runs still matches) whose every resident
// page is the file's own: private, not writable, and without a single
// copy-on-write page. Dropping any other mapping would lose data: writable
// ones hold the program's globals, and a read-only one with anonymous pages
// holds what the loader wrote before protecting it.
func clean(maps []mapping, dev string, inode uint64) []mapping {
	var out []mapping
	for _, m := range maps {
		if m.inode != inode || m.dev != dev || len(m.perms) != 4 {
			continue
		}
		if m.perms[0] != 'r' || m.perms[1] != '-' || m.perms[3] != 'p' {
			continue
		}
		if m.anonymous != 0 {
			continue
		}
		out = append(out, m)
	}
	return out
}

// ErrUnsupported is returned where the platform has no per-mapping advice.
var ErrUnsupported = errors.New("residency: not supported on this platform")
