// Command cni-standin replaces kindnetd in the offline kind node image
// (hack/kind). kind's default CNI manifest runs it as a hostNetwork DaemonSet
// with /etc/cni/net.d mounted and POD_SUBNET set; it writes a ptp +
// host-local CNI config for that subnet (with ipMasq, plus portmap) and then
// idles until it is stopped. That is enough for a single-node cluster: every
// pod gets a point-to-point veth and a host route, so pods, the node and
// Services (through kube-proxy) reach each other. It does not route between
// nodes and does not implement NetworkPolicy.
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

func main() {
	dir := envOr("CNI_CONFIG_DIR", "/etc/cni/net.d")
	// POD_CIDR overrides POD_SUBNET (kind sets POD_SUBNET to the cluster's podSubnet).
	subnets := envOr("POD_CIDR", envOr("POD_SUBNET", "10.244.0.0/16"))
	mtu := 0
	if v := os.Getenv("CNI_MTU"); v != "" {
		if _, err := fmt.Sscan(v, &mtu); err != nil {
			fatal(fmt.Errorf("CNI_MTU=%q: %w", v, err))
		}
	}
	conf, err := render(subnets, mtu)
	if err != nil {
		fatal(err)
	}
	if err := writeAtomic(filepath.Join(dir, "10-kindnet.conflist"), conf); err != nil {
		fatal(err)
	}
	fmt.Printf("cni-standin: wrote %s for %s; idling\n", filepath.Join(dir, "10-kindnet.conflist"), subnets)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	s := <-sig
	fmt.Printf("cni-standin: %v, exiting\n", s)
}

func envOr(k, def string) string {
	if v := strings.TrimSpace(os.Getenv(k)); v != "" {
		return v
	}
	return def
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "cni-standin:", err)
	os.Exit(1)
}

// render returns a CNI conflist: ptp with host-local IPAM over the given
// comma-separated subnets, then portmap (hostPort support).
func render(subnets string, mtu int) ([]byte, error) {
	var ranges [][]map[string]string
	var routes []map[string]string
	for _, s := range strings.Split(subnets, ",") {
		s = strings.TrimSpace(s)
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			return nil, fmt.Errorf("bad pod subnet %q: %w", s, err)
		}
		ranges = append(ranges, []map[string]string{{"subnet": n.String()}})
		dst := "0.0.0.0/0"
		if n.IP.To4() == nil {
			dst = "::/0"
		}
		routes = append(routes, map[string]string{"dst": dst})
	}
	ptp := map[string]any{
		"type":   "ptp",
		"ipMasq": true,
		"ipam": map[string]any{
			"type":    "host-local",
			"dataDir": "/run/cni-ipam-state",
			"ranges":  ranges,
			"routes":  routes,
		},
	}
	if mtu > 0 {
		ptp["mtu"] = mtu
	}
	conf := map[string]any{
		"cniVersion": "0.4.0",
		"name":       "kindnet",
		"plugins": []any{
			ptp,
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cni-standin-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
