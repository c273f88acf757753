package gateway

import (
	"errors"
	"log/slog"

	"github.com/llmgw/llmgw/gateway/residency"
)

// releaseStartupPages gives back the executable's pages that startup
// touched. A failure costs only memory, so it is logged, never fatal.
func releaseStartupPages(log *slog.Logger) {
	res, err := residency.Release()
	switch {
	case errors.Is(err, residency.ErrUnsupported):
		log.Debug("startup pages kept: not supported on this platform")
	case err != nil:
		log.Warn("startup pages kept", "err", err)
	default:
		log.Info("released the executable's startup pages", "rss_file_before_bytes", res.FileBefore, "rss_file_after_bytes", res.FileAfter)
	}
}
