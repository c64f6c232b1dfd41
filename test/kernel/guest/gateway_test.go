//go:build kernel

package guest

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// agentStopTimeout bounds the agent's stop after SIGTERM (the pod's
// grace period is 30 s; the agent shuts its HTTP servers down within 5 s).
const agentStopTimeout = 20 * time.Second

// agentBinary is the gateway image's agent, what the pod's agent
// container runs (hack/images.sh).
const agentBinary = "/usr/local/bin/gateway-agent"

// imageConf is the gateway's strongswan.conf: the gateway image's own
// (/etc/strongswan.conf, which includes the image's data plane fragment,
// KernelXFRM: kernel-netlink, no kernel-libipsec) as the pod's charon reads
// it, with the VICI socket in the topology's directory (the pod's is in
// its run volume) and charon's log in a file beside it.
func imageConf(dir, socket string) string {
	return fmt.Sprintf(`include /etc/strongswan.conf
charon {
  plugins {
    vici {
      socket = unix://%s
    }
  }
  filelog {
    log {
      path = %s
      time_format = %%F %%T
      ike_name = yes
      flush_line = yes
      default = 1
      ike = 2
      knl = 2
    }
  }
}
`, socket, filepath.Join(dir, "charon.log"))
}

// start builds the runbook's world in the guest (test/topology), every
// charon with ESP in the kernel: the client sites' with kernel-netlink,
// the gateway's with the image's strongswan.conf.
func start(t *testing.T, peers int) *topology.Topology {
	t.Helper()
	return topology.Start(t, topology.Options{Peers: peers, Conf: topology.KernelConf, GatewayConf: imageConf})
}

// gatewaySpec returns a gateway at the topology's addresses (private
// address, router, MAC, the floating IP as its identity) with tunnels.
func gatewaySpec(mode v1alpha1.Mode, tunnels ...v1alpha1.Tunnel) v1alpha1.GatewayParameters {
	return v1alpha1.GatewayParameters{GatewayConfig: v1alpha1.GatewayConfig{
		Endpoint: v1alpha1.Endpoint{
			PrivateAddress: v1alpha1.IPv4(topology.PrivateAddress.String()), PrefixLength: int32(topology.PrivatePrefixLength),
			Gateway: v1alpha1.IPv4(topology.Router.String()), MACAddress: topology.MACAddress, LocalID: v1alpha1.IPv4(topology.FloatingIP.String()),
		},
		Mode:    mode,
		Tunnels: tunnels,
	}}
}

// Proposals of the guest's tunnels, the client sites' sheets alike.
var (
	ikeProposals = []string{"aes256-sha256-modp2048"}
	espProposals = []string{"aes256gcm16"}
)

// siteTunnel returns a tunnel of the gateway to peer, which the gateway
// initiates, carrying the pairs (local, remote).
func siteTunnel(name string, peer *topology.Peer, pairs ...[2]netip.Prefix) v1alpha1.Tunnel {
	tn := v1alpha1.Tunnel{
		Name: name, Peer: v1alpha1.Peer{Address: peer.Address.String()}, IKEVersion: 2,
		IKEProposals: ikeProposals, ESPProposals: espProposals, StartAction: "start", ChildSALayout: v1alpha1.ChildSAPerSubnetPair,
	}
	for _, p := range pairs {
		tn.TrafficSelectors = append(tn.TrafficSelectors, v1alpha1.TrafficSelector{Local: v1alpha1.CIDR(p[0].String()), Remote: v1alpha1.CIDR(p[1].String())})
	}
	return tn
}

// clientSheet returns peer's parameter sheet for its tunnel to the
// gateway, answering only, with children.
func clientSheet(peer *topology.Peer, psk []byte, children ...topology.ClientChild) topology.ClientSheet {
	return topology.ClientSheet{
		Name: "to-provider", LocalAddress: peer.Address.String(), RemoteAddress: topology.FloatingIP.String(), PSK: string(psk),
		IKEProposals: ikeProposals, ESPProposals: espProposals, Children: children,
	}
}

// loadSheet configures peer from s.
func loadSheet(t *testing.T, peer *topology.Peer, s topology.ClientSheet) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := peer.LoadSheet(ctx, s); err != nil {
		t.Fatal(err)
	}
}

// startAgent renders spec with psks (raw PSK by tunnel name) by
// internal/render, puts the files where the pod mounts its ConfigMap and
// Secret (writeAgentFiles), and runs the image's agent binary in the
// gateway's namespace against its charon, as the pod's agent container does
// (without a status ConfigMap: the guest has no API server), until t ends.
// It returns the directory of the files: writeAgentFiles there again is a
// configuration change, which the agent applies within its --interval.
func startAgent(t *testing.T, tp *topology.Topology, spec v1alpha1.GatewayParameters, psks map[string][]byte) string {
	t.Helper()
	return startAgentInput(t, tp, render.Input{Spec: spec, PSKs: psks})
}

// startAgentInput is startAgent with every input of the renderer, such
// as a certificate tunnel's material.
func startAgentInput(t *testing.T, tp *topology.Topology, in render.Input) string {
	t.Helper()
	dir := t.TempDir()
	config, secrets := writeAgentFiles(t, dir, in)
	log, err := os.Create(filepath.Join(dir, "agent.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := tp.Command(context.Background(), tp.Gateway.NS, agentBinary,
		"--"+contract.FlagConfigDir+"="+config, "--"+contract.FlagSecretsDir+"="+secrets,
		"--"+contract.FlagViciSocket+"="+tp.Gateway.Socket(), "--interval=200ms", "--poll=1s",
		"--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		stopped := make(chan error, 1)
		go func() { stopped <- cmd.Wait() }()
		var err error
		lines := 40
		select {
		case err = <-stopped:
		case <-time.After(agentStopTimeout):
			// Go's runtime writes every goroutine to the log and exits.
			_ = cmd.Process.Signal(syscall.SIGQUIT)
			err = fmt.Errorf("not stopped %v after SIGTERM, SIGQUIT: %w", agentStopTimeout, <-stopped)
			t.Error("the agent did not stop on SIGTERM; its goroutines are in its log")
			lines = 400
		}
		_ = log.Close()
		if t.Failed() || err != nil {
			data, _ := os.ReadFile(log.Name())
			t.Logf("agent (%v):\n%s", err, tailLines(string(data), lines))
		}
	})
	return dir
}

// writeAgentFiles renders in by internal/render into dir as
// the pod mounts them (config/: swanctl.conf, nat.nft and xfrm.json if
// any; secrets/: secrets.conf) and returns the two directories. Each file
// is replaced whole (written beside it, then renamed), as the kubelet
// swaps a mounted ConfigMap, so that the agent never reads half a file.
func writeAgentFiles(t *testing.T, dir string, in render.Input) (config, secrets string) {
	t.Helper()
	f, err := render.Render(in)
	if err != nil {
		t.Fatal(err)
	}
	config, secrets = filepath.Join(dir, "config"), filepath.Join(dir, "secrets")
	files := map[string][]byte{
		filepath.Join(config, contract.KeySwanctlConf): f.SwanctlConf, filepath.Join(config, contract.KeyNATRules): f.NATRules,
		filepath.Join(secrets, contract.KeySecrets): f.Secrets,
	}
	if f.XFRMInterfaces != nil {
		files[filepath.Join(config, contract.KeyXFRMInterfaces)] = f.XFRMInterfaces
	}
	for name, data := range files {
		if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name+".new", data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(name+".new", name); err != nil {
			t.Fatal(err)
		}
	}
	return config, secrets
}

// xfrmCounters matches the current lifetime counters of `ip -s xfrm
// state`: "<bytes>(bytes), <packets>(packets)".
var xfrmCounters = regexp.MustCompile(`(\d+)\(bytes\), (\d+)\(packets\)`)

// kernelSAs returns the packet counters of the kernel's SAs in namespace
// ns (`ip -s xfrm state`), one per SA, and the command's output.
func kernelSAs(t *testing.T, tp *topology.Topology, ns string) ([]int, string) {
	t.Helper()
	out := tp.MustExec(ns, "ip", "-s", "xfrm", "state")
	var packets []int
	for _, m := range xfrmCounters.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[2])
		packets = append(packets, n)
	}
	return packets, out
}

// kernelCarried fails t unless the kernel holds exactly want SAs in the
// gateway's namespace, each of which counted at least min packets:
// traffic went through the kernel's ESP, not through userspace.
func kernelCarried(t *testing.T, tp *topology.Topology, want, minPackets int) {
	t.Helper()
	packets, out := kernelSAs(t, tp, tp.Gateway.NS)
	if len(packets) != want {
		t.Errorf("the gateway's kernel holds %d SAs, want %d:\n%s", len(packets), want, out)
		return
	}
	for _, n := range packets {
		if n < minPackets {
			t.Errorf("a kernel SA of the gateway counted %d packets, want at least %d:\n%s", n, minPackets, out)
			return
		}
	}
	t.Logf("the gateway's kernel SAs counted %v packets", packets)
}

// ask connects from namespace ns over network to addr (a ServeWhoAmI
// listener) and fails t unless the listener saw the connection come from
// wantFrom.
func ask(t *testing.T, tp *topology.Topology, what, ns, network, addr string, wantFrom netip.Addr) {
	t.Helper()
	from, err := tp.AskWhoAmI(ns, network, addr, 5*time.Second)
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	if got, err := netip.ParseAddrPort(from); err != nil || got.Addr() != wantFrom {
		t.Errorf("%s: the listener saw the connection come from %s, want %s", what, from, wantFrom)
		return
	}
	t.Logf("%s: the listener saw %s", what, from)
}

// ping sends three echo requests from namespace ns to dst and fails t
// unless every reply comes back.
func ping(t *testing.T, tp *topology.Topology, what, ns string, dst netip.Addr) {
	t.Helper()
	r, err := tp.Ping(ns, dst, 3, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.Received != r.Sent {
		t.Errorf("ping %s (%s): %d of %d replies", what, dst, r.Received, r.Sent)
	}
}

// tailLines returns the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// linkPackets returns the received and sent packets of `ip -s link show`'s
// output.
func linkPackets(out string) (rx, tx int) {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 || i+1 == len(lines) {
			continue
		}
		n := strings.Fields(lines[i+1])
		if len(n) < 2 {
			continue
		}
		switch f[0] {
		case "RX:":
			rx, _ = strconv.Atoi(n[1])
		case "TX:":
			tx, _ = strconv.Atoi(n[1])
		}
	}
	return rx, tx
}
