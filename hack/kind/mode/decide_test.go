package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	notRun = Probe{}
	ok     = Probe{Outcome: OK, Detail: "ok-detail"}
	failed = Probe{Outcome: Failed, Detail: "fail-detail"}
)

// The decision table: every mode x registry x privileged combination.
func TestDecideTable(t *testing.T) {
	const (
		explicit = "was set explicitly"
		noReg    = "cannot be had from a registry"
		noPriv   = "cannot run privileged containers"
		unknown  = "not known whether"
		note     = "detection alone would have chosen the"
	)
	tests := []struct {
		mode           Mode
		reg, priv      Probe
		want           Mode
		reasons, avoid []string
	}{
		// auto: online only when both probes are OK.
		{ModeAuto, ok, ok, ModeOnline, []string{"can be had: ok-detail", "run with the default runtime: ok-detail"}, []string{noReg, noPriv}},
		{ModeAuto, ok, failed, ModeOffline, []string{noPriv + " with its default runtime: fail-detail"}, []string{noReg}},
		{ModeAuto, ok, notRun, ModeOffline, []string{unknown}, []string{noReg, noPriv}},
		{ModeAuto, failed, ok, ModeOffline, []string{noReg + ": fail-detail"}, []string{noPriv}},
		{ModeAuto, failed, failed, ModeOffline, []string{noReg, noPriv}, nil},
		{ModeAuto, failed, notRun, ModeOffline, []string{noReg}, []string{noPriv, unknown}},
		{ModeAuto, notRun, ok, ModeOffline, []string{noReg + ": not probed"}, []string{noPriv}},
		{ModeAuto, notRun, failed, ModeOffline, []string{noReg, noPriv}, nil},
		{ModeAuto, notRun, notRun, ModeOffline, []string{noReg}, []string{noPriv, unknown}},
		// offline: the flag wins over any detection.
		{ModeOffline, ok, ok, ModeOffline, []string{"KIND_MODE=offline " + explicit, note + " online path"}, []string{noReg, noPriv}},
		{ModeOffline, ok, failed, ModeOffline, []string{explicit}, []string{note}},
		{ModeOffline, ok, notRun, ModeOffline, []string{explicit}, []string{note}},
		{ModeOffline, failed, ok, ModeOffline, []string{explicit}, []string{note}},
		{ModeOffline, failed, failed, ModeOffline, []string{explicit}, []string{note}},
		{ModeOffline, failed, notRun, ModeOffline, []string{explicit}, []string{note}},
		{ModeOffline, notRun, ok, ModeOffline, []string{explicit}, []string{note}},
		{ModeOffline, notRun, failed, ModeOffline, []string{explicit}, []string{note}},
		{ModeOffline, notRun, notRun, ModeOffline, []string{explicit}, []string{note}},
		// online: the flag wins over any detection.
		{ModeOnline, ok, ok, ModeOnline, []string{"KIND_MODE=online " + explicit}, []string{note}},
		{ModeOnline, ok, failed, ModeOnline, []string{explicit, note + " offline path", noPriv}, nil},
		{ModeOnline, ok, notRun, ModeOnline, []string{explicit, note + " offline path", unknown}, nil},
		{ModeOnline, failed, ok, ModeOnline, []string{explicit, note + " offline path", noReg}, nil},
		{ModeOnline, failed, failed, ModeOnline, []string{explicit, note + " offline path", noReg, noPriv}, nil},
		{ModeOnline, failed, notRun, ModeOnline, []string{explicit, note + " offline path", noReg}, nil},
		{ModeOnline, notRun, ok, ModeOnline, []string{explicit, note + " offline path", noReg}, nil},
		{ModeOnline, notRun, failed, ModeOnline, []string{explicit, note + " offline path", noPriv}, nil},
		// nothing probed: no note, detection is unknown
		{ModeOnline, notRun, notRun, ModeOnline, []string{explicit}, []string{note}},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		name := string(tc.mode) + "/registry=" + tc.reg.Outcome.String() + "/privileged=" + tc.priv.Outcome.String()
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			d, err := decide(Inputs{Mode: tc.mode, Registry: tc.reg, Privileged: tc.priv})
			if err != nil {
				t.Fatal(err)
			}
			if d.Path != tc.want {
				t.Errorf("path %s, want %s (reasons %q)", d.Path, tc.want, d.Reasons)
			}
			all := strings.Join(d.Reasons, "\n")
			for _, r := range tc.reasons {
				if !strings.Contains(all, r) {
					t.Errorf("reasons %q lack %q", d.Reasons, r)
				}
			}
			for _, r := range tc.avoid {
				if strings.Contains(all, r) {
					t.Errorf("reasons %q contain %q", d.Reasons, r)
				}
			}
		})
	}
	if len(seen) != 27 {
		t.Errorf("table covers %d of the 27 combinations", len(seen))
	}
	if _, err := decide(Inputs{Mode: "sometimes"}); err == nil {
		t.Error("unknown mode: no error")
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": ModeAuto, "auto": ModeAuto, "Offline": ModeOffline, " online ": ModeOnline} {
		if got, err := parseMode(in); err != nil || got != want {
			t.Errorf("parseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := parseMode("yes"); err == nil {
		t.Error(`parseMode("yes"): no error`)
	}
	var out, errb bytes.Buffer
	if rc := realMain([]string{"-mode", "sometimes"}, &out, &errb); rc != 2 || !strings.Contains(errb.String(), "want auto, offline or online") {
		t.Errorf("realMain -mode sometimes: rc %d, stderr %q", rc, errb.String())
	}
	if rc := realMain([]string{"-registry", "maybe"}, &out, &errb); rc != 2 {
		t.Errorf("realMain -registry maybe: rc %d", rc)
	}
}

// fakeProbes counts calls and returns fixed results.
type fakeProbes struct {
	reg, priv                     Probe
	facts                         Facts
	regCalls, privCalls, facCalls int
	deadline                      bool
}

func (f *fakeProbes) probes() Probes {
	return Probes{
		Registry: func(ctx context.Context, image string) Probe {
			f.regCalls++
			_, f.deadline = ctx.Deadline()
			return f.reg
		},
		Privileged:   func(context.Context) Probe { f.privCalls++; return f.priv },
		Facts:        func(context.Context) Facts { f.facCalls++; return f.facts },
		ImagePresent: func(context.Context, string) bool { return false },
	}
}

func TestRunProbesOnlyWhatMatters(t *testing.T) {
	tests := []struct {
		name                string
		cfg                 Config
		reg, priv           Probe
		want                Mode
		regCalls, privCalls int
		facCalls            int
	}{
		{"auto both ok", Config{Mode: ModeAuto}, ok, ok, ModeOnline, 1, 1, 0},
		{"auto privileged fails", Config{Mode: ModeAuto}, ok, failed, ModeOffline, 1, 1, 1},
		{"auto registry fails: privileged skipped", Config{Mode: ModeAuto}, failed, ok, ModeOffline, 1, 0, 1},
		{"auto registry fails, probe-all", Config{Mode: ModeAuto, ProbeAll: true}, failed, failed, ModeOffline, 1, 1, 1},
		{"explicit offline: no probes", Config{Mode: ModeOffline}, ok, ok, ModeOffline, 0, 0, 1},
		{"explicit online: no probes", Config{Mode: ModeOnline}, failed, failed, ModeOnline, 0, 0, 0},
		{"explicit online, probe-all", Config{Mode: ModeOnline, ProbeAll: true}, failed, failed, ModeOnline, 1, 1, 0},
		{"results given by the caller", Config{Mode: ModeAuto, Registry: ok, Privileged: ok}, failed, failed, ModeOnline, 0, 0, 0},
		{"registry given as failed", Config{Mode: ModeAuto, Registry: failed}, ok, ok, ModeOffline, 0, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeProbes{reg: tc.reg, priv: tc.priv}
			tc.cfg.Timeout = time.Second
			res, err := run(context.Background(), tc.cfg, f.probes())
			if err != nil {
				t.Fatal(err)
			}
			if res.Decision.Path != tc.want {
				t.Errorf("path %s, want %s (%q)", res.Decision.Path, tc.want, res.Decision.Reasons)
			}
			if f.regCalls != tc.regCalls || f.privCalls != tc.privCalls || f.facCalls != tc.facCalls {
				t.Errorf("calls registry %d privileged %d facts %d, want %d %d %d",
					f.regCalls, f.privCalls, f.facCalls, tc.regCalls, tc.privCalls, tc.facCalls)
			}
			if f.regCalls > 0 && !f.deadline {
				t.Error("registry probe ran without a deadline")
			}
		})
	}
}

func allMissing() Facts {
	return Facts{
		MissingPackages: []string{"docker.io", "debootstrap"}, CheckedPackages: []string{"docker.io", "debootstrap", "gcc"},
		WrapperPath: wrapperPath, DaemonJSON: "/etc/docker/daemon.json", RuntimeName: runtimeName,
		Images: []Image{
			{Ref: "llmgw-kind/node:v1.37.2"},
			{Ref: "registry.k8s.io/kube-apiserver:v1.37.2", Upstream: true},
			{Ref: "docker.io/kindest/kindnetd:v1", Upstream: true, Present: true},
		},
		Cache: "/cache",
	}
}

// The offline path says what it will change; the online one that it changes nothing system-wide.
func TestReportListsChanges(t *testing.T) {
	in := Inputs{Mode: ModeAuto, Registry: failed, Privileged: Probe{Detail: "the registry probe failed"}}
	d, _ := decide(in)
	msg := report(in, d, "", offlinePlan(allMissing()))
	for _, want := range []string{
		"KIND_MODE=auto -> the offline path",
		"because the node image cannot be had from a registry: fail-detail",
		"privileged container probe: not probed (the registry probe failed)",
		"[will do] apt-get update && apt-get install docker.io debootstrap",
		"[will do] runtime wrapper installed at " + wrapperPath,
		`[will do] /etc/docker/daemon.json: add "runtimes": {"llmgw-runc": {"path": "` + wrapperPath + `"}}`,
		"kill -HUP dockerd",
		"[will do] dockerd started in the background",
		"[will do] images built under llmgw-kind/",
		"llmgw-kind/node:v1.37.2 (new)",
		"[will do] stand-in images built from source and tagged with upstream names",
		"registry.k8s.io/kube-apiserver:v1.37.2 (new), docker.io/kindest/kindnetd:v1",
		"[will do] runtime llmgw-runc forced on kind's node containers",
		"KIND_MODE=online",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("offline report lacks %q:\n%s", want, msg)
		}
	}
	// The changes come in the order they are made: engine first, images, then the forced runtime at create.
	if a, b := strings.Index(msg, "apt-get install"), strings.Index(msg, "daemon.json: add"); a > b {
		t.Errorf("apt after daemon.json:\n%s", msg)
	}
	if a, b := strings.Index(msg, "stand-in images"), strings.Index(msg, "forced on kind's"); a > b {
		t.Errorf("images after the forced runtime:\n%s", msg)
	}

	done := Facts{CheckedPackages: []string{"docker.io"}, WrapperPath: wrapperPath, WrapperInstalled: true, DaemonJSON: "/d.json",
		RuntimeName: runtimeName, RuntimeRegistered: true, EngineRunning: true,
		Images: []Image{{Ref: "llmgw-kind/node:v1", Present: true}, {Ref: "registry.k8s.io/pause:3", Upstream: true, Present: true}}}
	msg = report(in, d, "", offlinePlan(done))
	for _, want := range []string{"[in place] apt packages docker.io: all installed", "[in place] runtime wrapper", "[in place] /d.json: add",
		"[in place] dockerd started", "[in place] images built", "[in place] stand-in images", "[will do] runtime llmgw-runc forced"} {
		if !strings.Contains(msg, want) {
			t.Errorf("offline report (all in place) lacks %q:\n%s", want, msg)
		}
	}

	withImage := allMissing()
	withImage.NodeImage = "example/node:v1"
	msg = report(in, d, "", offlinePlan(withImage))
	if !strings.Contains(msg, "KIND_NODE_IMAGE=example/node:v1 (nothing built, no images tagged)") || strings.Contains(msg, "stand-in images") {
		t.Errorf("offline report with KIND_NODE_IMAGE:\n%s", msg)
	}

	in = Inputs{Mode: ModeAuto, Registry: ok, Privileged: ok}
	d, _ = decide(in)
	msg = report(in, d, "a note", onlinePlan("kindest/node:v1.37.0@sha256:abc", false, "/cache/k8s/v1/kubectl", true))
	for _, want := range []string{"-> the online path", "nothing system-wide", "no shim, no --runtime", "no stand-in images",
		"docker pulls kindest/node:v1.37.0@sha256:abc", "note: a note",
		"[in place] kubectl built from source as /cache/k8s/v1/kubectl"} {
		if !strings.Contains(msg, want) {
			t.Errorf("online report lacks %q:\n%s", want, msg)
		}
	}
	for _, avoid := range []string{"apt-get install", "daemon.json: add", "forced on", "[will do] stand-in"} {
		if strings.Contains(msg, avoid) {
			t.Errorf("online report contains %q:\n%s", avoid, msg)
		}
	}
}

func TestUpstreamNodeImage(t *testing.T) {
	const def = "kindest/node:v1.37.0@sha256:abc"
	tests := []struct {
		override, k8s, want, note string
	}{
		{"", "v1.37.0", def, ""},
		{"", "v1.37.2", def, "kind's node image for Kubernetes v1.37 is v1.37.0"},
		{"", "v1.38.1", "kindest/node:v1.38.1", "not digest-pinned"},
		{"my/node:x", "v1.37.2", "my/node:x", ""},
		{"", "", def, ""},
	}
	for _, tc := range tests {
		img, note := upstreamNodeImage(tc.override, def, tc.k8s)
		if img != tc.want || (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) {
			t.Errorf("upstreamNodeImage(%q, %q) = %q, %q; want %q, note with %q", tc.override, tc.k8s, img, note, tc.want, tc.note)
		}
	}
	if v := imageVersion("localhost:5000/kindest/node:v1.2.3@sha256:x"); v != "v1.2.3" {
		t.Errorf("imageVersion = %q", v)
	}
	if v := imageVersion("localhost:5000/node"); v != "" {
		t.Errorf("imageVersion without tag = %q", v)
	}
}

// fakeDocker records commands and answers from a table keyed by the command's
// first words.
type fakeDocker struct {
	answers map[string]fakeAnswer
	calls   []string
}

type fakeAnswer struct {
	stdout, stderr string
	err            error
}

func (f *fakeDocker) run(_ context.Context, _ io.Reader, name string, args ...string) (string, string, error) {
	line := strings.Join(append([]string{name}, args...), " ")
	f.calls = append(f.calls, line)
	best := ""
	for k := range f.answers {
		if strings.HasPrefix(line, k) && len(k) > len(best) {
			best = k
		}
	}
	if best == "" {
		return "", "", nil
	}
	a := f.answers[best]
	return a.stdout, a.stderr, a.err
}

func (f *fakeDocker) called(prefix string) bool {
	for _, c := range f.calls {
		if strings.HasPrefix(c, prefix) {
			return true
		}
	}
	return false
}

var errExit = errors.New("exit status 1")

func TestRegistryProbe(t *testing.T) {
	img := "kindest/node:v1"
	f := &fakeDocker{answers: map[string]fakeAnswer{}}
	p := (&docker{run: f.run}).registry(context.Background(), img)
	if p.Outcome != OK || !strings.Contains(p.Detail, "present locally") || f.called("docker manifest") {
		t.Errorf("present image: %+v, calls %q", p, f.calls)
	}

	f = &fakeDocker{answers: map[string]fakeAnswer{"docker image inspect": {err: errExit}}}
	p = (&docker{run: f.run}).registry(context.Background(), img)
	if p.Outcome != OK || !strings.Contains(p.Detail, "registry answered") {
		t.Errorf("manifest ok: %+v", p)
	}

	f = &fakeDocker{answers: map[string]fakeAnswer{
		"docker image inspect":    {err: errExit},
		"docker manifest inspect": {stderr: "failed to configure transport: dial tcp: lookup registry-1.docker.io: no such host\n", err: errExit},
	}}
	p = (&docker{run: f.run}).registry(context.Background(), img)
	if p.Outcome != Failed || !strings.Contains(p.Detail, "no such host") {
		t.Errorf("no registry: %+v", p)
	}

	f = &fakeDocker{answers: map[string]fakeAnswer{
		"docker image inspect":    {err: errExit},
		"docker manifest inspect": {err: context.DeadlineExceeded},
	}}
	p = (&docker{run: f.run}).registry(context.Background(), img)
	if p.Outcome != Failed || !strings.Contains(p.Detail, "no answer within the time limit") {
		t.Errorf("registry time-out: %+v", p)
	}
}

func TestPrivilegedProbe(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "true")
	if err := os.WriteFile(bin, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	binary := func(_ context.Context, platform string) (string, func(), error) {
		if platform != "linux/amd64" {
			t.Errorf("platform %q", platform)
		}
		return bin, func() {}, nil
	}

	f := &fakeDocker{answers: map[string]fakeAnswer{"docker version": {stderr: "Cannot connect to the Docker daemon at unix:///var/run/docker.sock.\n", err: errExit}}}
	p := (&docker{run: f.run, binary: binary}).privileged(context.Background())
	if p.Outcome != Failed || !strings.Contains(p.Detail, "no container engine answers") || !strings.Contains(p.Detail, "Cannot connect") || f.called("docker run") {
		t.Errorf("no engine: %+v, calls %q", p, f.calls)
	}

	f = &fakeDocker{answers: map[string]fakeAnswer{
		"docker version": {stdout: "linux/amd64\n"},
		"docker run":     {stderr: "docker: Error response from daemon: OCI runtime create failed: unable to apply caps: operation not permitted: unknown.\nRun 'docker run --help' for more information\n", err: errExit},
	}}
	p = (&docker{run: f.run, binary: binary}).privileged(context.Background())
	if p.Outcome != Failed || !strings.Contains(p.Detail, "unable to apply caps") {
		t.Errorf("caps: %+v", p)
	}
	for _, want := range []string{"docker import --change ENTRYPOINT [\"/probe\", \"" + probeArg + "\"] - llmgw-kind/mode-probe:",
		"docker run --rm --name llmgw-kind-mode-probe-", "docker rm -f llmgw-kind-mode-probe-", "docker image rm -f llmgw-kind/mode-probe:"} {
		if !f.called(want) {
			t.Errorf("no %q in %q", want, f.calls)
		}
	}
	for _, c := range f.calls {
		if strings.HasPrefix(c, "docker run") && (!strings.Contains(c, "--privileged") || strings.Contains(c, "--runtime")) {
			t.Errorf("probe run %q: want --privileged with the default runtime", c)
		}
	}

	f = &fakeDocker{answers: map[string]fakeAnswer{"docker version": {stdout: "linux/amd64\n"}}}
	p = (&docker{run: f.run, binary: binary}).privileged(context.Background())
	if p.Outcome != OK {
		t.Errorf("privileged ok: %+v", p)
	}
}

func TestTarOfIsStable(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(bin, []byte("abc"), 0o755); err != nil {
		t.Fatal(err)
	}
	a, err := tarOf(bin, "probe")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := tarOf(bin, "probe")
	if !bytes.Equal(a, b) {
		t.Error("tarOf differs between calls")
	}
}
