package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// How much of a binary a process maps depends on how the binary entered
// the page cache, not only on what the process reads: a file read
// sequentially (cp from it, a checksum, a docker build context) is cached
// in large folios, up to 2 MiB, and a fault maps its whole folio, where a
// file just written is cached in small ones and a fault maps its 64 KiB
// neighbourhood. The same gateway after the same 4,000 requests maps 18.2
// MB of its binary in the one case and 29.8 MB in the other
// (hack/bench/pagecache-rss.sh; docs/BENCHMARK.md, "eighth round"). stageBinaries fixes that state for a
// run: the targets run from copies written at its start, as a node has them
// right after pulling an image, whatever read bin/llmgw before.

// stageBinaries copies the targets' binaries into dir and points the
// targets at the copies; the mocks keep running cfg.llmgwBin.
func stageBinaries(dir string, cfg *config) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, b := range []struct {
		src, name string
		dst       *string
	}{
		{cfg.llmgwBin, "llmgw", &cfg.targetLlmgw},
		{cfg.revproxyBin, "bench-revproxy", &cfg.targetRevproxy},
	} {
		to := filepath.Join(dir, b.name)
		if err := copyExecutable(b.src, to); err != nil {
			return fmt.Errorf("staging %s: %w", b.src, err)
		}
		*b.dst = to
	}
	return nil
}

func copyExecutable(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	_, err = io.Copy(out, in)
	return err
}
