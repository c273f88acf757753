// Command gen writes config/components/monitoring from the Helm chart
// (package monitoring says how); `make monitoring-manifests` runs it in the
// repository root.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/llmgw/llmgw/hack/monitoring"
)

func main() {
	helm := flag.String("helm", "go tool helm", "the helm command (words split at spaces)")
	root := flag.String("root", ".", "the repository root")
	flag.Parse()
	if err := run(strings.Fields(*helm), *root); err != nil {
		fmt.Fprintln(os.Stderr, "monitoring-manifests:", err)
		os.Exit(1)
	}
}

func run(helm []string, root string) error {
	if len(helm) == 0 {
		return fmt.Errorf("-helm is empty")
	}
	cmd := exec.Command(helm[0], append(helm[1:], monitoring.HelmArgs()...)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	files, err := monitoring.Generate(out)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(root, monitoring.Dir), 0o755); err != nil {
		return err
	}
	for _, name := range monitoring.Templates {
		path := filepath.Join(root, monitoring.Dir, name)
		old, _ := os.ReadFile(path)
		if bytes.Equal(old, files[name]) {
			continue
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			return err
		}
		fmt.Println("monitoring-manifests: wrote", path)
	}
	return nil
}
