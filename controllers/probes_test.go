package controllers

import (
	"io"
	"net"
	"net/http"
	"time"

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
		_, stop := startManager(cfg, Options{Namespace: ns, ProbeAddr: probe, MetricsAddr: metricsAddr, Debounce: 50 * time.Millisecond})
		defer stop()
		apply(k8sClient, samplesYAML(), ns)
		Eventually(httpGet("http://"+probe+"/healthz"), eventually).Should(HavePrefix("200 OK"))
		Eventually(httpGet("http://"+probe+"/readyz"), eventually).Should(HavePrefix("200 OK"))
		Eventually(httpGet("http://"+metricsAddr+"/metrics"), eventually).Should(And(
			ContainSubstring("llmgw_controller_snapshot_writes_total"),
			ContainSubstring(`llmgw_controller_objects{kind="ModelAlias",ready="true"}`),
			ContainSubstring(`controller_runtime_reconcile_total{controller="snapshot"`),
		))
	})
})
