package gateway_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway"
)

func TestLogFlushIntervalOutOfRangeIsRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "snapshot.json")
	if err := snapshot.WriteFile(path, &snapshot.Snapshot{}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"-1ms", "11s"} {
		err := gateway.Main(context.Background(), []string{"--snapshot", path, "--db", filepath.Join(dir, "usage.db"),
			"--addr", "127.0.0.1:0", "--log-flush-interval", v})
		if err == nil || !strings.Contains(err.Error(), "--log-flush-interval") {
			t.Fatalf("--log-flush-interval %s: %v", v, err)
		}
	}
}
