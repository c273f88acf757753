package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// write creates root/rel with data, and its directories.
func write(t *testing.T, root, rel, data string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o755); err != nil {
		t.Fatal(err)
	}
}

// fakeRepo lays out a repository of module with hack/versions.env pinning
// K8S_VERSION v9.9.9 and returns a package directory in it.
func fakeRepo(t *testing.T, module string) (pkg string) {
	t.Helper()
	root := t.TempDir()
	write(t, root, "go.mod", "module "+module+"\n\ngo 1.26\n")
	write(t, root, "hack/versions.env", "# pinned\nK8S_VERSION=v9.9.9\nKIND_VERSION=v0\n")
	write(t, root, "controllers/x.go", "package controllers\n")
	return filepath.Join(root, "controllers")
}

// fakeCache lays out what `make envtest` leaves in a cache directory:
// envtest/v9.9.9/{kube-apiserver,etcd}; it returns that binaries directory.
func fakeCache(t *testing.T, cache string) string {
	t.Helper()
	write(t, cache, "envtest/v9.9.9/kube-apiserver", "")
	write(t, cache, "envtest/v9.9.9/etcd", "")
	return filepath.Join(cache, "envtest", "v9.9.9")
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestEnvtestGate(t *testing.T) {
	pkg := fakeRepo(t, "github.com/llmgw/llmgw")
	otherPkg := fakeRepo(t, "example.com/other")
	cache := t.TempDir()
	built := fakeCache(t, cache)
	xdg := t.TempDir()
	builtXDG := fakeCache(t, filepath.Join(xdg, "llmgw"))
	home := t.TempDir()
	builtHome := fakeCache(t, filepath.Join(home, ".cache", "llmgw"))
	empty := t.TempDir()

	cases := []struct {
		name     string
		vars     map[string]string
		wd       string
		assets   string
		required bool
	}{
		{"KUBEBUILDER_ASSETS wins", map[string]string{EnvAssets: "/opt/k8s", "LLMGW_CACHE": cache}, pkg, "/opt/k8s", false},
		{"KUBEBUILDER_ASSETS, required", map[string]string{EnvAssets: "/opt/k8s", EnvRequire: "1"}, pkg, "/opt/k8s", true},
		{"built into LLMGW_CACHE", map[string]string{"LLMGW_CACHE": cache, "XDG_CACHE_HOME": xdg, "HOME": home}, pkg, built, false},
		{"built into XDG_CACHE_HOME/llmgw", map[string]string{"XDG_CACHE_HOME": xdg, "HOME": home}, pkg, builtXDG, false},
		{"built into HOME/.cache/llmgw", map[string]string{"HOME": home}, pkg, builtHome, false},
		{"LLMGW_CACHE empty: skip", map[string]string{"LLMGW_CACHE": empty, "HOME": home}, pkg, "", false},
		{"no cache variable at all: skip", nil, pkg, "", false},
		{"nothing, required: fail", map[string]string{"LLMGW_CACHE": empty, EnvRequire: "1"}, pkg, "", true},
		{"required=true", map[string]string{"LLMGW_CACHE": empty, EnvRequire: "true"}, pkg, "", true},
		{"required=0 is not required", map[string]string{"LLMGW_CACHE": empty, EnvRequire: "0"}, pkg, "", false},
		{"required=false is not required", map[string]string{"LLMGW_CACHE": empty, EnvRequire: "false"}, pkg, "", false},
		{"another module has no version of ours", map[string]string{"LLMGW_CACHE": cache}, otherPkg, "", false},
		{"outside any module", map[string]string{"LLMGW_CACHE": cache}, "/", "", false},
	}
	for _, c := range cases {
		g := envtestGate(env(c.vars), c.wd)
		if g.assets != c.assets || g.required != c.required {
			t.Errorf("%s: got assets %q required %v, want %q %v", c.name, g.assets, g.required, c.assets, c.required)
		}
		if g.assets == "" && !strings.Contains(g.hint, EnvAssets) {
			t.Errorf("%s: hint %q does not say how to get the binaries", c.name, g.hint)
		}
	}
}

// TestRequireEnvtestFromCache: binaries found in the cache are exported as
// KUBEBUILDER_ASSETS, for envtest.Environment{} and kubectl lookups.
func TestRequireEnvtestFromCache(t *testing.T) {
	pkg := fakeRepo(t, "github.com/llmgw/llmgw")
	want := fakeCache(t, t.TempDir())
	t.Setenv(EnvAssets, "")
	t.Setenv("LLMGW_CACHE", filepath.Dir(filepath.Dir(want)))
	t.Chdir(pkg)
	if got := RequireEnvtest(t); got != want {
		t.Fatalf("RequireEnvtest = %q, want %q", got, want)
	}
	if got := os.Getenv(EnvAssets); got != want {
		t.Fatalf("%s = %q, want %q", EnvAssets, got, want)
	}
}
