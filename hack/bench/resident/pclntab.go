package main

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
)

// go120Magic opens the runtime's pcHeader in every toolchain since Go 1.20
// (internal/abi.Go120PCLnTabMagic).
const go120Magic = 0xfffffff1

// pclnTables splits .gopclntab into the tables its header names, in the
// order the linker writes them: the header, function names, compilation
// units, file names, the pc-value tables (frame sizes, lines, stack-map
// indexes: what a stack walk reads) and the function table with each
// function's _func record (what findfunc reads for every frame). Knowing
// which of them is resident tells a stack walk (GC scans, stack growth,
// runtime.Callers) from symbolization (names, files, lines). A section of
// another layout yields an error; the caller then reports .gopclntab whole.
func pclnTables(f *elf.File) ([]section, error) {
	s := f.Section(".gopclntab")
	if s == nil {
		return nil, errors.New("no .gopclntab section")
	}
	hdr := make([]byte, headerLen)
	if _, err := s.ReadAt(hdr, 0); err != nil {
		return nil, fmt.Errorf("read pcHeader: %w", err)
	}
	return splitPcln(hdr, s.Addr, s.Size)
}

// headerLen is the pcHeader's size: magic, two pads, minLC, ptrSize, then
// eight words.
const headerLen = 8 + 8*8

// splitPcln reads a pcHeader (the first headerLen bytes of a .gopclntab at
// addr, size bytes long) into the tables' address ranges.
func splitPcln(hdr []byte, addr, size uint64) ([]section, error) {
	le := binary.LittleEndian
	if m := le.Uint32(hdr); m != go120Magic || hdr[7] != 8 {
		return nil, fmt.Errorf("pcHeader magic %#x, pointer size %d: not a Go 1.20+ 64-bit pclntab", m, hdr[7])
	}
	// Words: nfunc, nfiles, the old textStart, then the five offsets.
	names := []string{"pcHeader", "funcnametab", "cutab", "filetab", "pctab", "functab"}
	offs := []uint64{0}
	for i := range 5 {
		offs = append(offs, le.Uint64(hdr[8+8*(3+i):]))
	}
	offs = append(offs, size)
	out := make([]section, 0, len(names))
	for i, n := range names {
		if offs[i] > offs[i+1] {
			return nil, fmt.Errorf("pcHeader offsets out of order: %v (section of %d bytes)", offs[1:6], size)
		}
		out = append(out, section{".gopclntab " + n, addr + offs[i], addr + offs[i+1]})
	}
	return out, nil
}
