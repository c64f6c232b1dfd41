//go:build kernel

package guest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// The benchmarks (issue 31's case 5) are the guest tests TestBench...: no
// group of the kernel tier runs them, hack/kernel-bench.sh does
// (KERNEL_RUN), because they take minutes of emulated CPU that prove
// nothing a tunnel test does not, and their figures are worth reading only
// with KVM or as ratios. They assert no time; each figure is a line that
// starts with benchPrefix.
const benchPrefix = "bench: "

// Figures of the benchmarks.
const (
	// streamTime is how long each TCP stream sends.
	streamTime = 5 * time.Second
	// benchPort is the stream's TCP port.
	benchPort = 5001
	// benchTunnels is how many tunnels TestBenchTunnelsUp brings up.
	benchTunnels = 100
	// benchUpTimeout bounds their bring-up: IKE's Diffie-Hellman of both
	// sides, four modp2048 operations per tunnel, under TCG (43 s at a
	// load average of 4).
	benchUpTimeout = 4 * time.Minute
)

// TestBenchThroughput measures one TCP stream of streamTime in the same
// guest three ways and logs the rates and their ratios: through a tunnel
// on the kernel's data plane (the client host to the tenant service, both
// ends with ESP in the kernel), with no tunnel on the same links (the client
// site to the gateway through the router's floating IP NAT: one veth hop
// fewer at each end) and through a tunnel on libipsec, charon's userspace
// ESP (both ends with kernel-libipsec, the gateway with data plane
// Libipsec's rendered strongswan.conf fragment, as the lab's other tiers
// run them).
func TestBenchThroughput(t *testing.T) {
	rates := map[string]float64{}
	t.Run("kernel", func(t *testing.T) {
		tp := start(t, 1)
		p0 := tp.Peers[0]
		upStream(t, tp, v1alpha1.DataPlaneKernelXFRM)
		rates["kernel"] = streamTCP(t, tp, p0.HostNS, tp.Gateway.ServiceNS, topology.Service, topology.Service)
		kernelCarried(t, tp, 2, 100)
		rates["none"] = streamTCP(t, tp, p0.NS, tp.Gateway.NS, topology.PrivateAddress, topology.FloatingIP)
	})
	t.Run("libipsec", func(t *testing.T) {
		if out, err := exec.Command("modprobe", "tun").CombinedOutput(); err != nil {
			t.Fatalf("modprobe tun (kernel-libipsec's TUN device): %v: %s", err, out)
		}
		// The strongswan.conf fragment depends on the data plane alone.
		spec := gatewaySpec(v1alpha1.ModeRouted)
		spec.TenantSubnets = []v1alpha1.CIDR{v1alpha1.CIDR(topology.TenantSubnet.String())}
		spec.DataPlane = v1alpha1.DataPlaneLibipsec
		f, err := render.Render(render.Input{Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		// The pod's charon reads the fragment the Deployment mounts, which
		// the image's strongswan.conf includes last.
		gwConf := func(dir, socket string) string { return imageConf(dir, socket) + string(f.StrongSwanConf) }
		tp := topology.Start(t, topology.Options{Peers: 1, Conf: topology.NetworkConf, GatewayConf: gwConf})
		p0 := tp.Peers[0]
		upStream(t, tp, v1alpha1.DataPlaneLibipsec)
		if _, states := kernelSAs(t, tp, tp.Gateway.NS); len(states) != 0 {
			t.Errorf("the gateway's kernel holds SAs with data plane Libipsec:\n%s", states)
		}
		rates["libipsec"] = streamTCP(t, tp, p0.HostNS, tp.Gateway.ServiceNS, topology.Service, topology.Service)
	})
	if rates["none"] > 0 && rates["kernel"] > 0 && rates["libipsec"] > 0 {
		t.Logf("%sone TCP stream, Mbit/s: no tunnel %.1f, kernel ESP %.1f, libipsec %.1f; kernel/none %.3f, libipsec/none %.3f, libipsec/kernel %.2f",
			benchPrefix, rates["none"], rates["kernel"], rates["libipsec"],
			rates["kernel"]/rates["none"], rates["libipsec"]/rates["none"], rates["libipsec"]/rates["kernel"])
	}
}

// upStream brings up, by the agent with the rendered configuration of data
// plane dp, a mode routed gateway's tunnel to the topology's client site
// between its subnet and the tenant subnet.
func upStream(t *testing.T, tp *topology.Topology, dp v1alpha1.DataPlane) {
	t.Helper()
	p0 := tp.Peers[0]
	psk := []byte("kernel-bench-psk-0123456789")
	loadSheet(t, p0, clientSheet(p0, psk, topology.ClientChild{Name: "tenant", LocalTS: []string{p0.Subnet.String()}, RemoteTS: []string{topology.TenantSubnet.String()}}))
	tn := siteTunnel("bench", p0, [2]netip.Prefix{topology.TenantSubnet, p0.Subnet})
	spec := gatewaySpec(v1alpha1.ModeRouted, tn)
	spec.TenantSubnets = []v1alpha1.CIDR{v1alpha1.CIDR(topology.TenantSubnet.String())}
	spec.DataPlane = dp
	startAgent(t, tp, spec, map[string][]byte{tn.Name: psk})
	tp.Gateway.WaitSA(t, tn.Name, upTimeout, topology.Up(render.ChildName(tn.Name, topology.TenantSubnet, p0.Subnet)))
	ping(t, tp, "client host → tenant service", p0.HostNS, topology.Service)
}

// streamTCP listens in namespace to at listen:benchPort, connects from
// namespace from to dial:benchPort, sends for streamTime and returns the
// rate the receiver saw, in Mbit/s (0 after failing t).
func streamTCP(t *testing.T, tp *topology.Topology, from, to string, listen, dial netip.Addr) float64 {
	t.Helper()
	var ln net.Listener
	if err := tp.Do(to, func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(listen, benchPort).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close() //nolint:errcheck // the stream is over
	type result struct {
		n    int64
		took time.Duration
		err  error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close() //nolint:errcheck // read to the end
		began := time.Now()
		n, err := io.Copy(io.Discard, c)
		got <- result{n, time.Since(began), err}
	}()
	var c net.Conn
	if err := tp.Do(from, func() (err error) {
		c, err = net.DialTimeout("tcp4", netip.AddrPortFrom(dial, benchPort).String(), 10*time.Second)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	for end := time.Now().Add(streamTime); time.Now().Before(end); {
		if _, err := c.Write(buf); err != nil {
			t.Fatalf("TCP stream from %s to %s: %v", from, dial, err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("TCP stream from %s to %s: the receiver: %v", from, dial, r.err)
		}
		rate := float64(r.n) * 8 / r.took.Seconds() / 1e6
		t.Logf("%sTCP stream %s → %s: %.1f MB in %v, %.1f Mbit/s", benchPrefix, from, dial, float64(r.n)/1e6, r.took.Round(time.Millisecond), rate)
		return rate
	case <-time.After(time.Minute):
		t.Fatalf("TCP stream from %s to %s: the receiver saw no end", from, dial)
	}
	return 0
}

// TestBenchTunnelsUp measures how long one gateway takes to bring up
// benchTunnels tunnels to as many peer identities (one client site's
// charon answering each as a connection of its own, a FQDN identity and a
// remote subnet each), all initiated by the gateway: from the agent's start
// (its validation, the load of every connection) and again after the
// gateway's charon was killed and started anew (the agent loads the
// configuration into it again; the site still holds the old IKE SAs, which
// the new ones replace: INITIAL_CONTACT), as a failover of a busy gateway
// needs.
func TestBenchTunnelsUp(t *testing.T) {
	// The site's charon stands in for 100 peers but answers from one
	// address: past block_threshold (5) half-open IKE SAs from one address
	// it drops IKE_SA_INITs, past cookie_threshold (10) it asks for cookies
	// (strongswan.conf), which 100 peers' charons each would not. Seen:
	// 77 of 100 up after 4 min, the gateway retransmitting into the block.
	siteConf := func(dir, socket string) string {
		return topology.KernelConf(dir, socket) + "charon {\n  block_threshold = 1000\n  cookie_threshold = 1000\n}\n"
	}
	tp := topology.Start(t, topology.Options{Peers: 1, Conf: siteConf, GatewayConf: imageConf})
	p0 := tp.Peers[0]
	var conf []byte
	var names []string
	var tunnels []v1alpha1.Tunnel
	psks := map[string][]byte{}
	for i := range benchTunnels {
		name := fmt.Sprintf("peer-%03d", i)
		subnet := netip.PrefixFrom(netip.AddrFrom4([4]byte{172, 16, byte(i), 0}), 24)
		psks[name] = fmt.Appendf(nil, "kernel-bench-%s-psk-0123456789", name)
		s := clientSheet(p0, psks[name], topology.ClientChild{Name: "tenant", LocalTS: []string{subnet.String()}, RemoteTS: []string{topology.TenantSubnet.String()}})
		s.Name, s.LocalID = name, name+".example"
		conf = append(conf, s.SwanctlConf()...)
		tn := siteTunnel(name, p0, [2]netip.Prefix{topology.TenantSubnet, subnet})
		tn.Peer.ID = s.LocalID
		tunnels, names = append(tunnels, tn), append(names, name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p0.LoadFile(ctx, conf, names...); err != nil {
		t.Fatal(err)
	}
	spec := gatewaySpec(v1alpha1.ModeRouted, tunnels...)
	spec.TenantSubnets = []v1alpha1.CIDR{v1alpha1.CIDR(topology.TenantSubnet.String())}

	began := time.Now()
	startAgent(t, tp, spec, psks)
	allUp(t, tp, benchUpTimeout)
	t.Logf("%s%d tunnels from the agent's start to every CHILD_SA INSTALLED: %v", benchPrefix, benchTunnels, time.Since(began).Round(time.Millisecond))

	tp.Gateway.Restart(t)
	began = time.Now()
	allUp(t, tp, benchUpTimeout)
	t.Logf("%s%d tunnels from the gateway charon's restart to every CHILD_SA INSTALLED: %v", benchPrefix, benchTunnels, time.Since(began).Round(time.Millisecond))
}

// allUp waits up to timeout until the gateway holds benchTunnels
// ESTABLISHED IKE SAs of different connections, each with its CHILD_SA
// INSTALLED, and fails t with how many it last saw.
func allUp(t *testing.T, tp *topology.Topology, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	n := 0 // as the last answer counted them
	for {
		sas, err := tp.Gateway.ListSAs(ctx)
		if err == nil {
			up := map[string]bool{}
			for _, sa := range sas {
				for _, c := range sa.ChildSAs {
					up[sa.Name] = up[sa.Name] || (sa.State == "ESTABLISHED" && c.State == "INSTALLED" && strings.HasPrefix(sa.Name, "peer-"))
				}
			}
			n = 0
			for _, ok := range up {
				if ok {
					n++
				}
			}
		}
		if n == benchTunnels {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d tunnels up within %v (the last list-sas: %v)", n, benchTunnels, timeout, err)
		case <-time.After(time.Second):
		}
	}
}
