package controllers

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().String()
}

func httpGet(url string) func() string {
	return func() string {
		resp, err := http.Get(url)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.Status + "\n" + string(b)
	}
}

var _ = Describe("probes and metrics", func() {
	It("serves /healthz, /readyz and the controller's metrics", func() {
		ns := newNamespace()
		probe, metricsAddr := freeAddr(), freeAddr()
		_, stop := startManager(cfg, Options{Namespace: ns, ProbeAddr: probe, MetricsAddr: metricsAddr, MetricsInsecure: true, Debounce: 50 * time.Millisecond})
		defer stop()
		apply(k8sClient, samplesYAML(), ns)
		Eventually(httpGet("http://"+probe+"/healthz"), eventually).Should(HavePrefix("200 OK"))
		Eventually(httpGet("http://"+probe+"/readyz"), eventually).Should(HavePrefix("200 OK"))
		Eventually(httpGet("http://"+metricsAddr+"/metrics"), eventually).Should(And(
			ContainSubstring("llmgw_controller_snapshot_writes_total"),
			MatchRegexp(`llmgw_controller_publish_seconds_count [1-9]`),                     // the samples' snapshot was written
			ContainSubstring(`llmgw_controller_objects{kind="ModelAlias",ready="unknown"}`), // no gateway runs here
			ContainSubstring(`controller_runtime_reconcile_total{controller="snapshot"`),
		))
	})
})

// scrape GETs /metrics over HTTPS (the certificate is self-signed, as a
// Prometheus scrape config with insecure_skip_verify would accept) with an
// optional bearer token.
func scrape(url, token string) func() string {
	return func() string {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		Expect(err).NotTo(HaveOccurred())
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the controller's self-signed serving certificate
		}}
		resp, err := c.Do(req)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.Status + "\n" + string(b)
	}
}

var _ = Describe("metrics authentication", func() {
	It("serves /metrics only over HTTPS to a token the API server authorizes for GET /metrics", func(ctx SpecContext) {
		ns := newNamespace()
		metricsAddr := freeAddr()
		_, stop := startManager(cfg, Options{Namespace: ns, ProbeAddr: "0", MetricsAddr: metricsAddr, Debounce: 50 * time.Millisecond})
		defer stop()
		url := "https://" + metricsAddr + "/metrics"

		By("no token: 401; plain HTTP: no answer at all")
		Eventually(scrape(url, ""), eventually).Should(HavePrefix("401 "))
		Expect(httpGet("http://" + metricsAddr + "/metrics")()).NotTo(ContainSubstring("llmgw_controller"))

		By("a ServiceAccount token without the reader role: 403; a forged token: 401")
		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		token := func(name string) string {
			_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			return tr.Status.Token
		}
		stranger, scraper := token("stranger"), token("scraper")
		Expect(scrape(url, stranger)()).To(HavePrefix("403 "))
		Expect(scrape(url, "not-a-token")()).To(HavePrefix("401 "))

		By("the reader role (as config/rbac/metrics_reader_role.yaml grants) bound to the scraper: 200 with the metrics")
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader-" + ns},
			Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
		Expect(k8sClient.Create(ctx, role)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { _ = k8sClient.Delete(ctx, role) })
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader-" + ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: ns}}}
		Expect(k8sClient.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { _ = k8sClient.Delete(ctx, binding) })
		Eventually(scrape(url, scraper), eventually).Should(And(HavePrefix("200 OK"), ContainSubstring("llmgw_controller_compiles_total")))
		Expect(scrape(url, stranger)()).To(HavePrefix("403 "), "the stranger's denial is not lifted by the scraper's grant")
	})
})
