//go:build integration

package integration

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/strongswan/govici/vici"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/cluster/openstack/vif"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// tunnelTimeout bounds every wait for a tunnel: with the harness'
// retransmission settings a failed exchange gives up within about 3 s.
const tunnelTimeout = 15 * time.Second

// TestTunnelThroughFloatingIP brings a real tunnel up between a gateway
// configured by the project's renderer and a client site configured from
// its own parameter sheet, through a Neutron floating IP that the real L3
// agent's qrouter NATs: the gateway is a VM on a port of the agents' tenant
// network (its security group and port security enforced by the
// linuxbridge agent), binds the port's fixed IP and identifies itself with
// the floating IP, so IKE runs over NAT-T. A ping from the client host
// must reach the tenant service and come back through the tunnel.
func TestTunnelThroughFloatingIP(t *testing.T) {
	e, h := startAgents(t)
	topology.Need(t, "ip", "nsenter", "unshare")
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("/dev/net/tun is missing: kernel-libipsec needs a TUN device")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sc := adminNeutron(t, e)
	id := fmt.Sprint(os.Getpid())
	project := e.Fixtures.Project.ID
	tp := startUplinkTopology(t, h, fmt.Sprintf("ipf%d-", os.Getpid()), 1)
	peer := tp.Peers[0]

	// The gateway's port, in a security group admitting IKE, NAT-T and
	// ESP, as the provider's SecurityGroup does.
	sg := securityGroup(t, sc, "tunnel-gw-"+id, project,
		rules.CreateOpts{Protocol: rules.ProtocolUDP, PortRangeMin: 500, PortRangeMax: 500},
		rules.CreateOpts{Protocol: rules.ProtocolUDP, PortRangeMin: 4500, PortRangeMax: 4500},
		rules.CreateOpts{Protocol: rules.ProtocolESP})
	port, err := ports.Create(ctx, sc, ports.CreateOpts{Name: "tunnel-gw-" + id, NetworkID: e.Fixtures.TenantNet.ID,
		ProjectID: project, SecurityGroups: &[]string{sg.ID}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ports.Delete(context.Background(), sc, port.ID).ExtractErr() })
	gwNS, err := tp.AddNamespace("gw")
	if err != nil {
		t.Fatal(err)
	}
	plugVM(t, sc, h, vif.Instance{ID: string(uuid.NewUUID()), Namespace: gwNS}, port.ID, "net1")
	// The tenant service behind the gateway, as topology.Start has it.
	svcNS, err := tp.AddNamespace("svc")
	if err != nil {
		t.Fatal(err)
	}
	tenantAddr := netip.PrefixFrom(topology.TenantAddress, topology.TenantSubnet.Bits()).String()
	serviceAddr := netip.PrefixFrom(topology.Service, topology.TenantSubnet.Bits()).String()
	for _, c := range [][]string{
		{"ip", "-n", gwNS, "link", "add", topology.TenantInterface, "type", "veth", "peer", "name", "eth0", "netns", svcNS},
		{"ip", "-n", gwNS, "addr", "add", tenantAddr, "dev", topology.TenantInterface},
		{"ip", "-n", gwNS, "link", "set", topology.TenantInterface, "up"},
		{"ip", "-n", svcNS, "addr", "add", serviceAddr, "dev", "eth0"},
		{"ip", "-n", svcNS, "link", "set", "eth0", "up"},
		{"ip", "-n", svcNS, "route", "add", "default", "via", topology.TenantAddress.String()},
	} {
		mustRun(t, c...)
	}
	fip, err := floatingips.Create(ctx, sc, floatingips.CreateOpts{FloatingNetworkID: e.Fixtures.ExtNet.ID,
		ProjectID: project, PortID: port.ID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = floatingips.Delete(context.Background(), sc, fip.ID).ExtractErr() })
	private, public := port.FixedIPs[0].IPAddress, fip.FloatingIP
	// The gateway initiates once its configuration is loaded: only after
	// the qrouter NATs the floating IP can its IKE get out as it.
	dnat := "-d " + public + "/32 -j DNAT --to-destination " + private + "\n"
	if !settles(true, func() bool {
		out, _ := h.RouterCommand(ctx, e.Fixtures.Router.ID, "iptables-save", "-t", "nat").Output()
		return strings.Contains(string(out), dnat)
	}) {
		t.Fatalf("the qrouter does not DNAT %s to %s after 30 s", public, private)
	}
	reaches := func() bool {
		r, err := tp.Ping(gwNS, peer.Address, 1, time.Second)
		return err == nil && r.Received > 0
	}
	// Under load the L3 agent finishes a router's update many seconds
	// after its DNAT rule appears (13-27 s measured, docs/measurements.md).
	if !settlesWithin(time.Minute, true, reaches) {
		t.Fatalf("the gateway does not reach the client site %s through the qrouter after 60 s; the qrouter:\n%s",
			peer.Address, routerState(ctx, h, e.Fixtures.Router.ID, public))
	}
	gw := &topology.Charon{NS: gwNS, Dir: filepath.Join(tp.Dir, "gw")}
	for _, c := range []*topology.Charon{gw, peer.Charon} {
		if err := tp.StartCharon(c); err != nil {
			t.Fatal(err)
		}
	}
	const psk = "tunnel-test-psk-0123456789abcdef"

	// The client site, as its administrator configures it from the sheet
	// the provider sent: it answers and waits for the gateway to initiate.
	sheet := topology.ClientSheet{
		Name:          "to-provider",
		LocalAddress:  peer.Address.String(),
		RemoteAddress: public,
		PSK:           psk,
		IKEProposals:  []string{"aes256-sha256-modp2048"},
		ESPProposals:  []string{"aes256gcm16-modp2048"},
		Children: []topology.ClientChild{{
			Name:     "tenant",
			LocalTS:  []string{peer.Subnet.String()},
			RemoteTS: []string{topology.TenantSubnet.String()},
		}},
	}
	if err := peer.LoadSheet(ctx, sheet); err != nil {
		t.Fatal(err)
	}

	spec := v1alpha1.GatewayParameters{
		Namespace: "tenant-a",
		GatewayConfig: v1alpha1.GatewayConfig{
			Endpoint: v1alpha1.Endpoint{
				PrivateAddress: v1alpha1.IPv4(private),
				PrefixLength:   int32(topology.PrivatePrefixLength),
				Gateway:        v1alpha1.IPv4(topology.Router.String()),
				MACAddress:     port.MACAddress,
				LocalID:        v1alpha1.IPv4(public),
			},
			Mode:          v1alpha1.ModeRouted,
			TenantSubnets: []v1alpha1.CIDR{v1alpha1.CIDR(topology.TenantSubnet.String())},
			Tunnels: []v1alpha1.Tunnel{{
				Name:         "branch-a",
				Peer:         v1alpha1.Peer{Address: peer.Address.String()},
				IKEVersion:   2,
				IKEProposals: []string{"aes256-sha256-modp2048"},
				ESPProposals: []string{"aes256gcm16-modp2048"},
				StartAction:  "start",
				TrafficSelectors: []v1alpha1.TrafficSelector{{
					Local:  v1alpha1.CIDR(topology.TenantSubnet.String()),
					Remote: v1alpha1.CIDR(peer.Subnet.String()),
				}},
			}},
		}}
	files, err := render.Render(render.Input{Spec: spec, PSKs: map[string][]byte{"branch-a": []byte(psk)}})
	if err != nil {
		t.Fatal(err)
	}

	events := gw.Events(t, "ike-updown", "child-updown")
	start := time.Now()
	if err := gw.LoadConfig(ctx, files.SwanctlConf, files.Secrets); err != nil {
		t.Fatal(err)
	}
	loaded := time.Since(start)
	ikeUp, childUp := waitUp(t, events, "branch-a", start, tunnelTimeout)
	t.Logf("config loaded over VICI in %v; IKE SA ESTABLISHED %v and CHILD_SA INSTALLED %v after the load started",
		loaded.Round(time.Millisecond), ikeUp.Round(time.Millisecond), childUp.Round(time.Millisecond))

	childName := render.ChildName("branch-a", topology.TenantSubnet, peer.Subnet)
	sa := gw.WaitSA(t, "branch-a", tunnelTimeout, topology.Up(childName))
	// charon also reports nat-remote=yes here, although only the gateway
	// is behind the NAT: not asserted.
	type ends struct {
		LocalHost, LocalID, RemoteHost, RemoteID, NATLocal string
	}
	want := ends{
		LocalHost: private, LocalID: public,
		RemoteHost: peer.Address.String(), RemoteID: peer.Address.String(),
		NATLocal: "yes",
	}
	got := ends{sa.LocalHost, sa.LocalID, sa.RemoteHost, sa.RemoteID, sa.NATLocal}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("gateway's IKE SA: -want, +got:\n%s", diff)
	}
	child, _ := sa.Child(childName)
	if child.Encap != "yes" {
		t.Errorf("gateway's CHILD_SA is not UDP-encapsulated (encap=%q): NAT-T was not used", child.Encap)
	}
	wantTS := [2][]string{{topology.TenantSubnet.String()}, {peer.Subnet.String()}}
	if diff := cmp.Diff(wantTS, [2][]string{child.LocalTS, child.RemoteTS}); diff != "" {
		t.Errorf("gateway's CHILD_SA traffic selectors [local, remote]: -want, +got:\n%s", diff)
	}
	// The client sees the floating IP, behind a NAT on the other side.
	ps := peer.WaitSA(t, "to-provider", tunnelTimeout, topology.Up("tenant"))
	t.Logf("gateway: nat-local=%q nat-remote=%q; peer: nat-local=%q nat-remote=%q, the gateway seen from port %s (the qrouter's SNAT)",
		sa.NATLocal, sa.NATRemote, ps.NATLocal, ps.NATRemote, ps.RemotePort)
	if ps.RemoteHost != public || ps.NATRemote != "yes" {
		t.Errorf("peer's IKE SA: remote-host %s nat-remote %q, want %s and yes", ps.RemoteHost, ps.NATRemote, public)
	}

	// Client host → tenant service and back, then the other way round.
	for _, p := range []struct {
		from, to string
		res      func() (topology.PingResult, error)
	}{
		{from: "client host", to: "tenant service", res: func() (topology.PingResult, error) {
			return tp.Ping(peer.HostNS, topology.Service, 3, 2*time.Second)
		}},
		{from: "tenant service", to: "client host", res: func() (topology.PingResult, error) {
			return tp.Ping(svcNS, peer.Host, 3, 2*time.Second)
		}},
	} {
		r, err := p.res()
		if err != nil {
			t.Fatal(err)
		}
		if r.Received == 0 {
			t.Errorf("ping from the %s to the %s: %d sent, none came back", p.from, p.to, r.Sent)
			continue
		}
		t.Logf("ping from the %s to the %s: %d/%d back, RTTs %v", p.from, p.to, r.Received, r.Sent, r.RTTs)
	}

	// The pings went through the gateway's CHILD_SA: its counters show them.
	sa = gw.WaitSA(t, "branch-a", tunnelTimeout, topology.Up(childName))
	child, _ = sa.Child(childName)
	in, _ := strconv.Atoi(child.PacketsIn)
	out, _ := strconv.Atoi(child.PacketsOut)
	if in < 2 || out < 2 {
		t.Errorf("gateway's CHILD_SA counted %d packets in and %d out, want at least 2 each (one echo each way, and its reply)", in, out)
	}
}

// waitUp waits for charon's ike-updown and child-updown events with up=yes
// for connection conn and returns when each arrived, measured from start.
func waitUp(t *testing.T, events <-chan vici.Event, conn string, start time.Time, timeout time.Duration) (ike, child time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for ike == 0 || child == 0 {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("charon closed the event session")
			}
			if ev.Message.Get("up") != "yes" || ev.Message.Get(conn) == nil {
				continue
			}
			switch ev.Name {
			case "ike-updown":
				ike = ev.Timestamp.Sub(start)
			case "child-updown":
				child = ev.Timestamp.Sub(start)
			}
		case <-deadline:
			t.Fatalf("%s not up within %v (IKE up after %v, CHILD up after %v; 0 = not yet)", conn, timeout, ike, child)
		}
	}
	return ike, child
}

// TestTunnelHarness checks what other real-tunnel tests rely on from the
// harness: several client sites each reachable from the gateway through the
// floating-IP NAT, and a charon that can be killed and restarted.
func TestTunnelHarness(t *testing.T) {
	tp := topology.Start(t, topology.Options{Peers: 2})
	for i, p := range tp.Peers {
		r, err := tp.Ping(tp.Gateway.NS, p.Address, 2, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if r.Received == 0 {
			t.Errorf("peer %d at %s does not answer the gateway through the NAT", i, p.Address)
		}
		if r, _ := tp.Ping(p.NS, p.Host, 1, 2*time.Second); r.Received == 0 {
			t.Errorf("peer %d does not reach its client host %s", i, p.Host)
		}
	}
	if r, _ := tp.Ping(tp.Gateway.NS, topology.Service, 1, 2*time.Second); r.Received == 0 {
		t.Errorf("the gateway does not reach the tenant service %s", topology.Service)
	}

	events := tp.Gateway.Events(t, "ike-updown")
	before := tp.Gateway.Pid()
	tp.Gateway.Restart(t)
	if tp.Gateway.Pid() == before {
		t.Errorf("charon's pid is still %d after Restart", before)
	}
	select {
	case _, ok := <-events:
		if ok {
			t.Error("an event arrived from the killed charon")
		}
	case <-time.After(5 * time.Second):
		t.Error("the event channel of the killed charon is still open after 5s")
	}
	if _, err := tp.Gateway.Call(context.Background(), "version", nil); err != nil {
		t.Errorf("the restarted charon does not answer: %v", err)
	}
	tp.Peers[1].Kill()
	if tp.Peers[1].Pid() != 0 {
		t.Error("a killed charon still has a pid")
	}
}

// routerState prints what the qrouter of router has of floating IP fip:
// its addresses, NAT rules and conntrack entries, for a failure's message.
func routerState(ctx context.Context, h vif.Host, router, fip string) string {
	var b strings.Builder
	for _, c := range [][]string{{"ip", "-4", "-o", "addr"}, {"ip", "-4", "neigh"}, {"iptables-save", "-t", "nat"}, {"conntrack", "-L"}} {
		out, err := h.RouterCommand(ctx, router, c...).CombinedOutput()
		fmt.Fprintf(&b, "$ %s (%v)\n", strings.Join(c, " "), err)
		for l := range strings.Lines(string(out)) {
			if c[0] != "iptables-save" && c[0] != "conntrack" || strings.Contains(l, fip) {
				b.WriteString(l)
			}
		}
	}
	return b.String()
}
