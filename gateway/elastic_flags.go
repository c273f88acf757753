package gateway

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/llmgw/gateway/peers"
	"github.com/llmgw/llmgw/gateway/source"
)

// elasticFlags are the --statefulset, --ledger-claim-template and
// --handoff-timeout flags of a gateway in a StatefulSet.
type elasticFlags struct {
	statefulSet   string
	claimTemplate string
	timeout       time.Duration
}

// discover makes the peer set follow the StatefulSet (pc.Roster) and fills
// cfg.Elastic; the token is added once it is read.
func (el elasticFlags) discover(cfg *Config, pc *peers.Config, kube *source.Kube, namespace string) error {
	if pc.Self == "" {
		var err error
		if pc.Self, err = os.Hostname(); err != nil {
			return fmt.Errorf("--pod-name: %w", err)
		}
	}
	if _, err := peers.Ordinal(pc.Self); err != nil {
		return fmt.Errorf("--pod-name: %w", err)
	}
	if el.statefulSet == "" {
		el.statefulSet = pc.Self[:strings.LastIndexByte(pc.Self, '-')]
	}
	if el.claimTemplate == "" {
		return fmt.Errorf("--ledger-claim-template must not be empty")
	}
	if el.timeout <= 0 {
		return fmt.Errorf("--handoff-timeout must be positive")
	}
	_, port, err := net.SplitHostPort(cfg.MgmtAddr)
	if err != nil {
		return fmt.Errorf("--peers-service needs --mgmt-addr host:port: %w", err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return fmt.Errorf("--mgmt-addr port: %w", err)
	}
	d, err := peers.NewDiscovery(peers.DiscoveryConfig{Client: kube.Client(), Namespace: namespace,
		StatefulSet: el.statefulSet, ClaimTemplate: el.claimTemplate, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	pc.Roster = d.Membership
	cfg.Elastic = &Elastic{Discovery: d, Self: pc.Self, Service: pc.Service, Port: p,
		Claim: peers.ClaimName(el.claimTemplate, pc.Self), Timeout: el.timeout}
	return nil
}

// readyFromDiscovery is the quota store's degraded divisor from the same
// discovery: the StatefulSet's ready replicas, 0 (keep the divisor) until
// the StatefulSet was read.
func readyFromDiscovery(d *peers.Discovery) func(context.Context) int {
	return func(context.Context) int {
		m := d.Membership()
		if !m.Known {
			return 0
		}
		return max(m.Ready, 1)
	}
}
