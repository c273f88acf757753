package gateway_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/gateway"
)

// The bound is checked with the other flags, before the snapshot is read.
func TestLogFlushIntervalOutOfRangeIsRefused(t *testing.T) {
	for _, v := range []string{"-1ms", "11s"} {
		err := gateway.Main(context.Background(), []string{"--snapshot=/nonexistent.json",
			"--db=" + filepath.Join(t.TempDir(), "u.db"), "--log-flush-interval", v})
		if err == nil || !strings.Contains(err.Error(), "--log-flush-interval") {
			t.Fatalf("--log-flush-interval %s: %v", v, err)
		}
	}
}

func TestGCHeapFloorOutOfRangeIsRefused(t *testing.T) {
	for _, v := range []string{"-1Mi", "2Gi", "eight"} {
		err := gateway.Main(context.Background(), []string{"--snapshot=/nonexistent.json",
			"--db=" + filepath.Join(t.TempDir(), "u.db"), "--gc-heap-floor", v})
		if err == nil || !strings.Contains(err.Error(), "--gc-heap-floor") {
			t.Fatalf("--gc-heap-floor %s: %v", v, err)
		}
	}
}
