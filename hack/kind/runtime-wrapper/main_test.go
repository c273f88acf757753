package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStripBundleKeepsEverythingElse(t *testing.T) {
	dir := t.TempDir()
	cfg := `{"ociVersion":"1.2.0","process":{"capabilities":{"bounding":["CAP_CHOWN","CAP_SYS_RESOURCE"],` +
		`"effective":["CAP_SYS_RESOURCE"],"permitted":["CAP_SYS_RESOURCE","CAP_KILL"]}},` +
		`"linux":{"resources":{"memory":{"limit":9223372036854775807}}}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	stripFile(filepath.Join(dir, "config.json"), true)
	b, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	s := string(b)
	if strings.Contains(s, "CAP_SYS_RESOURCE") {
		t.Fatalf("still has the capability: %s", s)
	}
	for _, want := range []string{`"CAP_CHOWN"`, `"CAP_KILL"`, `9223372036854775807`, `"effective":[]`} {
		if !strings.Contains(s, want) {
			t.Fatalf("lost %s: %s", want, s)
		}
	}
}

func TestStripProcessFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "process.json")
	if err := os.WriteFile(p, []byte(`{"args":["sh"],"capabilities":{"bounding":["CAP_SYS_RESOURCE","CAP_NET_ADMIN"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	stripFile(p, false)
	b, _ := os.ReadFile(p)
	if strings.Contains(string(b), "CAP_SYS_RESOURCE") || !strings.Contains(string(b), "CAP_NET_ADMIN") {
		t.Fatalf("got %s", b)
	}
}

func TestRegisterMergesAndIsIdempotent(t *testing.T) {
	f := filepath.Join(t.TempDir(), "docker", "daemon.json")
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, []byte(`{"log-level":"warn","runtimes":{"other":{"path":"/x"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if rc := register(f, "llmgw-runc", "/usr/local/lib/w"); rc != 0 {
		t.Fatalf("first register rc=%d", rc)
	}
	if rc := register(f, "llmgw-runc", "/usr/local/lib/w"); rc != 3 {
		t.Fatalf("second register rc=%d, want 3 (unchanged)", rc)
	}
	b, _ := os.ReadFile(f)
	for _, want := range []string{`"log-level": "warn"`, `"other"`, `"llmgw-runc"`, `"/usr/local/lib/w"`} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("lost %s: %s", want, b)
		}
	}
}
