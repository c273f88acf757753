//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package usage

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on a side file rather than on the
// database itself: SQLite uses POSIX record locks on the database, and those
// are dropped when any descriptor of the file is closed in this process.
// The kernel releases a flock when the process dies, so a SIGKILLed gateway
// never leaves a stale lock behind.
func lockFile(path string) (func() error, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, fmt.Errorf("lock: %w", err)
	}
	return f.Close, nil
}
