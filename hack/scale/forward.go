package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// gateway is one gateway pod reached through its own kubectl port-forward
// (data port 8080, management port 9090).
type gateway struct {
	pod        string
	data, mgmt string // http://127.0.0.1:<port>
	cmd        *exec.Cmd
}

type gateways struct {
	list   []*gateway
	client *http.Client
}

var forwarding = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)`)

// forwardGateways starts one port-forward per gateway pod.
func (k *kube) forwardGateways(ctx context.Context) (*gateways, error) {
	pods, err := k.cs.CoreV1().Pods(k.c.namespace).List(ctx, metav1.ListOptions{LabelSelector: k.c.gatewaySelector})
	if err != nil {
		return nil, err
	}
	g := &gateways{client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
	for _, p := range pods.Items {
		gw, err := k.forward(p.Name)
		if err != nil {
			g.close()
			return nil, err
		}
		g.list = append(g.list, gw)
	}
	if len(g.list) == 0 {
		return nil, fmt.Errorf("no gateway pods match %q", k.c.gatewaySelector)
	}
	logf("port-forwards: %d gateway pods", len(g.list))
	return g, nil
}

func (k *kube) forward(pod string) (*gateway, error) {
	cmd := exec.Command(k.c.kubectl, "-n", k.c.namespace, "port-forward", "--address", "127.0.0.1", "pod/"+pod, ":8080", ":9090")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = nil
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("kubectl port-forward %s: %w", pod, err)
	}
	gw := &gateway{pod: pod, cmd: cmd}
	found := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		n := 0
		for sc.Scan() {
			m := forwarding.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			switch m[2] {
			case "8080":
				gw.data = "http://127.0.0.1:" + m[1]
			case "9090":
				gw.mgmt = "http://127.0.0.1:" + m[1]
			}
			if n++; n == 2 {
				close(found)
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case <-found:
		return gw, nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("kubectl port-forward %s: no ports after 30s", pod)
	}
}

func (g *gateways) close() {
	for _, gw := range g.list {
		if gw.cmd.Process != nil {
			_ = gw.cmd.Process.Kill()
			_ = gw.cmd.Wait()
		}
	}
}

// knows reports whether gw accepts the key: GET /v1/models answers anything
// but 401 (200, or 429 once the key's read bucket is empty: both mean the
// key authenticated).
func (g *gateways) knows(ctx context.Context, gw *gateway, plaintext string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, gw.data+"/v1/models", nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Authorization", "Bearer "+plaintext)
	resp, err := g.client.Do(req)
	if err != nil {
		return false, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode != http.StatusUnauthorized, nil
}

// servedBy polls every gateway until each knows the key; it returns, per
// gateway, the time from start until it first did.
func (g *gateways) servedBy(ctx context.Context, plaintext string, start time.Time, poll, timeout time.Duration) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := make([]time.Duration, len(g.list))
	errs := make([]error, len(g.list))
	var wg sync.WaitGroup
	for i, gw := range g.list {
		wg.Go(func() {
			t := time.NewTicker(poll)
			defer t.Stop()
			for {
				ok, err := g.knows(ctx, gw, plaintext)
				if ok {
					out[i] = time.Since(start)
					return
				}
				select {
				case <-ctx.Done():
					errs[i] = fmt.Errorf("%s: not served within %s (last error: %v)", gw.pod, timeout, err)
					return
				case <-t.C:
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// metrics reads gw's Prometheus text and returns the named gauges.
func (g *gateways) metrics(ctx context.Context, gw *gateway, names ...string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, gw.mgmt+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, n := range names {
			if rest, ok := strings.CutPrefix(line, n+" "); ok {
				var v float64
				if _, err := fmt.Sscan(rest, &v); err == nil {
					out[n] = v
				}
			}
		}
	}
	return out, sc.Err()
}
