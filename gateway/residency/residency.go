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
//
// What this lowers is what the process maps: VmRSS, and so ps, top and
// process_resident_memory_bytes. The page cache is not touched: the file's
// pages stay cached and charged to whoever read them first, as before, and
// the kernel can reclaim them under pressure whether mapped or not (unmapped
// ones more cheaply). ParseSmaps is shared with the benchmark tools.
package residency

import "errors"

// clean picks the mappings of the executable (matched by device and inode, so
// a binary replaced on disk while it runs still matches) whose every resident
// page is the file's own: private, not writable, and without a single
// copy-on-write page. Dropping any other mapping would lose data: writable
// ones hold the program's globals, and a read-only one with anonymous pages
// holds what the loader wrote before protecting it.
func clean(maps []Mapping, dev string, inode uint64) []Mapping {
	var out []Mapping
	for _, m := range maps {
		if m.Inode != inode || m.Dev != dev || len(m.Perms) != 4 {
			continue
		}
		if m.Perms[0] != 'r' || m.Perms[1] != '-' || m.Perms[3] != 'p' {
			continue
		}
		if m.Anonymous != 0 {
			continue
		}
		out = append(out, m)
	}
	return out
}

// Result says what Release did; sizes are bytes.
type Result struct {
	// Advised is the address range dropped; FileBefore and FileAfter are the
	// process's file-backed resident memory (RssFile) around the call, 0
	// where it could not be read.
	Advised, FileBefore, FileAfter uint64
}

// ErrUnsupported is returned where the platform has no per-mapping advice.
var ErrUnsupported = errors.New("residency: not supported on this platform")
