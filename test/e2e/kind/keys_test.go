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
