//go:build agents

package agents

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/llmgw/llmgw/mockproviders"
)

// TargetEnv chooses what the agents talk to: TargetMock (default) or
// TargetGateway.
const (
	TargetEnv     = "LLMGW_AGENTS_TARGET"
	TargetMock    = "mock"
	TargetGateway = "gateway"
)

// fakeKey is what both mocks require in mock mode: the agents must send
// their configured key, and no real credential is ever involved.
const fakeKey = "llmgw-agents-fake-key-not-a-credential"

// agentTimeout bounds one agent run; a working loop takes seconds.
const agentTimeout = 3 * time.Minute

// marker is what the scripted shell command writes and prints.
const marker = "llmgw-ok"

// verbose reports whether LLMGW_AGENTS_VERBOSE asks for what a failing
// test shows (the requests the mocks received...) on success too.
func verbose() bool { return os.Getenv("LLMGW_AGENTS_VERBOSE") != "" }

// target is where the agents are pointed, whichever system serves it.
type target struct {
	name string
	// Anthropic Messages ingress (Claude Code's ANTHROPIC_BASE_URL) and
	// OpenAI Responses ingress (Codex's provider base_url, ending in /v1),
	// with their keys.
	anthropicURL, anthropicKey string
	openaiURL, openaiKey       string
	// The routes each agent is run through, one run each.
	claude, codex []route
	// The mocks' base URLs, for /mock/calls and /mock/reset.
	mockAlpha, mockBeta string
	// gatewayURL is the gateway's base URL in gateway mode ("" otherwise):
	// its /v1/usage holds a record of every model call.
	gatewayURL string
	// describe tells what a failing test should look at: the requests the
	// mocks received (mock mode) or the gateway's log (gateway mode).
	describe func(t *testing.T)
}

// route is one way an agent reaches a model: the model name it asks for,
// the mock that answers (its base URL), the mock endpoints the loop
// reaches there, and the prefix of the mock's tool call ids.
type route struct {
	model, mock string
	paths       []string
	callPrefix  string
}

// startTarget starts what LLMGW_AGENTS_TARGET names.
func startTarget(t *testing.T) *target {
	t.Helper()
	switch v := os.Getenv(TargetEnv); v {
	case "", TargetMock:
		return startMocks(t)
	case TargetGateway:
		return startGateway(t)
	default:
		t.Fatalf("%s=%q: want %s or %s", TargetEnv, v, TargetMock, TargetGateway)
		return nil
	}
}

// startMocks serves both mocks in this process on loopback, each requiring
// fakeKey, with a recorder in front that keeps what the agents sent.
func startMocks(t *testing.T) *target {
	t.Helper()
	rec := &recorder{}
	serve := func(fl mockproviders.Flavor) string {
		h, err := mockproviders.NewHandler(mockproviders.Options{Flavor: fl, RequireKey: fakeKey})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(rec.wrap(string(fl), h))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	alpha, beta := serve(mockproviders.Alpha), serve(mockproviders.Beta)
	return &target{name: TargetMock,
		anthropicURL: beta, anthropicKey: fakeKey, openaiURL: alpha + "/v1", openaiKey: fakeKey,
		claude:    []route{{model: "beta-large", mock: beta, paths: []string{"/v1/messages"}, callPrefix: "toolu_"}},
		codex:     []route{{model: "alpha-large", mock: alpha, paths: []string{"/v1/responses"}, callPrefix: "call_"}},
		mockAlpha: alpha, mockBeta: beta, describe: rec.dump}
}

// startGateway runs `llmgw up` on free loopback ports in a temporary state
// directory and points the agents at its gateway with key A, each through
// both demo aliases: the one whose provider speaks the agent's protocol
// (passed through: Claude Code on chat-beta, Codex on chat-alpha, whose
// alpha serves the Responses API) and the one whose provider speaks the
// other (translated both ways).
func startGateway(t *testing.T) *target {
	t.Helper()
	bin := os.Getenv("LLMGW_BIN")
	if bin == "" {
		bin = filepath.Join(repoRoot(t), "bin", "llmgw")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v: build it first (make build) or set LLMGW_BIN", err)
	}
	dir := t.TempDir()
	var out lockedBuffer
	cmd := exec.Command(bin, "up", "--state-dir", dir, "--addr", "127.0.0.1:0",
		"--alpha-addr", "127.0.0.1:0", "--beta-addr", "127.0.0.1:0", "--log-level", "info")
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	envPath := filepath.Join(dir, "env")
	deadline := time.Now().Add(60 * time.Second)
	var env map[string]string
	for {
		if b, err := os.ReadFile(envPath); err == nil {
			env = parseEnv(string(b))
			break
		}
		select {
		case <-exited:
			t.Fatalf("llmgw up exited before it was ready:\n%s", out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("llmgw up not ready after 60s:\n%s", out.String())
		}
	}
	for _, k := range []string{"LLMGW_URL", "LLMGW_KEY_A", "LLMGW_MOCK_ALPHA_URL", "LLMGW_MOCK_BETA_URL"} {
		if env[k] == "" {
			t.Fatalf("%s has no %s", envPath, k)
		}
	}
	alpha, beta := env["LLMGW_MOCK_ALPHA_URL"], env["LLMGW_MOCK_BETA_URL"]
	viaBeta := route{model: "chat-beta", mock: beta, paths: []string{"/v1/messages"}, callPrefix: "toolu_"}
	return &target{name: TargetGateway,
		anthropicURL: env["LLMGW_URL"], anthropicKey: env["LLMGW_KEY_A"],
		openaiURL: env["LLMGW_URL"] + "/v1", openaiKey: env["LLMGW_KEY_A"],
		claude:    []route{viaBeta, {model: "chat-alpha", mock: alpha, paths: []string{"/v1/chat/completions"}, callPrefix: "call_"}},
		codex:     []route{{model: "chat-alpha", mock: alpha, paths: []string{"/v1/responses"}, callPrefix: "call_"}, viaBeta},
		mockAlpha: alpha, mockBeta: beta, gatewayURL: env["LLMGW_URL"],
		describe: func(t *testing.T) { t.Logf("llmgw up output:\n%s", out.String()) }}
}

func parseEnv(s string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok {
			out[k] = v
		}
	}
	return out
}

// repoRoot is the directory of the module's go.mod, above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// pinned reads a version from hack/agents/versions.env.
func pinned(t *testing.T, key string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "hack", "agents", "versions.env"))
	if err != nil {
		t.Fatal(err)
	}
	v := parseEnv(string(b))[key]
	if v == "" {
		t.Fatalf("hack/agents/versions.env has no %s", key)
	}
	return v
}

// agentBin is bin/agents/<name> (or $LLMGW_AGENTS_BIN/<name>), checked to
// be the pinned version: versionOut must hold it.
func agentBin(t *testing.T, name, versionKey string) string {
	t.Helper()
	dir := os.Getenv("LLMGW_AGENTS_BIN")
	if dir == "" {
		dir = filepath.Join(repoRoot(t), "bin", "agents")
	}
	bin := filepath.Join(dir, name)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v: run hack/agents/install.sh first", err)
	}
	want := pinned(t, versionKey)
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), want) {
		t.Fatalf("%s --version: %q, %v; want version %s (run hack/agents/install.sh)", bin, out, err, want)
	}
	t.Logf("%s: %s", name, strings.TrimSpace(string(out)))
	return bin
}

// sandbox is one agent run's directories: home (HOME, the agent's config
// and state) and work (its working directory, where the marker goes).
type sandbox struct{ home, work string }

func newSandbox(t *testing.T) sandbox {
	t.Helper()
	root := t.TempDir()
	s := sandbox{home: filepath.Join(root, "home"), work: filepath.Join(root, "work")}
	for _, d := range []string{s.home, s.work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// env is the agent's whole environment: nothing of the caller's but PATH
// and the user name, so no credential, proxy or agent setting leaks in;
// loopback bypasses any proxy. extra adds the agent's own variables.
func (s sandbox) env(extra ...string) []string {
	env := []string{"HOME=" + s.home, "PATH=" + os.Getenv("PATH"), "TERM=dumb", "LANG=C.UTF-8",
		"TMPDIR=" + os.TempDir(), "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost"}
	for _, k := range []string{"USER", "LOGNAME"} {
		if v := os.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return append(env, extra...)
}

// runResult is how an agent run ended.
type runResult struct {
	exit           int
	stdout, stderr string
}

// runAgent runs bin with args in the sandbox, stdin empty, for at most
// agentTimeout; under strace when it is installed, to check that the agent
// connected to loopback only (checkLoopbackOnly).
func runAgent(t *testing.T, s sandbox, env []string, bin string, args ...string) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), agentTimeout)
	defer cancel()
	name := bin
	trace := ""
	if st, err := exec.LookPath("strace"); err == nil && os.Getenv("LLMGW_AGENTS_STRACE") != "0" {
		trace = filepath.Join(s.home, "connect.trace")
		name, args = st, append([]string{"-f", "-qq", "-e", "trace=connect", "-o", trace, bin}, args...)
	} else {
		t.Logf("strace not found (or LLMGW_AGENTS_STRACE=0): the agent's connections are not checked")
	}
	defer func() {
		if trace != "" {
			checkLoopbackOnly(t, filepath.Base(bin), trace)
		}
	}()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = s.work, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	res := runResult{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		res.exit = exitErr.ExitCode()
	default:
		t.Fatalf("running %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), err, res.stdout, res.stderr)
	}
	if ctx.Err() != nil {
		t.Errorf("%s did not finish within %s", filepath.Base(bin), agentTimeout)
	}
	return res
}

// connectAddr finds the address of a connect(2) call in strace's output:
// inet_addr("1.2.3.4") for IPv4, inet_pton(AF_INET6, "::1", ...) for IPv6.
var connectAddr = regexp.MustCompile(`inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)"`)

// checkLoopbackOnly fails the test for every connection the agent (or a
// process it started) opened to an address other than loopback — a DNS
// lookup shows as one to the resolver, so a call home shows even when it
// cannot get through.
func checkLoopbackOnly(t *testing.T, agent, trace string) {
	t.Helper()
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Errorf("reading the connect trace: %v", err)
		return
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		m := connectAddr.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		addr := m[1] + m[2]
		ip, err := netip.ParseAddr(addr)
		if err == nil && ip.Unmap().IsLoopback() {
			continue
		}
		if !seen[addr] {
			seen[addr] = true
			t.Errorf("%s connected to %s, not loopback: %s", agent, addr, strings.TrimSpace(line))
		}
	}
}

// checkMarker checks the file the scripted command wrote.
func checkMarker(t *testing.T, s sandbox) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.work, "marker.txt"))
	if err != nil {
		t.Errorf("the agent did not run the command: %v", err)
		return
	}
	if string(b) != marker+"\n" {
		t.Errorf("marker.txt holds %q, want %q", b, marker+"\n")
	}
}

// resetMocks zeroes both mocks' counters before a run.
func (tg *target) resetMocks(t *testing.T) {
	t.Helper()
	for _, base := range []string{tg.mockAlpha, tg.mockBeta} {
		resp, err := http.Post(base+"/mock/reset", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("POST %s/mock/reset: %s", base, resp.Status)
		}
	}
}

// usageRecord is what the test reads of a gateway usage record.
type usageRecord struct {
	RequestID string `json:"request_id"`
	Model     string `json:"model"`
	Provider  string `json:"provider"`
	Status    string `json:"status"`
	Endpoint  string `json:"endpoint"`
	Session   string `json:"session"`
	Cost      string `json:"cost"`
}

// usage lists the gateway's records of key matching query (a /v1/usage
// query string), newest first.
func (tg *target) usage(t *testing.T, key, query string) []usageRecord {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, tg.gatewayURL+"/v1/usage?limit=500&"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []usageRecord `json:"data"`
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /v1/usage?%s: %s %s", query, resp.Status, b)
	}
	if err := jsonv2.UnmarshalRead(resp.Body, &list); err != nil {
		t.Fatal(err)
	}
	return list.Data
}

// checkRecords checks, in gateway mode, that the agent's session left
// exactly one successful, priced record on endpoint for each model call
// the mock answered (calls), all for rt's alias.
func (tg *target) checkRecords(t *testing.T, key, endpoint, session string, rt route, calls int64) {
	t.Helper()
	if tg.gatewayURL == "" {
		return
	}
	recs := tg.usage(t, key, "session="+session)
	if int64(len(recs)) != calls {
		t.Errorf("session %s has %d records, the mock answered %d model calls: %+v", session, len(recs), calls, recs)
	}
	for _, r := range recs {
		if r.Status != "success" || r.Endpoint != endpoint || r.Model != rt.model || r.Cost == "" || r.Cost == "0" {
			t.Errorf("record %+v: want a priced success on %s for %s", r, endpoint, rt.model)
		}
	}
}

// mockCalls reads GET /mock/calls of a mock.
func mockCalls(t *testing.T, base string) mockproviders.Calls {
	t.Helper()
	resp, err := http.Get(base + "/mock/calls")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c mockproviders.Calls
	if err := jsonv2.UnmarshalRead(resp.Body, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// checkToolLoop checks what a mock saw of the loop: at least two calls of
// paths (the endpoints the loop may reach: a gateway may translate to the
// provider's other protocol), all answered 200, the scripted tool asked
// for, and the command's output sent back as the result of a call the mock
// made (its id has the protocol's prefix). It returns the number of calls
// of paths.
func checkToolLoop(t *testing.T, c mockproviders.Calls, paths []string, tool, callPrefix string) (calls int64) {
	t.Helper()
	n := int64(0)
	for _, p := range paths {
		n += c.ByPath[p]
	}
	if n < 2 {
		t.Errorf("%d calls of %s, want at least 2 (the tool call and the answer): %+v", n, paths, c.ByPath)
	}
	for status, n := range c.ByStatus {
		if status != "200" {
			t.Errorf("%d calls answered %s: %+v", n, status, c.ByStatus)
		}
	}
	if c.ByFault["tool="+tool] < 1 {
		t.Errorf("no call carried the directive tool=%s: by_fault %+v", tool, c.ByFault)
	}
	found := slices.ContainsFunc(c.ToolResults, func(r mockproviders.ToolResult) bool {
		return slices.Contains(paths, r.Path) && strings.HasPrefix(r.CallID, callPrefix) && strings.Contains(r.Content, marker) && !r.IsError
	})
	if !found {
		t.Errorf("no tool result of %s answering a %s... call holds %q: %+v", paths, callPrefix, marker, c.ToolResults)
	}
	return n
}

// recorder keeps every request the mocks received, for a failing test's
// log only: the mocks themselves never log bodies.
type recorder struct {
	mu    sync.Mutex
	calls []recorded
}

type recorded struct {
	mock, method, url string
	status            int
	header            http.Header
	body              []byte
}

// secretHeaders are left out of the record.
var secretHeaders = []string{"Authorization", "X-Api-Key", "Cookie"}

func (rec *recorder) wrap(name string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/mock/") {
			h.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		hdr := r.Header.Clone()
		for _, k := range secretHeaders {
			if hdr.Get(k) != "" {
				hdr.Set(k, "(set)")
			}
		}
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.calls = append(rec.calls, recorded{mock: name, method: r.Method, url: r.URL.String(), status: sw.status, header: hdr, body: body})
	})
}

// dump writes every recorded request to a directory that outlives the test
// and logs one line per request.
func (rec *recorder) dump(t *testing.T) {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	dir, err := os.MkdirTemp("", "llmgw-agents-requests-")
	if err != nil {
		t.Logf("keeping the requests: %v", err)
		return
	}
	for i, c := range rec.calls {
		var b bytes.Buffer
		fmt.Fprintf(&b, "%s %s\n", c.method, c.url)
		_ = c.header.Write(&b)
		b.WriteString("\n")
		b.Write(c.body)
		name := filepath.Join(dir, fmt.Sprintf("%02d-%s.txt", i, c.mock))
		if err := os.WriteFile(name, b.Bytes(), 0o600); err != nil {
			t.Logf("keeping request %d: %v", i, err)
		}
		t.Logf("request %d: mock %s %s %s -> %d (%d bytes) in %s", i, c.mock, c.method, c.url, c.status, len(c.body), name)
	}
}

// statusWriter remembers the status; Unwrap keeps flushing working.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// lockedBuffer collects a process's output written from two pipes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
