//go:build linux

package residency

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestDevString(t *testing.T) {
	for _, c := range []struct {
		major, minor uint64
		want         string
	}{
		{254, 0, "fe:00"},
		{8, 17, "08:11"},
		{259, 3, "103:03"},
		{0, 300, "00:12c"},
		{4095, 0x12345, "fff:12345"},
	} {
		// The kernel's new_encode_dev, the encoding of stat's st_dev.
		dev := c.minor&0xff | c.major<<8 | (c.minor&^0xff)<<12
		if got := devString(dev); got != c.want {
			t.Errorf("devString(%d:%d) = %q, want %q", c.major, c.minor, got, c.want)
		}
	}
}

func TestReleaseDropsTheExecutablesPages(t *testing.T) {
	res, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	if res.Advised == 0 {
		t.Fatal("nothing advised: the test binary's text was not found")
	}
	if res.FileAfter >= res.FileBefore {
		t.Fatalf("RssFile %d bytes before, %d after: nothing was dropped", res.FileBefore, res.FileAfter)
	}
	t.Logf("advised %d MB; RssFile %.1f -> %.1f MB", res.Advised>>20, float64(res.FileBefore)/(1<<20), float64(res.FileAfter)/(1<<20))
}

// A position-independent executable's loader writes relocated pointers into
// data it then makes read-only; dropping those pages would hand the program
// the file's unrelocated bytes. piecheck releases and then uses that data.
func TestReleaseKeepsRelocatedReadOnlyData(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	gobin := "go" // from PATH when the test binary does not know its GOROOT (-trimpath)
	if root := runtime.GOROOT(); root != "" {
		gobin = filepath.Join(root, "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "piecheck")
	build := exec.Command(gobin, "build", "-buildmode=pie", "-o", bin, "./testdata/piecheck")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building piecheck: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("piecheck after release: %v\n%s", err, out)
	}
}
