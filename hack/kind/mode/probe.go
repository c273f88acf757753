package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"
)

// probeArg makes this binary exit 0 at once: the privileged probe's container
// runs it.
const probeArg = "llmgw-kind-probe-true"

// What hack/kind/lib.sh and engine.sh use for the offline path.
const (
	runtimeName = "llmgw-runc"
	wrapperPath = "/usr/local/lib/llmgw-kind/runtime-wrapper"
)

// runFunc runs a command and returns its stdout and stderr; tests fake it.
type runFunc func(ctx context.Context, stdin io.Reader, name string, args ...string) (stdout, stderr string, err error)

func execRun(ctx context.Context, stdin io.Reader, name string, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = stdin
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return o.String(), e.String(), err
}

// docker holds the real probes; every command goes through run.
type docker struct {
	run runFunc
	// binary returns a static linux binary for the engine's platform
	// ("linux/amd64") that exits 0 when given probeArg; nil: probeBinary.
	binary func(ctx context.Context, platform string) (path string, cleanup func(), err error)
}

// why is the most useful part of a failed command's output.
func why(stderr string, err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer within the time limit"
	case errors.Is(err, exec.ErrNotFound):
		return "no docker command on PATH"
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "See '") && !strings.HasPrefix(l, "Run '") {
			if len(l) > 300 {
				l = l[:300] + "..."
			}
			return l
		}
	}
	if err != nil {
		return err.Error()
	}
	return "failed"
}

func (d *docker) imagePresent(ctx context.Context, image string) bool {
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, _, err := d.run(c, nil, "docker", "image", "inspect", "--format", "{{.Id}}", image)
	return err == nil
}

// registry: the node image is present locally, or `docker manifest inspect`
// gets its manifest from the registry (nothing is pulled).
func (d *docker) registry(ctx context.Context, image string) Probe {
	if d.imagePresent(ctx, image) {
		return Probe{Outcome: OK, Detail: image + " is present locally"}
	}
	_, stderr, err := d.run(ctx, nil, "docker", "manifest", "inspect", image)
	if err != nil {
		return Probe{Outcome: Failed, Detail: "docker manifest inspect " + image + ": " + why(stderr, err)}
	}
	return Probe{Outcome: OK, Detail: "the registry answered for " + image + " (docker manifest inspect)"}
}

// privileged: `docker run --rm --privileged` with the engine's default runtime
// of a tiny image made on the spot from a static binary (docker import, no
// pull), which exits 0. The container and the image are removed afterwards.
func (d *docker) privileged(ctx context.Context) Probe {
	out, stderr, err := d.run(ctx, nil, "docker", "version", "--format", "{{.Server.Os}}/{{.Server.Arch}}")
	if err != nil {
		return Probe{Outcome: Failed, Detail: "no container engine answers (docker version: " + why(stderr, err) + ")"}
	}
	platform := strings.TrimSpace(out)
	binary := d.binary
	if binary == nil {
		binary = probeBinary
	}
	bin, cleanup, err := binary(ctx, platform)
	if err != nil {
		return Probe{Outcome: Failed, Detail: "could not make the probe binary for " + platform + ": " + err.Error()}
	}
	defer cleanup()
	data, err := tarOf(bin, "probe")
	if err != nil {
		return Probe{Outcome: Failed, Detail: "could not read the probe binary: " + err.Error()}
	}
	sum := sha256.Sum256(data)
	tag := "llmgw-kind/mode-probe:" + hex.EncodeToString(sum[:6])
	name := fmt.Sprintf("llmgw-kind-mode-probe-%d", os.Getpid())
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, _, _ = d.run(c, nil, "docker", "rm", "-f", name)
		_, _, _ = d.run(c, nil, "docker", "image", "rm", "-f", tag)
	}()
	if _, stderr, err := d.run(ctx, bytes.NewReader(data), "docker", "import",
		"--change", fmt.Sprintf(`ENTRYPOINT ["/probe", %q]`, probeArg), "-", tag); err != nil {
		return Probe{Outcome: Failed, Detail: "docker import of the probe image: " + why(stderr, err)}
	}
	if _, stderr, err := d.run(ctx, nil, "docker", "run", "--rm", "--name", name, "--privileged", "--network", "none", tag); err != nil {
		return Probe{Outcome: Failed, Detail: "docker run --privileged: " + why(stderr, err)}
	}
	return Probe{Outcome: OK, Detail: "docker run --rm --privileged of a local " + platform + " image exited 0"}
}

// tarOf is a tar stream with one executable file, stable for the same content.
func tarOf(path, name string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(b)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(b); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// probeBinary is this binary when it is a static one for platform, else a
// static empty program built for platform with the go command.
func probeBinary(ctx context.Context, platform string) (string, func(), error) {
	if platform == "linux/"+runtime.GOARCH && runtime.GOOS == "linux" {
		if exe, err := os.Executable(); err == nil && isStatic(exe) {
			return exe, func() {}, nil
		}
	}
	goos, goarch, ok := strings.Cut(platform, "/")
	if !ok || goos != "linux" {
		return "", nil, fmt.Errorf("engine platform %q: only linux engines are supported", platform)
	}
	dir, err := os.MkdirTemp("", "llmgw-kind-probe")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	files := map[string]string{
		"go.mod":  "module llmgw.local/probe\n\ngo 1.21\n",
		"main.go": "package main\n\nfunc main() {}\n",
	}
	for n, s := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644); err != nil {
			cleanup()
			return "", nil, err
		}
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", "probe", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("go build: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return filepath.Join(dir, "probe"), cleanup, nil
}

func isStatic(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

type factsConfig struct {
	versions   map[string]string
	daemonJSON string
	nodeImage  string
	cache      string
}

// facts looks at what hack/kind/engine.sh and image.sh would change.
func (d *docker) facts(ctx context.Context, fc factsConfig) Facts {
	f := Facts{WrapperPath: wrapperPath, DaemonJSON: fc.daemonJSON, RuntimeName: runtimeName, NodeImage: fc.nodeImage, Cache: fc.cache}
	has := func(cmd string) func() bool { return func() bool { _, err := exec.LookPath(cmd); return err == nil } }
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// The same checks as engine.sh's have_host_pkgs.
	for _, p := range []struct {
		pkgs []string
		have func() bool
	}{
		{[]string{"docker.io"}, has("dockerd")},
		{[]string{"debootstrap"}, has("debootstrap")},
		{[]string{"busybox-static"}, func() bool { _, _, err := d.run(c, nil, "dpkg", "-s", "busybox-static"); return err == nil }},
		{[]string{"gcc", "libc6-dev"}, has("gcc")},
	} {
		f.CheckedPackages = append(f.CheckedPackages, p.pkgs...)
		if !p.have() {
			f.MissingPackages = append(f.MissingPackages, p.pkgs...)
		}
	}
	if fc.cache != "" {
		_, err := os.Stat(fc.cache)
		f.CacheExists = err == nil
	}
	if st, err := os.Stat(wrapperPath); err == nil && st.Mode()&0o111 != 0 {
		f.WrapperInstalled = true
	}
	if b, err := os.ReadFile(fc.daemonJSON); err == nil {
		f.RuntimeRegistered = bytes.Contains(b, []byte(`"`+runtimeName+`"`)) && bytes.Contains(b, []byte(`"`+wrapperPath+`"`))
	}
	_, _, err := d.run(c, nil, "docker", "info", "--format", "{{.ID}}")
	f.EngineRunning = err == nil
	if fc.nodeImage == "" {
		f.Images = d.images(c, fc.versions)
	}
	return f
}

// images lists what image.sh builds: its own llmgw-kind/* images and the
// stand-ins tagged with the names kubeadm and kind ask for.
func (d *docker) images(ctx context.Context, v map[string]string) []Image {
	k8s := v["K8S_VERSION"]
	own := []string{
		"llmgw-kind/debian:" + v["KIND_DEBIAN_SUITE"], "llmgw-kind/base-os:<key>", "llmgw-kind/proxy-os:<key>",
		"llmgw-kind/base:<key>", "llmgw-kind/node:" + k8s + "-<key>", "llmgw-kind/node:" + k8s,
	}
	up := []string{
		"registry.k8s.io/kube-apiserver:" + k8s, "registry.k8s.io/kube-controller-manager:" + k8s,
		"registry.k8s.io/kube-scheduler:" + k8s, "registry.k8s.io/kube-proxy:" + k8s,
		"registry.k8s.io/etcd:" + v["ETCD_IMAGE_TAG"], "registry.k8s.io/coredns/coredns:" + v["COREDNS_VERSION"],
		"registry.k8s.io/pause:" + v["PAUSE_VERSION"],
	}
	up = append(up, kindImageNames(ctx, d.run)...)
	present := map[string]bool{}
	repos := map[string]bool{}
	if out, _, err := d.run(ctx, nil, "docker", "image", "ls", "--format", "{{.Repository}}:{{.Tag}}"); err == nil {
		for _, l := range strings.Fields(out) {
			l = normalizeRef(l)
			present[l] = true
			repo, _, _ := strings.Cut(l, ":")
			repos[repo] = true
		}
	}
	var ims []Image
	for _, r := range own {
		repo, tag, _ := strings.Cut(r, ":")
		p := present[r]
		if strings.Contains(tag, "<key>") {
			p = repos[repo]
		}
		ims = append(ims, Image{Ref: r, Present: p})
	}
	for _, r := range up {
		ims = append(ims, Image{Ref: r, Upstream: true, Present: present[normalizeRef(r)]})
	}
	return ims
}

// normalizeRef drops docker.io/ and library/, as `docker image ls` does.
func normalizeRef(r string) string {
	r = strings.TrimPrefix(r, "docker.io/")
	return strings.TrimPrefix(r, "library/")
}

var (
	constRE   = regexp.MustCompile(`(?m)^const (kindnetdImage|storageProvisionerImage|storageHelperImage) = "([^"]+)"`)
	sandboxRE = regexp.MustCompile(`(?m)^\s*sandbox_image = "([^"]+)"`)
)

// kindImageNames are the image names read from kind's module sources, as
// image.sh does: kindnetd, local-path-provisioner and its helper, and the
// sandbox (pause) image of kind's containerd config.
func kindImageNames(ctx context.Context, run runFunc) []string {
	out, _, err := run(ctx, nil, "go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kind")
	dir := strings.TrimSpace(out)
	if err != nil || dir == "" {
		return []string{"docker.io/kindest/kindnetd, local-path-provisioner, local-path-helper and the sandbox pause image (names read from kind's sources)"}
	}
	var names []string
	for _, f := range []string{"pkg/build/nodeimage/const_cni.go", "pkg/build/nodeimage/const_storage.go"} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		for _, m := range constRE.FindAllSubmatch(b, -1) {
			names = append(names, string(m[2]))
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "images/base/files/etc/containerd/config.toml"))
	if m := sandboxRE.FindSubmatch(b); m != nil {
		names = append(names, string(m[1]))
	}
	return names
}
