package gateway_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/gateway"
)

// The bounds are checked with the other flags, before the snapshot is read.
func TestTuningFlagsOutOfRangeAreRefused(t *testing.T) {
	for _, c := range []struct {
		flag   string
		values []string
	}{
		{"--log-flush-interval", []string{"-1ms", "11s"}},
		{"--gc-heap-floor", []string{"-1Mi", "2Gi", "eight"}},
		{"--gc-idle-release", []string{"-1s", "61s"}},
	} {
		for _, v := range c.values {
			err := gateway.Main(context.Background(), []string{"--snapshot=/nonexistent.json",
				"--db=" + filepath.Join(t.TempDir(), "u.db"), c.flag, v})
			if err == nil || !strings.Contains(err.Error(), c.flag) {
				t.Fatalf("%s %s: %v", c.flag, v, err)
			}
		}
	}
}
