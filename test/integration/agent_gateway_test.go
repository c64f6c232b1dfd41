//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/agent/metrics"
	"github.com/ipsecgw/provider-ipsec/internal/agent/nat"
	agentrun "github.com/ipsecgw/provider-ipsec/internal/agent/run"
	"github.com/ipsecgw/provider-ipsec/internal/agent/status"
	"github.com/ipsecgw/provider-ipsec/internal/agent/watchdog"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// statusName is the name of the status ConfigMap the test agents publish.
const statusName = "gw-status"

// nsSeq numbers the kube namespaces of tunnelGateway: envtest never
// finishes deleting a namespace, so a repeated test (-count) needs a new one.
var nsSeq atomic.Int32

// tunnelGateway returns the spec of a gateway at the topology's addresses
// (private address, router, MAC, the floating IP as its identity) in a new
// kube namespace named after ns, with tunnels.
func tunnelGateway(ns string, mode v1alpha1.Mode, tunnels ...v1alpha1.Tunnel) v1alpha1.GatewayParameters {
	return v1alpha1.GatewayParameters{
		Namespace: fmt.Sprintf("%s-%d", ns, nsSeq.Add(1)),
		GatewayConfig: v1alpha1.GatewayConfig{
			Endpoint: v1alpha1.Endpoint{
				PrivateAddress: v1alpha1.IPv4(topology.PrivateAddress.String()), PrefixLength: int32(topology.PrivatePrefixLength),
				Gateway: v1alpha1.IPv4(topology.Router.String()), MACAddress: topology.MACAddress, LocalID: v1alpha1.IPv4(topology.FloatingIP.String()),
			},
			Mode:    mode,
			Tunnels: tunnels,
		},
	}
}

// An agentGateway is the gateway agent's whole loop (internal/agent/run)
// running in the test process against the topology's gateway charon, with
// its configuration rendered by internal/render and mounted as the kubelet
// mounts the ConfigMap and Secret, the real validator, NAT rules loaded
// into the gateway's namespace, and its status published to ConfigMap
// statusName in kube namespace ns.
type agentGateway struct {
	t    *testing.T
	ns   string
	psks map[string][]byte
	// certs are the certificate tunnels' material (render.Input.Certs).
	certs   map[string]*render.TunnelCert
	metrics *metrics.Collector
	agent   *agentrun.Agent

	configDir, secretsDir string

	mu  sync.Mutex
	log bytes.Buffer
}

// startAgent creates the kube namespace spec.Namespace, mounts spec rendered
// with psks (raw PSK by tunnel name) and runs the agent until t ends, with
// the agent's defaults (re-initiating after watchdog.DefaultAfter) unless
// opts change its options.
func startAgent(t *testing.T, tp *topology.Topology, spec v1alpha1.GatewayParameters, psks map[string][]byte, opts ...func(*agentrun.Options)) *agentGateway {
	t.Helper()
	return startAgentEdited(t, tp, spec, psks, nil, opts...)
}

// startAgentEdited is startAgent with the first swanctl.conf mounted passed
// through edit (when not nil), for configurations the renderer would not
// write.
func startAgentEdited(t *testing.T, tp *topology.Topology, spec v1alpha1.GatewayParameters, psks map[string][]byte, edit func([]byte) []byte, opts ...func(*agentrun.Options)) *agentGateway {
	t.Helper()
	return startAgentCerts(t, tp, spec, psks, nil, edit, opts...)
}

// startAgentCerts is startAgentEdited with the certificate tunnels'
// material certs (by tunnel name).
func startAgentCerts(t *testing.T, tp *topology.Topology, spec v1alpha1.GatewayParameters, psks map[string][]byte, certs map[string]*render.TunnelCert, edit func([]byte) []byte, opts ...func(*agentrun.Options)) *agentGateway {
	t.Helper()
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: spec.Namespace}})
	g := &agentGateway{t: t, ns: spec.Namespace, psks: psks, certs: certs, metrics: metrics.New(),
		configDir: filepath.Join(t.TempDir(), "config"), secretsDir: filepath.Join(t.TempDir(), "secrets")}
	for _, d := range []string{g.configDir, g.secretsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	g.publish(spec, edit)
	log := zap.New(zap.WriteTo(g), zap.UseDevMode(true))
	o := agentrun.Options{
		ConfigDir: g.configDir, SecretsDir: g.secretsDir, ViciSocket: tp.Gateway.Socket(),
		Interval: 200 * time.Millisecond, Poll: time.Second,
		Validator:       gatewayValidator(t, tp),
		NAT:             nat.New(nat.WithCommand("nsenter", "--net=/run/netns/"+tp.Gateway.NS, "nft")),
		Publisher:       &status.Publisher{Client: kube, Namespace: spec.Namespace, Name: statusName, MinInterval: 300 * time.Millisecond},
		Metrics:         g.metrics,
		ReinitiateAfter: watchdog.DefaultAfter,
		Log:             logging.NewLogrLogger(log),
	}
	for _, opt := range opts {
		opt(&o)
	}
	g.agent = agentrun.New(o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.agent.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent.Run: %v", err)
		}
	})
	return g
}

// publish renders spec with the agent's PSKs and mounts the files, the
// swanctl.conf passed through edit when edit is not nil.
func (g *agentGateway) publish(spec v1alpha1.GatewayParameters, edit func([]byte) []byte) {
	g.t.Helper()
	f, err := render.Render(render.Input{Spec: spec, PSKs: g.psks, Certs: g.certs})
	if err != nil {
		g.t.Fatal(err)
	}
	conf := f.SwanctlConf
	if edit != nil {
		if conf = edit(conf); bytes.Equal(conf, f.SwanctlConf) {
			g.t.Fatalf("the edit changed nothing in:\n%s", f.SwanctlConf)
		}
	}
	mount(g.t, g.configDir, map[string][]byte{workload.KeySwanctlConf: conf, workload.KeyNATRules: f.NATRules})
	mount(g.t, g.secretsDir, map[string][]byte{workload.KeySecrets: f.Secrets})
}

// statusData returns the published status ConfigMap's tunnels.json.
func (g *agentGateway) statusData() (string, error) {
	cm := &corev1.ConfigMap{}
	if err := kube.Get(context.Background(), client.ObjectKey{Namespace: g.ns, Name: statusName}, cm); err != nil {
		return "", err
	}
	return cm.Data[workload.KeyTunnels], nil
}

// waitTunnels waits up to timeout until the published status satisfies ok,
// which returns why not, and returns it by tunnel name.
func (g *agentGateway) waitTunnels(timeout time.Duration, what string, ok func(map[string]v1alpha1.TunnelStatus) error) map[string]v1alpha1.TunnelStatus {
	g.t.Helper()
	var got map[string]v1alpha1.TunnelStatus
	eventually(g.t, timeout, what, func() error {
		data, err := g.statusData()
		if err != nil {
			return err
		}
		var ts []v1alpha1.TunnelStatus
		if err := json.Unmarshal([]byte(data), &ts); err != nil {
			return err
		}
		got = map[string]v1alpha1.TunnelStatus{}
		for _, s := range ts {
			got[s.Name] = s
		}
		if err := ok(got); err != nil {
			return fmt.Errorf("%w; status %+v", err, ts)
		}
		return nil
	})
	return got
}

// up says why the named tunnels are not all ESTABLISHED with exactly the
// named CHILD_SAs, each INSTALLED, and reported up, or nil when they are.
func up(want map[string][]string) func(map[string]v1alpha1.TunnelStatus) error {
	return func(got map[string]v1alpha1.TunnelStatus) error {
		for name, children := range want {
			s := got[name]
			if s.IKEState != v1alpha1.IKEStateEstablished {
				return fmt.Errorf("tunnel %s is %q", name, s.IKEState)
			}
			installed := map[string]bool{}
			for _, c := range s.ChildSAs {
				installed[c.Name] = installed[c.Name] || c.State == "INSTALLED"
			}
			for _, c := range children {
				if !installed[c] {
					return fmt.Errorf("tunnel %s has no INSTALLED CHILD_SA %s", name, c)
				}
			}
			if len(installed) != len(children) {
				return fmt.Errorf("tunnel %s has CHILD_SAs %v, want %v", name, installed, children)
			}
			if !s.Up {
				return fmt.Errorf("tunnel %s has all its CHILD_SAs INSTALLED but is not reported up", name)
			}
		}
		return nil
	}
}

// metricsText returns every metric the agent exports, as text.
func metricsText(t *testing.T, g *agentGateway) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(g.metrics)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(families)
}

// Write takes the agent's log output.
func (g *agentGateway) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.log.Write(p)
}

// logged returns what the agent logged so far.
func (g *agentGateway) logged() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.log.String()
}

// ping sends three echo requests from namespace ns to dst through the
// topology and fails t unless every reply comes back.
func ping(t *testing.T, tp *topology.Topology, what, ns string, dst netip.Addr) {
	t.Helper()
	r, err := tp.Ping(ns, dst, 3, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.Received != r.Sent {
		t.Errorf("ping %s (%s): %d of %d replies", what, dst, r.Received, r.Sent)
	}
}

// noSecret fails t if any of the PSKs, raw or hex-encoded as in
// secrets.conf, occurs in what (named where).
func noSecret(t *testing.T, where, what string, psks map[string][]byte) {
	t.Helper()
	for name, psk := range psks {
		if strings.Contains(what, string(psk)) || strings.Contains(what, fmt.Sprintf("%x", psk)) {
			t.Errorf("the PSK of tunnel %s occurs in %s", name, where)
		}
	}
}
