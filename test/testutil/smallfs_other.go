//go:build !linux

package testutil

import (
	"os"
	"testing"
)

// EnvRequirePrivileged is the variable smallfs_linux.go describes.
const EnvRequirePrivileged = "LLMGW_REQUIRE_PRIVILEGED"

// SmallFS needs Linux's tmpfs: elsewhere it skips the test, or fails it when
// LLMGW_REQUIRE_PRIVILEGED is true.
func SmallFS(t testing.TB, size int64) string {
	t.Helper()
	if v := os.Getenv(EnvRequirePrivileged); v == "1" || v == "true" {
		t.Fatalf("a small filesystem needs Linux tmpfs (and %s is set)", EnvRequirePrivileged)
	}
	t.Skip("a small filesystem needs Linux tmpfs")
	return ""
}

// FillFS is not reached: SmallFS skips first.
func FillFS(t testing.TB, dir string) string {
	t.Fatal("FillFS needs Linux")
	return ""
}
