//go:build linux

package residency

import (
	"fmt"
	"os"
	"syscall"

	"github.com/prometheus/procfs"
)

// Release drops the process's mappings of its executable's clean read-only
// pages (text and read-only data). Pages read afterwards are mapped again on
// demand from the page cache.
func Release() (Result, error) {
	var res Result
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		return res, fmt.Errorf("residency: %w", err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return res, fmt.Errorf("residency: %w", err)
	}
	maps, err := ParseSmaps(f)
	_ = f.Close()
	if err != nil {
		return res, fmt.Errorf("residency: %w", err)
	}
	res.FileBefore = rssFile()
	for _, m := range clean(maps, devString(uint64(st.Dev)), st.Ino) {
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, uintptr(m.Start), uintptr(m.End-m.Start), syscall.MADV_DONTNEED); e != 0 {
			return res, fmt.Errorf("residency: madvise %x-%x: %w", m.Start, m.End, e)
		}
		res.Advised += m.End - m.Start
	}
	res.FileAfter = rssFile()
	return res, nil
}

// rssFile is the process's file-backed resident memory (RssFile), in bytes;
// 0 when /proc/self/status cannot be read: it only reports what Release did.
func rssFile() uint64 {
	p, err := procfs.Self()
	if err != nil {
		return 0
	}
	st, err := p.NewStatus()
	if err != nil {
		return 0
	}
	return st.RssFile
}

// devString prints a device number as /proc/PID/smaps does ("fd:01"):
// the kernel's new_encode_dev split into major and minor.
func devString(dev uint64) string {
	major := (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor := dev&0xff | (dev>>12)&^0xff
	return fmt.Sprintf("%02x:%02x", major, minor)
}
