package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/llmgw/llmgw/gateway/residency"
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

// fileMapped is what smaps says of a process's file mappings, in bytes.
type fileMapped struct {
	// referenced: accessed since clearRefs.
	referenced uint64
	// huge: mapped by huge (PMD) entries, whole 2 MiB folios of the page
	// cache (stage.go says why that matters).
	huge uint64
}

// fileTouched reads the process's file mappings after the load.
func (p *proc) fileTouched() (fileMapped, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps", p.pid()))
	if err != nil {
		return fileMapped{}, fmt.Errorf("%s: %w", p.name, err)
	}
	defer f.Close()
	n, err := fileReferenced(f)
	if err != nil {
		return fileMapped{}, fmt.Errorf("%s: smaps: %w", p.name, err)
	}
	return n, nil
}

// fileReferenced sums the Referenced and huge-mapped bytes of the mappings
// in an smaps listing that map a file: a path that is not a pseudo-mapping
// ([heap], [stack], [vdso], ...). RssFile counts the same mappings.
func fileReferenced(r io.Reader) (fileMapped, error) {
	maps, err := residency.ParseSmaps(r)
	if err != nil {
		return fileMapped{}, err
	}
	var total fileMapped
	for _, m := range maps {
		if strings.HasPrefix(m.Path, "/") {
			total.referenced += m.Referenced
			total.huge += m.FilePmdMapped
		}
	}
	return total, nil
}
