package kind_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/llmgw/llmgw/mockproviders/otlpsink"
	"github.com/llmgw/llmgw/test/e2e/specs"
)

// Traces on the cluster (issue 47): an OTLP receiver runs beside the mocks
// (`llmgw mockprovider --flavor otlp`, the same image), the gateways export
// to it over OTLP/HTTP, and a request that carries a traceparent comes back
// as the gateway's server span (a child of the caller's span, with the
// GenAI attributes) and a client span per provider attempt (a child of the
// server span), while the provider received the trace's context. Its own
// Ordered container: it turns tracing on in the gateway StatefulSet (a
// rolling restart) and off again in AfterAll.
var _ = Describe("traces through the gateway to the provider (OTLP)", Ordered, func() {
	const model = "chat-alpha"
	var (
		root              string
		k                 kube
		run               = fmt.Sprintf("%x", time.Now().Unix()&0xffffff)
		key               gwKey
		gw, sink, fwAlpha *forward
	)

	BeforeAll(func(ctx SpecContext) {
		root = repoRoot()
		k = kube{root: root}
		tmp := GinkgoT().TempDir()
		image := strings.TrimSpace(k.must(ctx, "get", "deploy", "mock-alpha", "-o", "jsonpath={.spec.template.spec.containers[0].image}"))
		By("an OTLP receiver, mock-otlp, from the llmgw image (" + image + ")")
		Expect(k.apply(ctx, otlpSinkYAML(image))).To(Succeed())
		_, err := k.run(ctx, nil, "-n", ns, "rollout", "status", "deploy/mock-otlp", "--timeout=3m")
		Expect(err).NotTo(HaveOccurred())

		By("tracing on in the gateways: the standard OTEL_* variables (a rolling restart)")
		k.must(ctx, "set", "env", "statefulset/llmgw-gateway",
			"OTEL_EXPORTER_OTLP_ENDPOINT=http://mock-otlp:4318", "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
			"OTEL_TRACES_SAMPLER=parentbased_always_on", "OTEL_BSP_SCHEDULE_DELAY=500")
		setGatewayReplicas(ctx, k, 2)

		llmgw := buildLLMGW(ctx, root, tmp)
		_, err = k.run(ctx, nil, "apply", "-f", filepath.Join(root, "config", "samples")+"/")
		Expect(err).NotTo(HaveOccurred())
		key = createKey(ctx, k, llmgw, tmp, "e2e-trace-"+run, "*", 600, 50)
		waitReady(ctx, k, 2*time.Minute, "gatewaykey/"+key.id, "modelalias/"+model)
		gw = startForward(k, "pod/llmgw-gateway-0", 8080, time.Minute)
		sink = startForward(k, "svc/mock-otlp", 4318, time.Minute)
		fwAlpha = startForward(k, "svc/mock-alpha", 9001, time.Minute)
		Eventually(func() int { return specs.ModelsStatus(ctx, gw.URL(), key.plaintext) }).WithContext(ctx).
			WithTimeout(90 * time.Second).WithPolling(500 * time.Millisecond).Should(Equal(http.StatusOK))
	}, NodeTimeout(15*time.Minute))

	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			dumpDiagnostics(k, []*forward{gw, sink, fwAlpha})
		}
	})

	AfterAll(func(ctx SpecContext) {
		for _, f := range []*forward{gw, sink, fwAlpha} {
			if f != nil {
				f.Stop()
			}
		}
		By("tracing off again; mock-otlp and this run's key deleted")
		k.must(ctx, "set", "env", "statefulset/llmgw-gateway", "OTEL_EXPORTER_OTLP_ENDPOINT-", "OTEL_EXPORTER_OTLP_PROTOCOL-",
			"OTEL_TRACES_SAMPLER-", "OTEL_BSP_SCHEDULE_DELAY-")
		setGatewayReplicas(ctx, k, 2)
		_, _ = k.run(ctx, nil, "-n", ns, "delete", "--ignore-not-found", "--wait=false", "deploy/mock-otlp", "svc/mock-otlp", "gatewaykey/"+key.id)
	}, NodeTimeout(10*time.Minute))

	It("continues the caller's trace: a server span with the GenAI attributes, a client span per attempt, the trace context at the provider", func(ctx SpecContext) {
		traceID, parentID := randomHex(16), randomHex(8)
		traceparent := "00-" + traceID + "-" + parentID + "-01"
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, gw.URL()+"/v1/chat/completions",
			strings.NewReader(string(specs.ChatBody(model, "trace me", false))))
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Authorization", "Bearer "+key.plaintext)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("traceparent", traceparent)
		resp, err := specs.HTTP.Do(req)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		requestID := resp.Header.Get("X-Request-Id")

		var server, client otlpsink.Span
		Eventually(func(g Gomega) {
			body, err := httpGet(ctx, sink.URL()+otlpsink.SpansPath+"?trace_id="+traceID)
			g.Expect(err).NotTo(HaveOccurred())
			var got otlpsink.Spans
			g.Expect(jsonv2.Unmarshal([]byte(body), &got)).To(Succeed())
			server, client = otlpsink.Span{}, otlpsink.Span{}
			for _, s := range got.Spans {
				switch s.Kind {
				case "SPAN_KIND_SERVER":
					server = s
				case "SPAN_KIND_CLIENT":
					client = s
				}
			}
			g.Expect(server.SpanID).NotTo(BeEmpty(), "no server span of trace %s yet: %s", traceID, body)
			g.Expect(client.SpanID).NotTo(BeEmpty(), "no client span of trace %s yet: %s", traceID, body)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		GinkgoWriter.Printf("server span %s %q %v\nclient span %s %q %v\n", server.SpanID, server.Name, server.Attributes,
			client.SpanID, client.Name, client.Attributes)

		Expect(server.Service).To(Equal("llmgw-gateway"))
		Expect(server.ParentSpanID).To(Equal(parentID), "the server span continues the caller's span")
		Expect(server.Attributes).To(HaveKeyWithValue("gen_ai.operation.name", "chat"))
		Expect(server.Attributes).To(HaveKeyWithValue("gen_ai.request.model", model))
		Expect(server.Attributes).To(HaveKeyWithValue("gen_ai.provider.name", "openai"))
		Expect(server.Attributes).To(HaveKeyWithValue("llmgw.key_id", key.id))
		Expect(server.Attributes).To(HaveKeyWithValue("llmgw.request_id", requestID))
		Expect(server.Attributes).To(HaveKey("gen_ai.response.model"))
		Expect(server.Attributes).To(HaveKey("gen_ai.usage.input_tokens"))
		Expect(server.Attributes).To(HaveKey("gen_ai.usage.output_tokens"))
		Expect(client.ParentSpanID).To(Equal(server.SpanID), "the attempt is a child of the request")
		Expect(client.Attributes).To(HaveKeyWithValue("llmgw.provider", "alpha"))
		Expect(client.Attributes).To(HaveKeyWithValue("llmgw.fallback_index", float64(0)))
		for _, s := range []otlpsink.Span{server, client} {
			raw, err := jsonv2.Marshal(s)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(raw)).NotTo(ContainSubstring("trace me"), "prompt text in a span")
			Expect(string(raw)).NotTo(ContainSubstring(key.plaintext), "the key in a span")
		}

		By("the provider received the trace's context, with the attempt as its parent")
		calls, err := specs.MockCalls(ctx, fwAlpha.URL())
		Expect(err).NotTo(HaveOccurred())
		Expect(calls.TraceParents).To(ContainElement("00-"+traceID+"-"+client.SpanID+"-01"),
			"mock-alpha's traceparents: %v", calls.TraceParents)
	}, NodeTimeout(5*time.Minute))
})

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// otlpSinkYAML is the mock-otlp Deployment and Service: the trace receiver
// of package otlpsink on port 4318, locked down like the mocks.
func otlpSinkYAML(image string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: mock-otlp
  namespace: ` + ns + `
  labels: {app.kubernetes.io/name: llmgw, app.kubernetes.io/component: mock-otlp}
spec:
  replicas: 1
  selector:
    matchLabels: {app.kubernetes.io/name: llmgw, app.kubernetes.io/component: mock-otlp}
  template:
    metadata:
      labels: {app.kubernetes.io/name: llmgw, app.kubernetes.io/component: mock-otlp}
    spec:
      automountServiceAccountToken: false
      securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: otlp
        image: ` + image + `
        imagePullPolicy: IfNotPresent
        args: [mockprovider, --flavor=otlp, --addr=0.0.0.0:4318, --log-format=json]
        ports: [{name: otlp-http, containerPort: 4318, protocol: TCP}]
        readinessProbe: {httpGet: {path: /healthz, port: otlp-http}, periodSeconds: 2}
        resources: {requests: {cpu: 10m, memory: 32Mi}, limits: {cpu: 200m, memory: 256Mi}}
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
---
apiVersion: v1
kind: Service
metadata:
  name: mock-otlp
  namespace: ` + ns + `
spec:
  selector: {app.kubernetes.io/name: llmgw, app.kubernetes.io/component: mock-otlp}
  ports: [{name: otlp-http, port: 4318, targetPort: otlp-http, protocol: TCP}]
`
}
