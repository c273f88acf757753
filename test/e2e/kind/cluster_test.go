package kind_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const ns = "llmgw-system"

// repoRoot is the repository root (the directory of go.mod above the suite).
func repoRoot() string {
	GinkgoHelper()
	dir, err := os.Getwd()
	Expect(err).NotTo(HaveOccurred())
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		Expect(parent).NotTo(Equal(dir), "no go.mod above the suite")
		dir = parent
	}
}

// kube runs hack/kind/kubectl.sh (kubectl built from source, the kind
// cluster's kubeconfig) from the repository root.
type kube struct{ root string }

func (k kube) cmd(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, filepath.Join(k.root, "hack", "kind", "kubectl.sh"), args...)
	c.Dir = k.root
	c.WaitDelay = 5 * time.Second
	return c
}

// run runs kubectl with stdin (may be nil) and returns stdout; an error
// carries stderr.
func (k kube) run(ctx context.Context, stdin []byte, args ...string) (string, error) {
	c := k.cmd(ctx, args...)
	if stdin != nil {
		c.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// must runs kubectl in namespace ns and fails the spec on an error.
func (k kube) must(ctx context.Context, args ...string) string {
	GinkgoHelper()
	out, err := k.run(ctx, nil, append([]string{"-n", ns}, args...)...)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// apply pipes YAML into kubectl apply -f -.
func (k kube) apply(ctx context.Context, yaml string) error {
	_, err := k.run(ctx, []byte(yaml), "apply", "-f", "-")
	return err
}

// getJSON is kubectl get -o json into v.
func (k kube) getJSON(ctx context.Context, v any, args ...string) error {
	out, err := k.run(ctx, nil, append(append([]string{"-n", ns, "get"}, args...), "-o", "json")...)
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(out), v)
}

// make runs a make target from the repository root, streaming its output to
// the GinkgoWriter (progress with -ginkgo.v).
func runMake(ctx context.Context, root string, target string) error {
	By("make " + target)
	c := exec.CommandContext(ctx, "make", "--no-print-directory", target)
	c.Dir = root
	c.Stdout, c.Stderr = GinkgoWriter, GinkgoWriter
	c.WaitDelay = 10 * time.Second
	start := time.Now()
	err := c.Run()
	GinkgoWriter.Printf("make %s: %v after %v\n", target, errOrOK(err), time.Since(start).Round(time.Second))
	return err
}

func errOrOK(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// buildLLMGW builds the llmgw binary of the checkout at root into dir (for
// llmgw keys create and rotate, as a user runs them) and returns its path.
func buildLLMGW(ctx context.Context, root, dir string) string {
	GinkgoHelper()
	llmgw := filepath.Join(dir, "llmgw")
	build := exec.CommandContext(ctx, goBinary(), "build", "-o", llmgw, ".")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "go build: %s", out)
	return llmgw
}

// goBinary is the go command: $GO (make passes it), else go on PATH.
func goBinary() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "/usr/local/go/bin/go"
}

// ---- port-forwards ---------------------------------------------------------

// forward is one `kubectl port-forward` on a fixed loopback port. When
// kubectl exits (its pod went away) it is started again on the same port
// until Stop, so a replaced pod is reached again through the same URL.
type forward struct {
	k      kube
	target string // svc/NAME or pod/NAME
	remote int
	port   int

	mu      sync.Mutex
	cmd     *exec.Cmd
	ready   chan struct{} // closed when the current kubectl forwards
	stopped bool
	restart int
	done    chan struct{}
	log     bytes.Buffer
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startForward starts kubectl port-forward TARGET to REMOTE on a free loopback
// port and waits (up to timeout) until it forwards.
func startForward(k kube, target string, remote int, timeout time.Duration) *forward {
	GinkgoHelper()
	port, err := freePort()
	Expect(err).NotTo(HaveOccurred())
	f := &forward{k: k, target: target, remote: remote, port: port, done: make(chan struct{})}
	go f.supervise()
	Expect(f.waitReady(timeout)).To(Succeed())
	return f
}

// URL is http://127.0.0.1:PORT.
func (f *forward) URL() string { return "http://127.0.0.1:" + strconv.Itoa(f.port) }

func (f *forward) String() string {
	return fmt.Sprintf("port-forward %s %d:%d", f.target, f.port, f.remote)
}

func (f *forward) supervise() {
	defer close(f.done)
	backoff := 200 * time.Millisecond
	for {
		f.mu.Lock()
		if f.stopped {
			f.mu.Unlock()
			return
		}
		ready := make(chan struct{})
		f.ready = ready
		cmd := f.k.cmd(context.Background(), "-n", ns, "port-forward", "--address", "127.0.0.1", f.target,
			fmt.Sprintf("%d:%d", f.port, f.remote))
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = &lockedWriter{mu: &f.mu, w: &f.log}
		f.cmd = cmd
		err := cmd.Start()
		f.mu.Unlock()
		if err == nil {
			sc := bufio.NewScanner(stdout)
			once := sync.Once{}
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "Forwarding from") {
					once.Do(func() { close(ready) })
				}
			}
			err = cmd.Wait()
		}
		f.mu.Lock()
		stopped := f.stopped
		if !stopped {
			f.restart++
			fmt.Fprintf(&f.log, "%s: kubectl exited (%v); restarting\n", time.Now().Format(time.TimeOnly), err)
		}
		f.mu.Unlock()
		if stopped {
			return
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 2*time.Second)
	}
}

// waitReady waits until the current kubectl process forwards.
func (f *forward) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		f.mu.Lock()
		ready := f.ready
		f.mu.Unlock()
		if ready != nil {
			select {
			case <-ready:
				return nil
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s: not forwarding after %v; kubectl said:\n%s", f, timeout, f.Log())
}

// Restart kills the current kubectl (e.g. after its pod was replaced) and
// waits until the next one forwards.
func (f *forward) Restart(timeout time.Duration) error {
	f.mu.Lock()
	if f.cmd != nil && f.cmd.Process != nil {
		_ = f.cmd.Process.Kill()
	}
	f.ready = nil
	f.mu.Unlock()
	return f.waitReady(timeout)
}

// Stop ends the forward for good.
func (f *forward) Stop() {
	f.mu.Lock()
	f.stopped = true
	if f.cmd != nil && f.cmd.Process != nil {
		_ = f.cmd.Process.Kill()
	}
	f.mu.Unlock()
	select {
	case <-f.done:
	case <-time.After(10 * time.Second):
	}
}

// Log is what kubectl wrote on stderr, and the restarts.
func (f *forward) Log() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.log.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// ---- objects ---------------------------------------------------------------

type condition struct {
	Type, Status, Reason, Message string
}

type object struct {
	Kind     string
	Metadata struct {
		Name              string
		UID               string
		CreationTimestamp string
	}
	Spec   map[string]any
	Status struct {
		Alias      string
		Conditions []condition
	}
}

func (o object) ready() (condition, bool) {
	for _, c := range o.Status.Conditions {
		if c.Type == "Ready" {
			return c, true
		}
	}
	return condition{}, false
}

// servedAliases are the public names of the ModelAliases whose Ready
// condition is True: what a key allowed '*' must see on GET /v1/models.
func servedAliases(ctx context.Context, k kube) ([]string, error) {
	var list struct{ Items []object }
	if err := k.getJSON(ctx, &list, "modelaliases"); err != nil {
		return nil, err
	}
	var out []string
	for _, o := range list.Items {
		if c, ok := o.ready(); ok && c.Status == "True" {
			name := o.Status.Alias
			if name == "" {
				name = o.Metadata.Name
			}
			out = append(out, name)
		}
	}
	return out, nil
}

type podInfo struct {
	Name, UID, Phase, IP string
	Restarts             int32
	Ready                bool
	Claims               []string
}

// pods lists the pods of the namespace.
func pods(ctx context.Context, k kube) ([]podInfo, error) {
	var list struct {
		Items []struct {
			Metadata struct{ Name, UID string }
			Spec     struct {
				Volumes []struct {
					PersistentVolumeClaim *struct{ ClaimName string } `json:"persistentVolumeClaim"`
				}
			}
			Status struct {
				Phase             string
				PodIP             string `json:"podIP"`
				Conditions        []condition
				ContainerStatuses []struct {
					RestartCount int32 `json:"restartCount"`
				} `json:"containerStatuses"`
			}
		}
	}
	if err := k.getJSON(ctx, &list, "pods"); err != nil {
		return nil, err
	}
	var out []podInfo
	for _, p := range list.Items {
		pi := podInfo{Name: p.Metadata.Name, UID: p.Metadata.UID, Phase: p.Status.Phase, IP: p.Status.PodIP}
		for _, cs := range p.Status.ContainerStatuses {
			pi.Restarts += cs.RestartCount
		}
		for _, c := range p.Status.Conditions {
			if c.Type == "Ready" {
				pi.Ready = c.Status == "True"
			}
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				pi.Claims = append(pi.Claims, v.PersistentVolumeClaim.ClaimName)
			}
		}
		out = append(out, pi)
	}
	return out, nil
}

func podByName(list []podInfo, name string) (podInfo, bool) {
	for _, p := range list {
		if p.Name == name {
			return p, true
		}
	}
	return podInfo{}, false
}

// ---- diagnostics -----------------------------------------------------------

// dumpDiagnostics writes what an engineer needs after a failure: pods,
// events, describe of the pods and the llmgw objects, logs, port-forwards.
func dumpDiagnostics(k kube, forwards []*forward) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	section := func(title string, args ...string) {
		out, err := k.run(ctx, nil, args...)
		GinkgoWriter.Printf("\n===== %s =====\n%s", title, out)
		if err != nil {
			GinkgoWriter.Printf("(%v)\n", err)
		}
	}
	GinkgoWriter.Printf("\n######## diagnostics of the failed spec: %s ########\n", CurrentSpecReport().FullText())
	section("pods", "-n", ns, "get", "pods,pvc,svc,endpointslices", "-o", "wide")
	section("llmgw objects", "-n", ns, "get", "gatewaykeys,modelaliases,providerendpoints", "-o", "wide")
	section("events (latest 60)", "-n", ns, "get", "events", "--sort-by=.lastTimestamp")
	section("describe pods", "-n", ns, "describe", "pods")
	section("describe llmgw objects", "-n", ns, "describe", "gatewaykeys,modelaliases,providerendpoints")
	if list, err := pods(ctx, k); err == nil {
		for _, p := range list {
			section("logs "+p.Name+" (last 150 lines)", "-n", ns, "logs", p.Name, "--all-containers", "--tail=150")
			if p.Restarts > 0 {
				section("previous logs "+p.Name, "-n", ns, "logs", p.Name, "--all-containers", "--previous", "--tail=100")
			}
		}
	}
	for _, f := range forwards {
		if f != nil {
			GinkgoWriter.Printf("\n===== %s =====\n%s", f, f.Log())
		}
	}
}

// ---- kubectl get tables ----------------------------------------------------

// tables are the tables kubectl get printed: one per kind, each a header
// line (NAME ...) and rows, separated by blank lines.
type tables []map[string]map[string]string // per table: NAME → column → value

// parseTables reads columns by the header's column positions (kubectl
// aligns every column, and an empty value is blank).
func parseTables(out string) tables {
	var ts tables
	var starts []int
	var heads []string
	var cur map[string]map[string]string
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\n")
		if strings.TrimSpace(line) == "" {
			starts, cur = nil, nil
			continue
		}
		if strings.HasPrefix(line, "NAME") {
			starts, heads = nil, nil
			for i := 0; i < len(line); i++ {
				if line[i] != ' ' && (i == 0 || line[i-1] == ' ') {
					starts = append(starts, i)
					j := strings.IndexByte(line[i:], ' ')
					if j < 0 {
						j = len(line) - i
					}
					heads = append(heads, line[i:i+j])
				}
			}
			cur = map[string]map[string]string{}
			ts = append(ts, cur)
			continue
		}
		if cur == nil {
			continue
		}
		row := map[string]string{}
		for i, st := range starts {
			end := len(line)
			if i+1 < len(starts) {
				end = min(starts[i+1], len(line))
			}
			if st < len(line) {
				row[heads[i]] = strings.TrimSpace(line[st:end])
			} else {
				row[heads[i]] = ""
			}
		}
		cur[row["NAME"]] = row
	}
	return ts
}

// row is the row named name in any of the tables (nil when none).
func (ts tables) row(name string) map[string]string {
	for _, t := range ts {
		if r, ok := t[name]; ok {
			return r
		}
	}
	return nil
}

// ---- the ledger files ------------------------------------------------------

// helperImage is the image kind's local-path provisioner runs its helper
// pods with (a busybox): present on every kind node, online or offline.
func helperImage(ctx context.Context, k kube) string {
	GinkgoHelper()
	out, err := k.run(ctx, nil, "-n", "local-path-storage", "get", "configmap", "local-path-config", "-o", `jsonpath={.data.helperPod\.yaml}`)
	Expect(err).NotTo(HaveOccurred())
	for line := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "image:"); ok {
			return strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	Fail("no image in local-path-config's helperPod.yaml:\n" + out)
	return ""
}

// readLedger reads /var/lib/llmgw/usage.db* of the PVC claim through a
// short-lived pod that mounts it read-only next to the gateway (ReadWriteOnce
// allows that on the one node): the gateway image is FROM scratch, with no
// shell, cat or tar for kubectl exec/cp. Files by name.
func readLedger(ctx context.Context, k kube, image, name, claim string) map[string]string {
	GinkgoHelper()
	pod := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
  labels:
    llmgw.dev/e2e: ledger-reader
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  automountServiceAccountToken: false
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    seccompProfile:
      type: RuntimeDefault
  containers:
  - name: reader
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sleep", "600"]
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities:
        drop: ["ALL"]
    volumeMounts:
    - name: data
      mountPath: /data
      readOnly: true
  volumes:
  - name: data
    persistentVolumeClaim:
      claimName: %s
      readOnly: true
`, name, ns, image, claim)
	Expect(k.apply(ctx, pod)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		_, _ = k.run(ctx, nil, "-n", ns, "delete", "pod", name, "--ignore-not-found", "--wait=false")
	})
	_, err := k.run(ctx, nil, "-n", ns, "wait", "--for=condition=Ready", "pod/"+name, "--timeout=120s")
	Expect(err).NotTo(HaveOccurred())
	ls := k.must(ctx, "exec", name, "--", "ls", "-la", "/data")
	GinkgoWriter.Printf("%s on %s:\n%s", claim, name, ls)
	files := map[string]string{}
	for _, f := range strings.Fields(k.must(ctx, "exec", name, "--", "ls", "-1", "/data")) {
		if strings.HasPrefix(f, "usage.db") {
			files[f] = k.must(ctx, "exec", name, "--", "cat", "/data/"+f)
		}
	}
	return files
}
