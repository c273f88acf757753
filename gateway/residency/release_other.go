//go:build !linux

package residency

// Release does nothing where the platform has no per-mapping advice.
func Release() (Result, error) { return Result{}, ErrUnsupported }
