package testutil

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The variables of the envtest gate.
const (
	// EnvAssets names the directory of the envtest binaries (kube-apiserver,
	// etcd, kubectl), as controller-runtime's envtest reads it.
	EnvAssets = "KUBEBUILDER_ASSETS"
	// EnvRequire, when true (1), makes a missing control plane fail the test
	// instead of skipping it. make test sets it, so CI never passes quietly
	// without the envtest suites.
	EnvRequire = "LLMGW_REQUIRE_ENVTEST"
)

// RequireEnvtest is the gate of every test that needs the envtest control
// plane. It returns the directory of the envtest binaries: $KUBEBUILDER_ASSETS
// when set, else <cache>/envtest/$K8S_VERSION (K8S_VERSION from this
// repository's hack/versions.env) when `make envtest` built it there; the
// cache is $LLMGW_CACHE, else $XDG_CACHE_HOME/llmgw, else $HOME/.cache/llmgw,
// as in hack/envtest.sh. When there is neither, it skips the test, or fails it
// when LLMGW_REQUIRE_ENVTEST is true.
//
// When the binaries come from the cache, RequireEnvtest also sets
// KUBEBUILDER_ASSETS for the rest of the test binary's run, so that an
// envtest.Environment without BinaryAssetsDirectory, and anything else that
// reads the variable, finds them.
func RequireEnvtest(t testing.TB) string {
	t.Helper()
	wd, _ := os.Getwd()
	g := envtestGate(os.Getenv, wd)
	switch {
	case g.assets != "":
		if os.Getenv(EnvAssets) == "" {
			if err := os.Setenv(EnvAssets, g.assets); err != nil {
				t.Fatalf("setting %s: %v", EnvAssets, err)
			}
		}
		return g.assets
	case g.required:
		t.Fatalf("%s=%s but there are no envtest binaries: %s", EnvRequire, os.Getenv(EnvRequire), g.hint)
	default:
		t.Skipf("no envtest binaries, skipping (set %s=1 to fail instead): %s", EnvRequire, g.hint)
	}
	return ""
}

type gate struct {
	assets   string // where the binaries are; "" when not found
	required bool   // LLMGW_REQUIRE_ENVTEST is true
	hint     string // how to get the binaries, when not found
}

// envtestGate decides from the environment and the working directory (any
// directory inside the repository).
func envtestGate(getenv func(string) string, wd string) gate {
	g := gate{required: truthy(getenv(EnvRequire))}
	if a := getenv(EnvAssets); a != "" {
		g.assets = a
		return g
	}
	root := repoRoot(wd)
	if root == "" {
		g.hint = fmt.Sprintf("set %s (export %s=$(hack/envtest.sh))", EnvAssets, EnvAssets)
		return g
	}
	version := k8sVersion(root)
	if version == "" {
		g.hint = fmt.Sprintf("set %s; %s has no K8S_VERSION", EnvAssets, filepath.Join(root, "hack", "versions.env"))
		return g
	}
	cache := cacheDir(getenv)
	if cache == "" {
		g.hint = fmt.Sprintf("set %s (export %s=$(hack/envtest.sh)); neither LLMGW_CACHE, XDG_CACHE_HOME nor HOME is set", EnvAssets, EnvAssets)
		return g
	}
	dir := filepath.Join(cache, "envtest", version)
	if have(dir, "kube-apiserver") && have(dir, "etcd") {
		g.assets = dir
		return g
	}
	g.hint = fmt.Sprintf("%s is unset and %s has no kube-apiserver and etcd; run make envtest, or export %s=$(hack/envtest.sh)",
		EnvAssets, dir, EnvAssets)
	return g
}

// cacheDir is where hack/envtest.sh builds: $LLMGW_CACHE, else
// $XDG_CACHE_HOME/llmgw, else $HOME/.cache/llmgw; "" when none is set.
func cacheDir(getenv func(string) string) string {
	if c := getenv("LLMGW_CACHE"); c != "" {
		return c
	}
	if x := getenv("XDG_CACHE_HOME"); x != "" {
		return filepath.Join(x, "llmgw")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".cache", "llmgw")
	}
	return ""
}

// truthy: "1", "true" and the like are true; "", "0", "false" are false; any
// other non-empty value counts as true (the variable was set to ask for it).
func truthy(v string) bool {
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	return err != nil || b
}

// repoRoot is the nearest directory at or above dir whose go.mod declares
// this module; "" when there is none.
func repoRoot(dir string) string {
	if dir == "" {
		return ""
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			for line := range strings.Lines(string(data)) {
				if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
					if f[1] == "github.com/llmgw/llmgw" {
						return dir
					}
					break
				}
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// k8sVersion is K8S_VERSION from hack/versions.env (the directory name under
// <cache>/envtest that hack/envtest.sh builds into); "" when it is missing.
func k8sVersion(root string) string {
	f, err := os.Open(filepath.Join(root, "hack", "versions.env"))
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "K8S_VERSION="); ok {
			return strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return ""
}

func have(dir, name string) bool {
	fi, err := os.Stat(filepath.Join(dir, name))
	return err == nil && !fi.IsDir()
}
