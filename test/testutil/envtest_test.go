package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRepo lays out a repository with hack/versions.env and, when built,
// bin/k8s/<version>/{kube-apiserver,etcd}; it returns a package directory in it.
func fakeRepo(t *testing.T, module string, built bool) (root, pkg string) {
	t.Helper()
	root = t.TempDir()
	write := func(rel, data string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module "+module+"\n\ngo 1.26\n")
	write("hack/versions.env", "# pinned\nK8S_VERSION=v9.9.9\nKIND_VERSION=v0\n")
	write("controllers/x.go", "package controllers\n")
	if built {
		write("bin/k8s/v9.9.9/kube-apiserver", "")
		write("bin/k8s/v9.9.9/etcd", "")
	}
	return root, filepath.Join(root, "controllers")
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestEnvtestGate(t *testing.T) {
	builtRoot, builtPkg := fakeRepo(t, "github.com/llmgw/llmgw", true)
	_, emptyPkg := fakeRepo(t, "github.com/llmgw/llmgw", false)
	_, otherPkg := fakeRepo(t, "example.com/other", true)
	builtDir := filepath.Join(builtRoot, "bin", "k8s", "v9.9.9")

	cases := []struct {
		name     string
		vars     map[string]string
		wd       string
		assets   string
		required bool
	}{
		{"KUBEBUILDER_ASSETS wins", map[string]string{EnvAssets: "/opt/k8s"}, builtPkg, "/opt/k8s", false},
		{"KUBEBUILDER_ASSETS, required", map[string]string{EnvAssets: "/opt/k8s", EnvRequire: "1"}, emptyPkg, "/opt/k8s", true},
		{"built by make envtest", nil, builtPkg, builtDir, false},
		{"nothing: skip", nil, emptyPkg, "", false},
		{"nothing, required: fail", map[string]string{EnvRequire: "1"}, emptyPkg, "", true},
		{"required=true", map[string]string{EnvRequire: "true"}, emptyPkg, "", true},
		{"required=0 is not required", map[string]string{EnvRequire: "0"}, emptyPkg, "", false},
		{"required=false is not required", map[string]string{EnvRequire: "false"}, emptyPkg, "", false},
		{"another module's bin is not used", nil, otherPkg, "", false},
		{"outside any module", nil, "/", "", false},
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

// TestRequireEnvtestFromBin: binaries found under bin/k8s are exported as
// KUBEBUILDER_ASSETS, for envtest.Environment{} and kubectl lookups.
func TestRequireEnvtestFromBin(t *testing.T) {
	root, pkg := fakeRepo(t, "github.com/llmgw/llmgw", true)
	t.Setenv(EnvAssets, "")
	t.Chdir(pkg)
	want := filepath.Join(root, "bin", "k8s", "v9.9.9")
	if got := RequireEnvtest(t); got != want {
		t.Fatalf("RequireEnvtest = %q, want %q", got, want)
	}
	if got := os.Getenv(EnvAssets); got != want {
		t.Fatalf("%s = %q, want %q", EnvAssets, got, want)
	}
}
