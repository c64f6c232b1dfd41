//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/agent/apply"
	"github.com/ipsecgw/provider-ipsec/internal/agent/metrics"
	"github.com/ipsecgw/provider-ipsec/internal/agent/nat"
	agentrun "github.com/ipsecgw/provider-ipsec/internal/agent/run"
	"github.com/ipsecgw/provider-ipsec/internal/agent/status"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
	"github.com/ipsecgw/provider-ipsec/test/tunnel"
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

// TestAgentRun runs the whole agent loop against a real tunnel through the
// floating-IP NAT: it loads the mounted configuration, publishes
// ESTABLISHED, applies a changed configuration live without dropping the
// tunnel, refuses an invalid one while the tunnel stays up, and after
// charon crashes connects again, re-applies everything and the tunnel
// comes back.
func TestAgentRun(t *testing.T) {
	tp := tunnel.Start(t, tunnel.Options{})
	peer := tp.Peers[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const psk = "agent-run-psk-0123456789abcdef"
	ns := "agent-run"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})

	sheet := tunnel.ClientSheet{
		Name: "to-provider", LocalAddress: peer.Address.String(), RemoteAddress: tunnel.FloatingIP.String(), PSK: psk,
		IKEProposals: []string{"aes256-sha256-modp2048"}, ESPProposals: []string{"aes256gcm16-modp2048"},
		Children: []tunnel.ClientChild{{Name: "tenant", LocalTS: []string{peer.Subnet.String()}, RemoteTS: []string{tunnel.TenantSubnet.String()}}},
	}
	if err := peer.LoadSheet(ctx, sheet); err != nil {
		t.Fatal(err)
	}
	spec := v1alpha1.GatewayParameters{
		Namespace: ns,
		Endpoint: v1alpha1.Endpoint{
			PrivateAddress: v1alpha1.IPv4(tunnel.PrivateAddress.String()), PrefixLength: int32(tunnel.PrivatePrefixLength),
			Gateway: v1alpha1.IPv4(tunnel.Router.String()), MACAddress: tunnel.MACAddress, LocalID: v1alpha1.IPv4(tunnel.FloatingIP.String()),
		},
		Mode: v1alpha1.ModeRouted,
		Tunnels: []v1alpha1.Tunnel{{
			Name: "branch-a", Peer: v1alpha1.Peer{Address: peer.Address.String()}, IKEVersion: 2,
			IKEProposals: []string{"aes256-sha256-modp2048"}, ESPProposals: []string{"aes256gcm16-modp2048"},
			StartAction:      "start",
			TrafficSelectors: []v1alpha1.TrafficSelector{{Local: v1alpha1.CIDR(tunnel.TenantSubnet.String()), Remote: v1alpha1.CIDR(peer.Subnet.String())}},
		}},
	}
	configDir, secretsDir := filepath.Join(t.TempDir(), "config"), filepath.Join(t.TempDir(), "secrets")
	for _, d := range []string{configDir, secretsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	publish := func(spec v1alpha1.GatewayParameters, edit func([]byte) []byte) {
		t.Helper()
		f, err := render.Render(render.Input{Spec: spec, PSKs: map[string][]byte{"branch-a": []byte(psk)}})
		if err != nil {
			t.Fatal(err)
		}
		conf := f.SwanctlConf
		if edit != nil {
			conf = edit(conf)
		}
		mount(t, configDir, map[string][]byte{workload.KeySwanctlConf: conf, workload.KeyNATRules: f.NATRules})
		mount(t, secretsDir, map[string][]byte{workload.KeySecrets: f.Secrets})
	}
	publish(spec, nil)

	m := metrics.New()
	agent := agentrun.New(agentrun.Options{
		ConfigDir: configDir, SecretsDir: secretsDir, ViciSocket: tp.Gateway.Socket(),
		Interval: 200 * time.Millisecond, Poll: time.Second,
		Validator: apply.CharonValidator{},
		NAT:       nat.New(nat.WithCommand("nsenter", "--net=/run/netns/"+tp.Gateway.NS, "nft")),
		Publisher: &status.Publisher{Client: kube, Namespace: ns, Name: "gw-status", MinInterval: 300 * time.Millisecond},
		Metrics:   m,
	})
	actx, acancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agent.Run(actx) }()
	t.Cleanup(func() {
		acancel()
		if err := <-done; err != nil {
			t.Errorf("agent.Run: %v", err)
		}
	})

	established := func(what string) v1alpha1.TunnelStatus {
		t.Helper()
		var last []v1alpha1.TunnelStatus
		var got v1alpha1.TunnelStatus
		eventually(t, 30*time.Second, what, func() error {
			cm := &corev1.ConfigMap{}
			if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gw-status"}, cm); err != nil {
				return err
			}
			last = nil
			if err := json.Unmarshal([]byte(cm.Data[workload.KeyTunnels]), &last); err != nil {
				return err
			}
			if len(last) != 1 || last[0].IKEState != "ESTABLISHED" || len(last[0].ChildSAs) != 1 || last[0].ChildSAs[0].State != "INSTALLED" {
				return fmt.Errorf("status %+v", last)
			}
			got = last[0]
			return nil
		})
		return got
	}
	start := time.Now()
	first := established("the agent loads the mounted configuration and publishes ESTABLISHED")
	t.Logf("agent: mounted configuration to ESTABLISHED in the status ConfigMap in %v", time.Since(start).Round(time.Millisecond))
	if !agent.Ready() {
		t.Error("the agent is not ready with its configuration loaded")
	}
	if out, err := tp.Exec(tp.Gateway.NS, "nft", "list", "table", "ip", render.NATTable); err != nil {
		t.Errorf("the agent did not load its NAT table into the gateway's namespace: %v\n%s", err, out)
	}
	if r, err := tp.Ping(peer.HostNS, tunnel.Service, 3, 5*time.Second); err != nil || r.Received != 3 {
		t.Errorf("ping client host → tenant service through the tunnel: %+v, %v", r, err)
	}

	// A changed configuration (DPD action) is applied live: the IKE SA stays.
	changed := spec
	changed.Tunnels = []v1alpha1.Tunnel{spec.Tunnels[0]}
	changed.Tunnels[0].DPD.Action = "clear"
	publish(changed, nil)
	eventually(t, 10*time.Second, "the changed configuration is applied", func() error {
		if got := reloads(t, m, metrics.ResultSuccess); got < 2 {
			return fmt.Errorf("%v successful reloads", got)
		}
		return nil
	})
	if again := established("the tunnel stays up across a live reload"); !again.EstablishedAt.Equal(first.EstablishedAt) {
		t.Errorf("a live reload re-established the IKE SA (established at %v, was %v)", again.EstablishedAt, first.EstablishedAt)
	}

	// An invalid configuration (written past the renderer) is refused and
	// the tunnel stays up.
	publish(changed, func(b []byte) []byte {
		return []byte(strings.Replace(string(b), "aes256-sha256-modp2048", "aes256-sha256-modp2047", 1))
	})
	eventually(t, 10*time.Second, "an invalid configuration is refused", func() error {
		if got := reloads(t, m, metrics.ResultFailure); got < 1 {
			return fmt.Errorf("%v failed reloads", got)
		}
		return nil
	})
	established("the tunnel stays up when an invalid configuration is refused")
	publish(changed, nil)

	// charon crashes: the agent connects to the new one, re-applies, and
	// the tunnel comes back.
	// The new charon knows nothing: an SA in it proves the agent
	// re-applied the configuration.
	tp.Gateway.Restart(t)
	start = time.Now()
	tp.Gateway.WaitSA(t, "branch-a", 30*time.Second, tunnel.Up())
	t.Logf("agent: charon restart to ESTABLISHED again in %v", time.Since(start).Round(time.Millisecond))
	established("the status shows the tunnel up after charon restarted")
	if !agent.Ready() {
		t.Error("the agent is not ready after re-applying to the restarted charon")
	}
}
