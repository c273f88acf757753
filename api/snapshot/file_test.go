package snapshot

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteAndLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "snapshot.json")
	s := validSnapshot()
	if err := WriteFile(path, s); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	got, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != s.Version || s.Version == "" {
		t.Fatalf("round trip changed the version: %s vs %s", got.Version, s.Version)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestWriteFileInvalidLeavesOldFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snapshot.json")
	if err := WriteFile(path, validSnapshot()); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	bad := validSnapshot()
	bad.Limits.MaxMessages = -1
	if err := WriteFile(path, bad); err == nil {
		t.Fatal("invalid snapshot written")
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("failed write changed the file")
	}
}

func TestLoadFileErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadFile(filepath.Join(dir, "missing.json")); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
	big := filepath.Join(dir, "big.json")
	// Sparse: one byte over the limit without writing 64 MiB.
	if f, err := os.Create(big); err != nil {
		t.Fatal(err)
	} else if err := errors.Join(f.Truncate(MaxFileBytes+1), f.Close()); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized file: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"limits":{"maxMessages":-1}}`), 0o644)
	if _, err := LoadFile(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("invalid file error should name the file: %v", err)
	}
}
