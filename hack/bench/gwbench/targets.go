package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
)

// kind is how a target is built.
type kind string

const (
	kindDirect   kind = "direct"   // the client calls the mock itself
	kindRevproxy kind = "revproxy" // hack/bench/revproxy in front of the mocks
	kindGateway  kind = "gateway"  // `llmgw gateway --snapshot` with a real SQLite ledger
)

// targetSpec is one row of the comparison. A gateway variant is a row with
// extra flags and, when it needs another process (a quota store, say),
// a Setup that starts it.
type targetSpec struct {
	Name string
	Kind kind
	// Flags are added to `llmgw gateway`; {dir} is this target's temp dir.
	Flags []string
	// Setup starts the processes the target needs besides itself and
	// returns flags for it. Their CPU is reported as the target's sidecar
	// CPU; the round stops them after the target.
	Setup func(ctx context.Context, s *sidecarEnv) (flags []string, err error)
}

// sidecarEnv is what a Setup gets: where to put files and how to start and
// register a process.
type sidecarEnv struct {
	Dir   string
	procs []*proc
}

// Start starts a sidecar process (logged in Dir) and keeps it for the round.
func (s *sidecarEnv) Start(name, bin string, args ...string) (*proc, error) {
	p, err := startProc(s.Dir, name, bin, args...)
	if err != nil {
		return nil, err
	}
	s.procs = append(s.procs, p)
	return p, nil
}

// builtinTargets are the targets -targets chooses from. Another gateway
// configuration is one more row here, e.g.
//
//	{Name: "llmgw-redis", Kind: kindGateway, Setup: startRedis}
//
// where startRedis starts redis-server on freePort() through s.Start and
// returns []string{"--quota-store", "redis://127.0.0.1:PORT"}; or, with no
// sidecar, at run time: -variant 'llmgw-nolog=--log-level error'.
var builtinTargets = []targetSpec{
	{Name: "direct", Kind: kindDirect},
	{Name: "revproxy", Kind: kindRevproxy},
	{Name: "llmgw", Kind: kindGateway},
}

// variantFlag collects -variant NAME=FLAGS: a gateway target with extra
// space-separated flags.
type variantFlag []targetSpec

func (v *variantFlag) String() string { return "" }

func (v *variantFlag) Set(s string) error {
	name, flags, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.ContainsAny(name, " ,/") {
		return fmt.Errorf("want NAME=FLAGS, e.g. 'llmgw-nolog=--log-level error'")
	}
	*v = append(*v, targetSpec{Name: name, Kind: kindGateway, Flags: strings.Fields(flags)})
	return nil
}

// selectTargets resolves -targets against the built-in rows and the
// variants. revproxy and direct are needed by every comparison.
func selectTargets(names string, variants []targetSpec) ([]targetSpec, error) {
	all := append(slices.Clone(builtinTargets), variants...)
	var out []targetSpec
	for _, n := range strings.Split(names, ",") {
		n = strings.TrimSpace(n)
		i := slices.IndexFunc(all, func(t targetSpec) bool { return t.Name == n })
		if i < 0 {
			return nil, fmt.Errorf("unknown target %q", n)
		}
		if slices.ContainsFunc(out, func(t targetSpec) bool { return t.Name == n }) {
			return nil, fmt.Errorf("target %q twice", n)
		}
		out = append(out, all[i])
	}
	for _, need := range []string{"direct", "revproxy"} {
		if !slices.ContainsFunc(out, func(t targetSpec) bool { return t.Name == need }) {
			return nil, fmt.Errorf("-targets must include %s: every result is compared against it", need)
		}
	}
	for _, v := range variants {
		if !slices.ContainsFunc(out, func(t targetSpec) bool { return t.Name == v.Name }) {
			out = append(out, v)
		}
	}
	return out, nil
}

// target is a target running in one round.
type target struct {
	spec     targetSpec
	base     string // data-plane base URL ("" for direct: the mocks')
	mgmt     string // management base URL with /metrics ("" for direct)
	ready    string // the URL that answers 200 once it serves
	proc     *proc  // nil for direct
	sidecars []*proc
	dbPath   string
	command  string
	client   *http.Client
	eps      map[Workload]*endpoint
	sent     atomic.Int64 // requests sent to it this round, for the ledger check
	// What a gateway's /metrics counted before restart: added to the
	// round's end scrape.
	earlierLag    *LagHistogram
	earlierWriter map[string]float64
}

// own is the process whose cost a workload's request through this target
// is: the target's own, or for direct the mock that answers it.
func (t *target) own(env *roundEnv, w Workload) *proc {
	if t.proc != nil {
		return t.proc
	}
	return env.mock(w.Proto)
}

// ownForStreams is the process the streams phase samples.
func (t *target) ownForStreams(env *roundEnv) *proc {
	return t.own(env, Workload{Proto: env.cfg.streamProto})
}
