package manifests

import (
	"net/netip"
	"strings"
	"testing"
)

// TestHelmTrustedProxies: gateway.trustedProxies becomes --trusted-proxies
// (what to set behind an ingress), in a form the gateway parses; by default
// the flag is not rendered (the TCP peer is the client).
func TestHelmTrustedProxies(t *testing.T) {
	if v, ok := flagValue(containerArgs(t, renderHelm(t), "StatefulSet", "llmgw-gateway"), "trusted-proxies"); ok {
		t.Fatalf("--trusted-proxies=%s by default", v)
	}
	args := containerArgs(t, renderHelm(t, "--set", "gateway.trustedProxies={10.0.0.0/8,192.0.2.7/32}"), "StatefulSet", "llmgw-gateway")
	v, ok := flagValue(args, "trusted-proxies")
	if !ok || v != "10.0.0.0/8,192.0.2.7/32" {
		t.Fatalf("--trusted-proxies=%q (set: %v)", v, ok)
	}
	for _, p := range strings.Split(v, ",") {
		if _, err := netip.ParsePrefix(p); err != nil {
			t.Errorf("the gateway would refuse %q: %v", p, err)
		}
	}
}
