package kind_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/llmgw/llmgw/test/e2e/specs"
)

// watchTeamNamespace does by hand what docs/operations.md#namespaces tells
// a kustomize user to do so that the controller compiles a second
// namespace: the Role of config/rbac/watched_namespace in it, the
// namespace in the llmgw-watched-namespaces policy, --watch-namespaces on
// the controller. Everything is put back when the spec ends.
//
// Each restart replaces the controller's pod: keep(logs) hands the replaced
// pod's logs to the suite's secret scan, and the spec goes on (and ends)
// only once one controller pod is left, Ready and holding the leader Lease,
// so that the next spec starts with the controller it records.
func watchTeamNamespace(ctx context.Context, k kube, root, team string, keep func(logs string)) {
	GinkgoHelper()
	_, err := k.run(ctx, nil, "create", "namespace", team)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		_, err := k.run(ctx, nil, "delete", "namespace", team, "--wait=false")
		Expect(err).NotTo(HaveOccurred())
	}, NodeTimeout(time.Minute))

	By("kubectl apply -n " + team + " -f config/rbac/watched_namespace/")
	_, err = k.run(ctx, nil, "apply", "-n", team, "-f", filepath.Join(root, "config", "rbac", "watched_namespace")+"/")
	Expect(err).NotTo(HaveOccurred())

	By("adding " + team + " to the llmgw-watched-namespaces policy")
	raw, err := os.ReadFile(filepath.Join(root, "config", "policy", "watched_namespaces.yaml"))
	Expect(err).NotTo(HaveOccurred())
	policy := string(raw)
	const home = "request.namespace in ['" + ns + "']"
	Expect(policy).To(ContainSubstring(home))
	Expect(k.apply(ctx, strings.Replace(policy, home, "request.namespace in ['"+ns+"', '"+team+"']", 1))).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(k.apply(ctx, policy)).To(Succeed()) }, NodeTimeout(time.Minute))

	By("restarting the controller with --watch-namespaces=" + team)
	var dep struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Args []string `json:"args"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	Expect(k.getJSON(ctx, &dep, "deployment", "llmgw-controller")).To(Succeed())
	args := dep.Spec.Template.Spec.Containers[0].Args
	setArgs := func(ctx context.Context, args []string) {
		GinkgoHelper()
		patch, err := json.Marshal([]map[string]any{{"op": "replace", "path": "/spec/template/spec/containers/0/args", "value": args}})
		Expect(err).NotTo(HaveOccurred())
		logs, _ := k.run(ctx, nil, "-n", ns, "logs", "deployment/llmgw-controller")
		keep(logs)
		k.must(ctx, "patch", "deployment", "llmgw-controller", "--type", "json", "-p", string(patch))
		k.must(ctx, "rollout", "status", "deployment/llmgw-controller", "--timeout=3m")
		controllerSettled(ctx, k)
	}
	setArgs(ctx, append(append([]string(nil), args...), "--watch-namespaces="+team))
	DeferCleanup(func(ctx SpecContext) { setArgs(ctx, args) }, NodeTimeout(4*time.Minute))
}

// controllerSettled waits until exactly one controller pod exists, Ready
// and not being deleted, and it holds the leader Lease (controller-runtime's
// holder identity is "<pod name>_<uuid>").
func controllerSettled(ctx context.Context, k kube) {
	GinkgoHelper()
	Eventually(func() string {
		out, err := k.run(ctx, nil, "-n", ns, "get", "pods", "-l", "app.kubernetes.io/name=llmgw,app.kubernetes.io/component=controller",
			"-o", `jsonpath={range .items[*]}{.metadata.name} {.metadata.deletionTimestamp} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
		if err != nil {
			return err.Error()
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 1 {
			return "controller pods: " + out
		}
		f := strings.Fields(lines[0])
		if len(f) != 2 || f[1] != "True" {
			return "controller pod not Ready or being deleted: " + lines[0]
		}
		holder, err := k.run(ctx, nil, "-n", ns, "get", "lease", "llmgw-controller-leader", "-o", "jsonpath={.spec.holderIdentity}")
		if err != nil {
			return err.Error()
		}
		if !strings.HasPrefix(holder, f[0]+"_") {
			return "leader " + holder + ", not " + f[0]
		}
		return "settled"
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Equal("settled"))
}

// teamNamespaceSpec: a key created in a watched team namespace is compiled,
// gets its status there, is served by every gateway replica, and its usage
// is recorded under namespace/name; a ProviderEndpoint there is refused at
// apply time.
func teamNamespaceSpec(ctx context.Context, k kube, root, llmgw, dir, run string, bases []string, keep func(logs string)) {
	GinkgoHelper()
	team := "e2e-team-" + run
	watchTeamNamespace(ctx, k, root, team, keep)

	By("llmgw keys create --namespace " + team + " | kubectl apply -f -")
	id := "e2e-teamkey-" + run
	tk := createKeyIn(ctx, k, llmgw, dir, team, id, "chat-alpha", 100000, 10000)
	waitReadyIn(ctx, k, team, 2*time.Minute, "gatewaykey/"+id)

	for _, base := range bases {
		Eventually(func() int { return specs.ModelsStatus(ctx, base, tk.plaintext) }).WithContext(ctx).
			WithTimeout(time.Minute).WithPolling(250*time.Millisecond).Should(Equal(http.StatusOK), "team key through %s", base)
		r, err := specs.ChatSDK(ctx, base, tk.plaintext, "chat-alpha", "hello from a team namespace")
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Status).To(Equal(http.StatusOK))
	}
	u, err := specs.ListUsage(ctx, bases[0], tk.plaintext)
	Expect(err).NotTo(HaveOccurred())
	Expect(u.Partial).To(BeFalse(), "missing replicas: %v", u.Missing)
	Expect(u.Records).To(HaveLen(len(bases)), "one record per request, from every replica")
	for _, rec := range u.Records {
		Expect(rec.KeyID).To(Equal(team+"/"+id), "a key outside the controller's namespace is recorded as namespace/name")
	}

	By("refusing a ProviderEndpoint in the team namespace at kubectl apply")
	_, err = k.run(ctx, []byte(`apiVersion: llmgw.dev/v1alpha1
kind: ProviderEndpoint
metadata: {name: team-own, namespace: `+team+`}
spec: {protocol: openai, url: "http://mock-alpha.`+ns+`.svc:9001/v1"}
`), "apply", "-f", "-")
	Expect(err).To(HaveOccurred(), "a ProviderEndpoint outside the controller's namespace was accepted")
	Expect(err.Error()).To(ContainSubstring("ProviderEndpoints are compiled in namespace " + ns + " only"))
}
