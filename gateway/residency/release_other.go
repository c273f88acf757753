//go:build !linux

package residency

// Result says what Release did; sizes are bytes.
type Result struct{ Advised, FileBefore, FileAfter uint64 }

// Release does nothing where the platform has no per-mapping advice.
func Release() (Result, error) { return Result{}, ErrUnsupported }
