//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/agent/metrics"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// mount writes files into dir the way the kubelet updates a ConfigMap or
// Secret volume: into a fresh timestamped directory, then one atomic
// rename of the ..data symlink, with each file a symlink through ..data.
func mount(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	ts := filepath.Join(dir, fmt.Sprintf("..%d", time.Now().UnixNano()))
	if err := os.MkdirAll(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(ts, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				t.Fatal(err)
			}
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

// reloads returns ipsec_config_reloads_total{result} of m.
func reloads(t *testing.T, m *metrics.Collector, result string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := reg.Register(m); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "ipsec_config_reloads_total" {
			continue
		}
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return mt.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// pfsSheet is peer's sheet with psk and its tenantChild, its ESP proposal
// with a DH group (PFS).
func pfsSheet(peer *topology.Peer, psk string) topology.ClientSheet {
	s := clientSheet(peer, psk, tenantChild(peer))
	s.ESPProposals = []string{"aes256gcm16-modp2048"}
	return s
}

// TestAgentRun runs the whole agent loop against a real tunnel through the
// floating-IP NAT: it loads the mounted configuration, publishes
// ESTABLISHED, applies a changed configuration live without dropping the
// tunnel, refuses an invalid one while the tunnel stays up, and after
// charon crashes connects again, re-applies everything and the tunnel
// comes back.
func TestAgentRun(t *testing.T) {
	tp := topology.Start(t, topology.Options{})
	peer := tp.Peers[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const psk = "agent-run-psk-0123456789abcdef"

	sheet := pfsSheet(peer, psk)
	if err := peer.LoadSheet(ctx, sheet); err != nil {
		t.Fatal(err)
	}
	spec := tunnelGateway("agent-run", v1alpha1.ModeRouted, v1alpha1.Tunnel{
		Name: "branch-a", Peer: v1alpha1.Peer{Address: peer.Address.String()}, IKEVersion: 2,
		IKEProposals: []string{"aes256-sha256-modp2048"}, ESPProposals: []string{"aes256gcm16-modp2048"},
		StartAction:      "start",
		TrafficSelectors: []v1alpha1.TrafficSelector{{Local: v1alpha1.CIDR(topology.TenantSubnet.String()), Remote: v1alpha1.CIDR(peer.Subnet.String())}},
	})
	start := time.Now()
	g := startAgent(t, tp, spec, map[string][]byte{"branch-a": []byte(psk)})
	child := render.ChildName("branch-a", topology.TenantSubnet, peer.Subnet)
	established := func(what string) v1alpha1.TunnelStatus {
		t.Helper()
		return g.waitTunnels(30*time.Second, what, up(map[string][]string{"branch-a": {child}}))["branch-a"]
	}
	first := established("the agent loads the mounted configuration and publishes ESTABLISHED")
	t.Logf("agent: mounted configuration to ESTABLISHED in the status ConfigMap in %v", time.Since(start).Round(time.Millisecond))
	if !g.agent.Ready() {
		t.Error("the agent is not ready with its configuration loaded")
	}
	if out, err := tp.Exec(tp.Gateway.NS, "nft", "list", "table", "ip", contract.NATTable); err != nil {
		t.Errorf("the agent did not load its NAT table into the gateway's namespace: %v\n%s", err, out)
	}
	ping(t, tp, "client host → tenant service through the tunnel", peer.HostNS, topology.Service)

	// A changed configuration (DPD action) is applied live: the IKE SA stays.
	changed := spec
	changed.Tunnels = []v1alpha1.Tunnel{spec.Tunnels[0]}
	changed.Tunnels[0].DPD.Action = "clear"
	g.publish(changed, nil)
	eventually(t, 10*time.Second, "the changed configuration is applied", func() error {
		if got := reloads(t, g.metrics, metrics.ResultSuccess); got < 2 {
			return fmt.Errorf("%v successful reloads", got)
		}
		return nil
	})
	if again := established("the tunnel stays up across a live reload"); !again.EstablishedAt.Equal(first.EstablishedAt) {
		t.Errorf("a live reload re-established the IKE SA (established at %v, was %v)", again.EstablishedAt, first.EstablishedAt)
	}

	// An invalid configuration (written past the renderer) is refused and
	// the tunnel stays up.
	g.publish(changed, func(b []byte) []byte {
		return []byte(strings.Replace(string(b), "aes256-sha256-modp2048", "aes256-sha256-modp2047", 1))
	})
	eventually(t, 10*time.Second, "an invalid configuration is refused", func() error {
		if got := reloads(t, g.metrics, metrics.ResultFailure); got < 1 {
			return fmt.Errorf("%v failed reloads", got)
		}
		return nil
	})
	established("the tunnel stays up when an invalid configuration is refused")
	g.publish(changed, nil)

	// charon crashes: the agent connects to the new one, re-applies, and
	// the tunnel comes back.
	// The new charon knows nothing: an SA in it proves the agent
	// re-applied the configuration.
	tp.Gateway.Restart(t)
	start = time.Now()
	tp.Gateway.WaitSA(t, "branch-a", 30*time.Second, topology.Up())
	t.Logf("agent: charon restart to ESTABLISHED again in %v", time.Since(start).Round(time.Millisecond))
	established("the status shows the tunnel up after charon restarted")
	if !g.agent.Ready() {
		t.Error("the agent is not ready after re-applying to the restarted charon")
	}
}
