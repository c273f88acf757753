//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package usage

// lockFile is a no-op where flock is unavailable: the single-owner rule then
// rests on the deployment (one gateway process per state directory).
func lockFile(string) (func() error, error) {
	return func() error { return nil }, nil
}
