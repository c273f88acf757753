package testutil

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// EnvRequirePrivileged names the variable that, when true (1), makes a test that needs root (to
// mount a filesystem) fail instead of skipping when it cannot get it. make
// test sets it, so CI, which runs as root, cannot pass quietly without those
// tests.
const EnvRequirePrivileged = "LLMGW_REQUIRE_PRIVILEGED"

// SmallFS mounts a tmpfs of size bytes on a new temporary directory and
// returns the directory; t.Cleanup unmounts it after every cleanup
// registered later (so register the ledger's Close after calling it). Without
// the privilege to mount it skips the test, or fails it when
// LLMGW_REQUIRE_PRIVILEGED is true.
func SmallFS(t testing.TB, size int64) string {
	t.Helper()
	dir := t.TempDir()
	err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size))
	if err != nil {
		why := fmt.Sprintf("mounting a %d-byte tmpfs needs root (CAP_SYS_ADMIN): %v", size, err)
		if os.Getenv(EnvRequirePrivileged) == "1" || os.Getenv(EnvRequirePrivileged) == "true" {
			t.Fatalf("%s (and %s is set)", why, EnvRequirePrivileged)
		}
		t.Skip(why)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			// Something still holds a file open: detach it so the test
			// run does not leave a mount behind, and report it.
			_ = syscall.Unmount(dir, syscall.MNT_DETACH)
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}

// FillFS writes a file in dir until the filesystem refuses more bytes
// (ENOSPC) and returns its path; removing the file frees the space again.
func FillFS(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	chunk := len(buf)
	for {
		_, err := f.Write(buf[:chunk])
		switch {
		case err == nil:
		case errors.Is(err, syscall.ENOSPC) && chunk > 1:
			chunk = 1 // take whatever a large write could not
		case errors.Is(err, syscall.ENOSPC):
			return path
		default:
			t.Fatalf("filling %s: %v", dir, err)
		}
	}
}
