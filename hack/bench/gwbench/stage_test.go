package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestStageBinariesRunsTheTargetsFromCopies(t *testing.T) {
	src := t.TempDir()
	cfg := &config{llmgwBin: filepath.Join(src, "llmgw"), revproxyBin: filepath.Join(src, "revproxy")}
	contents := map[string][]byte{cfg.llmgwBin: []byte("gateway binary"), cfg.revproxyBin: []byte("proxy binary")}
	for p, b := range contents {
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "bin")
	if err := stageBinaries(dir, cfg); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ staged, orig string }{{cfg.targetLlmgw, cfg.llmgwBin}, {cfg.targetRevproxy, cfg.revproxyBin}} {
		if filepath.Dir(c.staged) != dir {
			t.Errorf("target runs %s, want a copy in %s", c.staged, dir)
		}
		got, err := os.ReadFile(c.staged)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, contents[c.orig]) {
			t.Errorf("%s holds %q, want %q", c.staged, got, contents[c.orig])
		}
		if st, err := os.Stat(c.staged); err != nil || st.Mode().Perm()&0o100 == 0 {
			t.Errorf("%s is not executable: %v %v", c.staged, st.Mode(), err)
		}
	}
	if cfg.llmgwBin != filepath.Join(src, "llmgw") {
		t.Errorf("the mocks' binary changed to %s", cfg.llmgwBin)
	}
	// A second run into the same directory would run stale copies: refused.
	if err := stageBinaries(dir, cfg); err == nil {
		t.Error("staging over existing copies succeeded")
	}
}

func TestStageBinariesReportsAMissingBinary(t *testing.T) {
	cfg := &config{llmgwBin: filepath.Join(t.TempDir(), "absent"), revproxyBin: "/dev/null"}
	if err := stageBinaries(t.TempDir(), cfg); err == nil {
		t.Fatal("staging a missing binary succeeded")
	}
}
