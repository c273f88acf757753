package kind_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/llmgw/llmgw/api/keyformat"
)

// gwKey is a gateway key made with `llmgw keys create`: the plaintext lives
// only in this process and a 0600 file in the suite's temporary directory.
type gwKey struct {
	id        string
	plaintext string
}

// createKey runs, as a user would,
//
//	llmgw keys create --id ID --models M --rpm R --burst B --output yaml --entry-out - --key-out FILE | kubectl apply -f -
//
// (a real pipe between the two processes) and reads the plaintext from FILE.
func createKey(ctx context.Context, k kube, llmgw, dir, id, models string, rpm, burst int) gwKey {
	GinkgoHelper()
	return createKeyIn(ctx, k, llmgw, dir, ns, id, models, rpm, burst)
}

// createKeyIn is createKey into namespace namespace.
func createKeyIn(ctx context.Context, k kube, llmgw, dir, namespace, id, models string, rpm, burst int) gwKey {
	GinkgoHelper()
	keyFile := filepath.Join(dir, id+".key")
	gen := exec.CommandContext(ctx, llmgw, "keys", "create", "--id", id, "--namespace", namespace, "--models", models,
		"--rpm", strconv.Itoa(rpm), "--burst", strconv.Itoa(burst), "--output", "yaml", "--entry-out", "-", "--key-out", keyFile)
	apply := k.cmd(ctx, "apply", "-f", "-")
	pipe, err := gen.StdoutPipe()
	Expect(err).NotTo(HaveOccurred())
	apply.Stdin = pipe
	var genErr, applyOut, applyErr bytes.Buffer
	gen.Stderr, apply.Stdout, apply.Stderr = &genErr, &applyOut, &applyErr
	Expect(apply.Start()).To(Succeed())
	Expect(gen.Run()).To(Succeed(), "llmgw keys create --id %s: %s", id, genErr.String())
	Expect(apply.Wait()).To(Succeed(), "kubectl apply -f - of GatewayKey %s: %s", id, applyErr.String())
	Expect(applyOut.String()).To(ContainSubstring("gatewaykey.llmgw.dev/" + id))
	Expect(keyformat.LooksLikeKey(genErr.String())).To(BeFalse(), "llmgw keys create --key-out printed a key on stderr")
	Expect(keyformat.LooksLikeKey(applyOut.String()+applyErr.String())).To(BeFalse(), "the GatewayKey YAML held a plaintext key")
	raw, err := os.ReadFile(keyFile)
	Expect(err).NotTo(HaveOccurred())
	fi, err := os.Stat(keyFile)
	Expect(err).NotTo(HaveOccurred())
	Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o600)), "--key-out file mode")
	plain := strings.TrimSpace(string(raw))
	Expect(keyformat.LooksLikeKey(plain)).To(BeTrue(), "--key-out %s does not hold a key", keyFile)
	GinkgoWriter.Printf("key %s created (models %s, %d rpm, burst %d); plaintext only in %s\n", id, models, rpm, burst, keyFile)
	return gwKey{id: id, plaintext: plain}
}

// plaintextGatewayKeyYAML is a GatewayKey whose keyHash is a plaintext key:
// what an operator pasting the wrong value would apply.
func plaintextGatewayKeyYAML(name, keyHash, prefix string) string {
	return fmt.Sprintf(`apiVersion: llmgw.dev/v1alpha1
kind: GatewayKey
metadata:
  name: %s
  namespace: %s
spec:
  keyHash: %s
  keyPrefix: %s
  models: ["*"]
`, name, ns, keyHash, prefix)
}

func aliasYAML(name, primaryProvider, primaryModel, extra string) string {
	return fmt.Sprintf(`apiVersion: llmgw.dev/v1alpha1
kind: ModelAlias
metadata:
  name: %s
  namespace: %s
  labels:
    llmgw.dev/e2e: kind
spec:
  primary:
    provider: %s
    model: %s
%s`, name, ns, primaryProvider, primaryModel, extra)
}

// fallbackAliasYAML: primary alpha, fallback beta, short attempt and first
// chunk timeouts, so that a timeout case takes seconds.
var fallbackAliasYAML = aliasYAML("e2e-fallback", "alpha", "alpha-large", `  fallbacks:
  - provider: beta
    model: beta-large
  maxFallbacks: 1
  timeouts:
    total: 30s
    attempt: 3s
    firstChunk: 3s
    idle: 10s
`)

// waitReady waits until kubectl reports condition Ready on every object.
func waitReady(ctx context.Context, k kube, timeout time.Duration, objs ...string) {
	GinkgoHelper()
	waitReadyIn(ctx, k, ns, timeout, objs...)
}

func waitReadyIn(ctx context.Context, k kube, namespace string, timeout time.Duration, objs ...string) {
	GinkgoHelper()
	args := append([]string{"-n", namespace, "wait", "--for=condition=Ready", "--timeout=" + timeout.String()}, objs...)
	_, err := k.run(ctx, nil, args...)
	Expect(err).NotTo(HaveOccurred())
}

// rotateKey runs, as a user would,
//
//	kubectl get gatewaykey ID -o yaml | llmgw keys rotate --id ID --grace G --from - --entry-out - --key-out FILE | kubectl apply -f -
//
// (real pipes between the three processes) and reads the new plaintext
// from FILE.
func rotateKey(ctx context.Context, k kube, llmgw, dir, id string, grace time.Duration) string {
	GinkgoHelper()
	keyFile := filepath.Join(dir, id+".rotated.key")
	get := k.cmd(ctx, "-n", ns, "get", "gatewaykey", id, "-o", "yaml")
	rot := exec.CommandContext(ctx, llmgw, "keys", "rotate", "--id", id, "--grace", grace.String(),
		"--from", "-", "--entry-out", "-", "--key-out", keyFile)
	apply := k.cmd(ctx, "apply", "-f", "-")
	getOut, err := get.StdoutPipe()
	Expect(err).NotTo(HaveOccurred())
	rot.Stdin = getOut
	rotOut, err := rot.StdoutPipe()
	Expect(err).NotTo(HaveOccurred())
	apply.Stdin = rotOut
	var getErr, rotErr, applyOut, applyErr bytes.Buffer
	get.Stderr, rot.Stderr, apply.Stdout, apply.Stderr = &getErr, &rotErr, &applyOut, &applyErr
	Expect(apply.Start()).To(Succeed())
	Expect(rot.Start()).To(Succeed())
	Expect(get.Run()).To(Succeed(), "kubectl get gatewaykey %s: %s", id, getErr.String())
	Expect(rot.Wait()).To(Succeed(), "llmgw keys rotate --id %s: %s", id, rotErr.String())
	Expect(apply.Wait()).To(Succeed(), "kubectl apply -f - of the rotated GatewayKey %s: %s", id, applyErr.String())
	Expect(applyOut.String()).To(ContainSubstring("gatewaykey.llmgw.dev/" + id + " configured"))
	Expect(keyformat.LooksLikeKey(rotErr.String()+applyOut.String()+applyErr.String())).To(BeFalse(), "a plaintext key was printed")
	raw, err := os.ReadFile(keyFile)
	Expect(err).NotTo(HaveOccurred())
	plain := strings.TrimSpace(string(raw))
	Expect(keyformat.LooksLikeKey(plain)).To(BeTrue(), "--key-out %s does not hold a key", keyFile)
	GinkgoWriter.Printf("key %s rotated (grace %s): %s\n", id, grace, strings.TrimSpace(rotErr.String()))
	return plain
}

// rotationShown is what kubectl shows of a key's rotation: whether
// `kubectl get gk` says it is in its grace window (its ROTATION and
// GRACEENDS columns), and the reasons of the Events about it.
func rotationShown(ctx context.Context, k kube, id string) (inGrace bool, reasons []string) {
	GinkgoHelper()
	table, err := k.run(ctx, nil, "-n", ns, "get", "gatewaykey", id)
	Expect(err).NotTo(HaveOccurred())
	lines := strings.Split(strings.TrimSpace(table), "\n")
	Expect(lines).To(HaveLen(2), "kubectl get gk %s:\n%s", id, table)
	// Columns are aligned: a value starts where its header does (an empty
	// column would shift a split by fields).
	header, row := lines[0], lines[1]
	col := func(name string) string {
		i := strings.Index(header, name)
		Expect(i).To(BeNumerically(">=", 0), "kubectl get gk has no %s column:\n%s", name, table)
		if i >= len(row) {
			return ""
		}
		f := strings.Fields(row[i:])
		if len(f) == 0 || strings.HasPrefix(row[i:], " ") {
			return ""
		}
		return f[0]
	}
	Expect(col("GRACEENDS")).To(MatchRegexp(`^\d{4}-\d\d-\d\dT`), "kubectl get gk %s:\n%s", id, table)
	out, err := k.run(ctx, nil, "-n", ns, "get", "events", "--field-selector", "involvedObject.name="+id,
		"-o", "jsonpath={.items[*].reason}")
	Expect(err).NotTo(HaveOccurred())
	return col("ROTATION") == "true", strings.Fields(out)
}
