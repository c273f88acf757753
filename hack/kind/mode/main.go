package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	kinddefaults "sigs.k8s.io/kind/pkg/apis/config/defaults"
)

// Probes are the functions that look at the machine; tests replace them.
type Probes struct {
	// Registry: is image present locally, or does the registry answer for it?
	Registry func(ctx context.Context, image string) Probe
	// Privileged: does a privileged container run with the default runtime?
	Privileged func(ctx context.Context) Probe
	// Facts: what the offline path would find (and so change) on the machine.
	Facts func(ctx context.Context) Facts
	// ImagePresent: is image present locally (for the online path's plan)?
	ImagePresent func(ctx context.Context, image string) bool
}

// Config is what the command line asks for.
type Config struct {
	Mode Mode
	// Image is the online path's node image, the one the registry probe asks for.
	Image string
	// Registry and Privileged, when not NotRun, are results the caller
	// gathered itself: that probe is not run.
	Registry, Privileged Probe
	// ProbeAll runs both probes even when the result does not need them (an
	// explicit mode, or the registry probe already failed).
	ProbeAll bool
	// Timeout bounds each probe.
	Timeout time.Duration
	// Cache ($KIND_CACHE) and K8sVersion say where kubectl is built.
	Cache, K8sVersion string
}

// Result is everything run found out.
type Result struct {
	Inputs   Inputs
	Decision Decision
	Plan     []Change
}

// run gathers the probe results cfg does not already have, decides, and lists
// the changes of the chosen path. Probes are skipped when they cannot change
// the outcome: both for an explicit mode, the privileged one when the
// registry probe failed (unless cfg.ProbeAll).
func run(ctx context.Context, cfg Config, p Probes) (Result, error) {
	in := Inputs{Mode: cfg.Mode, Registry: cfg.Registry, Privileged: cfg.Privileged}
	timed := func(f func(context.Context) Probe) Probe {
		c, cancel := context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
		return f(c)
	}
	explicit := cfg.Mode == ModeOffline || cfg.Mode == ModeOnline
	if in.Registry.Outcome == NotRun {
		if explicit && !cfg.ProbeAll {
			in.Registry.Detail = "KIND_MODE=" + string(cfg.Mode)
		} else {
			in.Registry = timed(func(c context.Context) Probe { return p.Registry(c, cfg.Image) })
		}
	}
	if in.Privileged.Outcome == NotRun {
		switch {
		case explicit && !cfg.ProbeAll:
			in.Privileged.Detail = "KIND_MODE=" + string(cfg.Mode)
		case in.Registry.Outcome != OK && !cfg.ProbeAll:
			in.Privileged.Detail = "the registry probe failed, so the path is offline either way"
		default:
			in.Privileged = timed(p.Privileged)
		}
	}
	d, err := decide(in)
	if err != nil {
		return Result{}, err
	}
	r := Result{Inputs: in, Decision: d}
	if d.Path == ModeOffline {
		r.Plan = offlinePlan(p.Facts(ctx))
	} else {
		kubectl, present := "", false
		if cfg.Cache != "" && cfg.K8sVersion != "" {
			kubectl = filepath.Join(cfg.Cache, "k8s", cfg.K8sVersion, "kubectl")
			_, err := os.Stat(kubectl)
			present = err == nil
		}
		r.Plan = onlinePlan(cfg.Image, p.ImagePresent(ctx, cfg.Image), kubectl, present)
	}
	return r, nil
}

func parseGiven(name, v string) (Probe, error) {
	switch strings.ToLower(v) {
	case "":
		return Probe{}, nil
	case "ok", "yes", "true":
		return Probe{Outcome: OK, Detail: fmt.Sprintf("given by the caller (-%s=%s)", name, v)}, nil
	case "fail", "failed", "no", "false":
		return Probe{Outcome: Failed, Detail: fmt.Sprintf("given by the caller (-%s=%s)", name, v)}, nil
	}
	return Probe{}, fmt.Errorf("-%s=%q: want ok or fail", name, v)
}

// readEnvFile reads KEY=VALUE lines (hack/versions.env).
func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			m[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return m, s.Err()
}

func kindVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "sigs.k8s.io/kind" {
				return d.Version
			}
		}
	}
	return ""
}

func main() {
	// The privileged probe runs this very binary as a container's entrypoint.
	if len(os.Args) == 2 && os.Args[1] == probeArg {
		os.Exit(0)
	}
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mode", flag.ContinueOnError)
	fs.SetOutput(stderr)
	modeFlag := fs.String("mode", os.Getenv("KIND_MODE"), "auto, offline or online (default $KIND_MODE, else auto)")
	image := fs.String("node-image", os.Getenv("KIND_NODE_IMAGE"), "node image to use instead of kind's default (default $KIND_NODE_IMAGE)")
	versions := fs.String("versions", "hack/versions.env", "the pinned versions")
	registry := fs.String("registry", "", "registry probe result gathered by the caller (ok|fail); the probe is not run")
	privileged := fs.String("privileged", "", "privileged probe result gathered by the caller (ok|fail); the probe is not run")
	probeAll := fs.Bool("probe-all", false, "run both probes even when the outcome does not need them")
	timeout := fs.Duration("timeout", 20*time.Second, "time limit of each probe")
	daemonJSON := fs.String("daemon-json", envOr("DAEMON_JSON", "/etc/docker/daemon.json"), "docker's daemon.json")
	cache := fs.String("cache", os.Getenv("KIND_CACHE"), "hack/kind's build cache ($KIND_CACHE)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(err error) int { fmt.Fprintln(stderr, "[kind] mode:", err); return 2 }
	m, err := parseMode(*modeFlag)
	if err != nil {
		return fail(err)
	}
	cfg := Config{Mode: m, ProbeAll: *probeAll, Timeout: *timeout, Cache: *cache}
	if cfg.Registry, err = parseGiven("registry", *registry); err != nil {
		return fail(err)
	}
	if cfg.Privileged, err = parseGiven("privileged", *privileged); err != nil {
		return fail(err)
	}
	vers, err := readEnvFile(*versions)
	if err != nil {
		return fail(err)
	}
	cfg.K8sVersion = vers["K8S_VERSION"]
	var note string
	cfg.Image, note = upstreamNodeImage(*image, kinddefaults.Image, vers["K8S_VERSION"])
	if kv, want := kindVersion(), vers["KIND_VERSION"]; kv != "" && want != "" && kv != want {
		note = strings.TrimPrefix(note+"; ", "; ") + fmt.Sprintf("this tool was built with kind %s, hack/versions.env pins %s", kv, want)
	}
	d := &docker{run: execRun}
	probes := Probes{
		Registry:   d.registry,
		Privileged: d.privileged,
		Facts: func(ctx context.Context) Facts {
			return d.facts(ctx, factsConfig{versions: vers, daemonJSON: *daemonJSON, nodeImage: *image, cache: *cache})
		},
		ImagePresent: d.imagePresent,
	}
	res, err := run(context.Background(), cfg, probes)
	if err != nil {
		return fail(err)
	}
	fmt.Fprint(stderr, report(res.Inputs, res.Decision, note, res.Plan))
	out := string(res.Decision.Path)
	if res.Decision.Path == ModeOnline {
		out += " " + cfg.Image
	} else if *image != "" {
		out += " " + *image
	}
	fmt.Fprintln(stdout, out)
	return 0
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
