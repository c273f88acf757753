// Command mode decides which path hack/kind takes to a kind cluster:
//
//   - online: plain kind with the upstream node image (kindest/node, the one
//     kind's own defaults name); nothing on the machine is changed;
//   - offline: the node image built from Go modules and Debian packages, and a
//     docker runtime (llmgw-runc) registered for kind's node containers
//     (hack/kind/README.md, "The offline path").
//
// The decision takes the explicit KIND_MODE (offline, online or auto) and, for
// auto, two probes: can the node image be had (present locally, or the
// registry answers for it) and does the container engine run a privileged
// container with its default runtime. Online needs both; anything else is
// offline. For the offline path it also lists what will change on the
// machine, so hack/kind/up.sh can say so before changing it.
//
// Usage (from the repository root; hack/kind/lib.sh builds and runs it):
//
//	mode [-mode auto|offline|online] [-node-image REF] [-registry ok|fail] [-privileged ok|fail] [-probe-all]
//
// It prints "<path> <node image>" on stdout (the image is empty for the
// offline path without KIND_NODE_IMAGE) and the report on stderr.
package main

import (
	"errors"
	"fmt"
	"strings"
)

// Mode is what KIND_MODE asks for; a Decision's Path is ModeOffline or ModeOnline.
type Mode string

// The values of KIND_MODE.
const (
	ModeAuto    Mode = "auto"
	ModeOffline Mode = "offline"
	ModeOnline  Mode = "online"
)

func parseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "", ModeAuto:
		return ModeAuto, nil
	case ModeOffline, ModeOnline:
		return m, nil
	}
	return "", fmt.Errorf("KIND_MODE=%q: want auto, offline or online", s)
}

// Outcome is the result of one probe.
type Outcome int

// Probe outcomes. NotRun is the zero value: the probe was skipped.
const (
	NotRun Outcome = iota
	OK
	Failed
)

func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Failed:
		return "failed"
	}
	return "not run"
}

// Probe is one probe's outcome and what it saw.
type Probe struct {
	Outcome Outcome
	Detail  string
}

// Inputs are what decide looks at.
type Inputs struct {
	Mode Mode
	// Registry: the node image can be had, because it is present locally or
	// the registry answered for it.
	Registry Probe
	// Privileged: `docker run --privileged` of a local image succeeded with the
	// engine's default runtime (kind needs that for its node containers).
	Privileged Probe
}

// Decision is the path taken and why.
type Decision struct {
	Path    Mode // ModeOffline or ModeOnline
	Reasons []string
}

// decide returns the path for in. An explicit mode wins; auto takes the online
// path only when both probes are OK, because the online path cannot work
// without the registry (or the image) and without privileged containers.
func decide(in Inputs) (Decision, error) {
	var causes []string
	if in.Registry.Outcome != OK {
		causes = append(causes, "the node image cannot be had from a registry: "+probeText(in.Registry))
	}
	switch {
	case in.Privileged.Outcome == Failed:
		causes = append(causes, "the container engine cannot run privileged containers with its default runtime: "+probeText(in.Privileged))
	case in.Privileged.Outcome == NotRun && in.Registry.Outcome == OK:
		// Not knowing is not good enough for the online path.
		causes = append(causes, "it is not known whether the container engine runs privileged containers: "+probeText(in.Privileged))
	}
	detected := ModeOnline
	if len(causes) > 0 {
		detected = ModeOffline
	}
	probed := in.Registry.Outcome != NotRun || in.Privileged.Outcome != NotRun

	switch in.Mode {
	case ModeOffline, ModeOnline:
		d := Decision{Path: in.Mode, Reasons: []string{fmt.Sprintf("KIND_MODE=%s was set explicitly (detection is not used)", in.Mode)}}
		if probed && detected != in.Mode {
			d.Reasons = append(d.Reasons, fmt.Sprintf("note: detection alone would have chosen the %s path", detected))
			if detected == ModeOffline {
				d.Reasons = append(d.Reasons, causes...)
			}
		}
		return d, nil
	case ModeAuto, "":
		if detected == ModeOffline {
			return Decision{Path: ModeOffline, Reasons: causes}, nil
		}
		return Decision{Path: ModeOnline, Reasons: []string{
			"the node image can be had: " + in.Registry.Detail,
			"privileged containers run with the default runtime: " + in.Privileged.Detail,
		}}, nil
	}
	return Decision{}, errors.New("unknown mode " + string(in.Mode))
}

func probeText(p Probe) string {
	switch {
	case p.Outcome == NotRun && p.Detail != "":
		return "not probed (" + p.Detail + ")"
	case p.Outcome == NotRun:
		return "not probed"
	case p.Detail != "":
		return p.Detail
	}
	return p.Outcome.String()
}

// upstreamNodeImage is the node image of the online path: override when set,
// else kind's default (sigs.k8s.io/kind/pkg/apis/config/defaults.Image) when it
// is for the pinned Kubernetes minor version, else kindest/node:<pin>. note
// says when the image's Kubernetes version is not the pinned one.
func upstreamNodeImage(override, kindDefault, k8sVersion string) (image, note string) {
	if override != "" {
		return override, ""
	}
	v := imageVersion(kindDefault)
	switch {
	case k8sVersion == "" || v == k8sVersion:
		return kindDefault, ""
	case minor(v) == minor(k8sVersion):
		return kindDefault, fmt.Sprintf("kind's node image for Kubernetes %s is %s (hack/versions.env pins %s for the offline build); set KIND_NODE_IMAGE to use another", minor(v), v, k8sVersion)
	}
	return "kindest/node:" + k8sVersion, fmt.Sprintf("kind's default node image is %s (Kubernetes %s, not the pinned %s): using kindest/node:%s, not digest-pinned", kindDefault, v, k8sVersion, k8sVersion)
}

// imageVersion: "kindest/node:v1.37.0@sha256:..." -> "v1.37.0".
func imageVersion(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(ref, ":"); i >= 0 && !strings.Contains(ref[i:], "/") {
		return ref[i+1:]
	}
	return ""
}

// minor: "v1.37.2" -> "v1.37".
func minor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// Facts are what the offline path would find on the machine; they turn into
// the list of changes it announces.
type Facts struct {
	// MissingPackages are the Debian packages engine.sh would apt-get install;
	// CheckedPackages all it checks.
	MissingPackages, CheckedPackages []string
	WrapperPath                      string
	WrapperInstalled                 bool
	DaemonJSON                       string
	RuntimeName                      string
	RuntimeRegistered                bool
	// EngineRunning: a docker engine answers (else dockerd is started).
	EngineRunning bool
	// NodeImage is KIND_NODE_IMAGE: when set, no image is built.
	NodeImage string
	// Images the offline build creates under its own names and under the
	// upstream names kubeadm and kind ask for (stand-ins).
	Images []Image
	// Cache is $KIND_CACHE; CacheExists when it is already there.
	Cache       string
	CacheExists bool
}

// Image is one image the offline build creates or tags.
type Image struct {
	Ref      string
	Upstream bool // a stand-in tagged with an upstream name (registry.k8s.io/..., docker.io/kindest/...)
	Present  bool
}

// Change is one change a path makes; Done ones are already in place.
type Change struct {
	What string
	Done bool
}

func offlinePlan(f Facts) []Change {
	var cs []Change
	if len(f.MissingPackages) > 0 {
		cs = append(cs, Change{What: "apt-get update && apt-get install " + strings.Join(f.MissingPackages, " ")})
	} else {
		cs = append(cs, Change{What: "apt packages " + strings.Join(f.CheckedPackages, " ") + ": all installed", Done: true})
	}
	cs = append(cs,
		Change{What: "runtime wrapper installed at " + f.WrapperPath + " (built from hack/kind/runtime-wrapper; replaced when its source changes)", Done: f.WrapperInstalled},
		Change{What: fmt.Sprintf(`%s: add "runtimes": {%q: {"path": %q}} (other keys kept; the old file saved once as %s.llmgw-backup), then kill -HUP dockerd`, f.DaemonJSON, f.RuntimeName, f.WrapperPath, f.DaemonJSON), Done: f.RuntimeRegistered},
		Change{What: "dockerd started in the background (log /var/log/llmgw-dockerd.log)", Done: f.EngineRunning},
	)
	forced := Change{What: fmt.Sprintf("runtime %s forced on kind's node containers (hack/kind/shim/docker, first on PATH for kind only, adds --runtime=%s to docker run/create)", f.RuntimeName, f.RuntimeName)}
	if f.NodeImage != "" {
		return append(cs, Change{What: "node image: KIND_NODE_IMAGE=" + f.NodeImage + " (nothing built, no images tagged)", Done: true}, forced)
	}
	var own, up, ownNew, upNew []string
	for _, im := range f.Images {
		name := im.Ref
		if !im.Present {
			name += " (new)"
		}
		if im.Upstream {
			up = append(up, name)
			if !im.Present {
				upNew = append(upNew, im.Ref)
			}
		} else {
			own = append(own, name)
			if !im.Present {
				ownNew = append(ownNew, im.Ref)
			}
		}
	}
	if len(own) > 0 {
		cs = append(cs, Change{What: "images built under llmgw-kind/ (cached, superseded builds removed): " + strings.Join(own, ", "), Done: len(ownNew) == 0})
	}
	if len(up) > 0 {
		cs = append(cs, Change{What: "stand-in images built from source and tagged with upstream names (they stay on the host): " + strings.Join(up, ", "), Done: len(upNew) == 0})
	}
	if f.Cache != "" {
		cs = append(cs, Change{What: "build cache (Go binaries, Kubernetes server tarball) in " + f.Cache, Done: f.CacheExists})
	}
	return append(cs, forced)
}

// onlinePlan: kubectl is where hack/kind builds it (empty: not said).
func onlinePlan(image string, present bool, kubectl string, kubectlPresent bool) []Change {
	pull := "docker pulls " + image + " when kind creates the cluster"
	if present {
		pull = image + " is already present: nothing to pull"
	}
	cs := []Change{
		{What: "nothing system-wide: /etc/docker/daemon.json, apt packages and the engine's runtimes are left alone; kind runs the real docker (no shim, no --runtime); no stand-in images are built or tagged", Done: true},
		{What: pull, Done: present},
	}
	if kubectl != "" {
		cs = append(cs, Change{What: "kubectl built from source as " + kubectl + " (once)", Done: kubectlPresent})
	}
	return cs
}

// report is the text printed before the path is taken.
func report(in Inputs, d Decision, note string, plan []Change) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, "[kind] "+format+"\n", a...) }
	p("KIND_MODE=%s -> the %s path (probes: registry %s, privileged container %s)", in.Mode, d.Path, in.Registry.Outcome, in.Privileged.Outcome)
	for _, r := range d.Reasons {
		p("  because %s", r)
	}
	for _, pr := range []struct {
		name string
		p    Probe
	}{{"registry", in.Registry}, {"privileged container", in.Privileged}} {
		if pr.p.Outcome == NotRun && !mentions(d.Reasons, probeText(pr.p)) {
			p("  %s probe: %s", pr.name, probeText(pr.p))
		}
	}
	if note != "" {
		p("  note: %s", note)
	}
	if d.Path == ModeOffline {
		p("the offline path changes this machine as follows (in this order, before it creates the cluster):")
	} else {
		p("the online path changes:")
	}
	for _, c := range plan {
		mark := "will do"
		if c.Done {
			mark = "in place"
		}
		p("  - [%s] %s", mark, c.What)
	}
	if d.Path == ModeOffline {
		p("for the online path instead (registry access and a normal Docker or podman): KIND_MODE=online; to undo the offline path's changes: hack/kind/README.md")
	}
	return b.String()
}

func mentions(rs []string, s string) bool {
	for _, r := range rs {
		if strings.Contains(r, s) {
			return true
		}
	}
	return false
}
