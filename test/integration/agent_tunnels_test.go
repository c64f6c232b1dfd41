//go:build integration

package integration

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/agent/status"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// Proposals of the real-tunnel agent tests: the gateway's and the client
// sites' sheets agree on them unless a test says otherwise.
var (
	ikeProposals = []string{"aes256-sha256-modp2048"}
	espProposals = []string{"aes256gcm16"}
)

// siteTunnel returns a tunnel of the gateway to peer that the gateway
// initiates, carrying pairs (local, remote).
func siteTunnel(name string, peer *topology.Peer, layout v1alpha1.ChildSALayout, pairs ...[2]netip.Prefix) v1alpha1.Tunnel {
	tn := v1alpha1.Tunnel{
		Name: name, Peer: v1alpha1.Peer{Address: peer.Address.String()}, IKEVersion: 2,
		IKEProposals: ikeProposals, ESPProposals: espProposals, StartAction: "start", ChildSALayout: layout,
	}
	for _, p := range pairs {
		tn.TrafficSelectors = append(tn.TrafficSelectors, v1alpha1.TrafficSelector{Local: v1alpha1.CIDR(p[0].String()), Remote: v1alpha1.CIDR(p[1].String())})
	}
	return tn
}

// clientSheet returns peer's parameter sheet for a tunnel to the gateway,
// answering only (the gateway initiates), with children.
func clientSheet(peer *topology.Peer, psk string, children ...topology.ClientChild) topology.ClientSheet {
	return topology.ClientSheet{
		Name: "to-provider", LocalAddress: peer.Address.String(), RemoteAddress: topology.FloatingIP.String(), PSK: psk,
		IKEProposals: ikeProposals, ESPProposals: espProposals, Children: children,
	}
}

// tenantChild is a peer's child between its subnet and the tenant subnet.
func tenantChild(p *topology.Peer) topology.ClientChild {
	return topology.ClientChild{Name: "tenant", LocalTS: []string{p.Subnet.String()}, RemoteTS: []string{topology.TenantSubnet.String()}}
}

// loadSheets configures each peer from its sheet.
func loadSheets(t *testing.T, tp *topology.Topology, sheets ...topology.ClientSheet) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, s := range sheets {
		if err := tp.Peers[i].LoadSheet(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
}

// secondTenant is a second tenant subnet behind the gateway; serviceB the
// tenant service's address in it.
var (
	secondTenant = netip.MustParsePrefix("10.30.1.0/24")
	serviceB     = netip.MustParseAddr("10.30.1.5")
)

// addSecondTenant gives the gateway (libipsec routes a CHILD_SA only when
// charon has an address in its local selector) and the tenant service an
// address in secondTenant.
func addSecondTenant(tp *topology.Topology) {
	tp.MustExec(tp.Gateway.NS, "ip", "addr", "add", "10.30.1.1/24", "dev", topology.TenantInterface)
	tp.MustExec(tp.Gateway.ServiceNS, "ip", "addr", "add", serviceB.String()+"/24", "dev", "eth0")
}

// TestAgentTwoPeers runs the agent with two tunnels to two client sites:
// one with two subnet pairs in layout PerSubnetPair (two CHILD_SAs named
// after their pairs), one whose single CHILD_SA carries both tenant
// subnets. Both come up, the status shows every CHILD_SA, and a ping from
// each client host reaches both tenant subnets through its tunnel.
func TestAgentTwoPeers(t *testing.T) {
	tp := topology.Start(t, topology.Options{Peers: 2})
	addSecondTenant(tp)
	p0, p1 := tp.Peers[0], tp.Peers[1]
	psks := map[string][]byte{"per-pair": []byte("two-peers-psk-per-pair-0123"), "single": []byte("two-peers-psk-single-4567")}
	tenant := []string{topology.TenantSubnet.String(), secondTenant.String()}
	loadSheets(t, tp,
		clientSheet(p0, string(psks["per-pair"]),
			topology.ClientChild{Name: "a", LocalTS: []string{p0.Subnet.String()}, RemoteTS: tenant[:1]},
			topology.ClientChild{Name: "b", LocalTS: []string{p0.Subnet.String()}, RemoteTS: tenant[1:]}),
		clientSheet(p1, string(psks["single"]),
			topology.ClientChild{Name: "all", LocalTS: []string{p1.Subnet.String()}, RemoteTS: tenant}))

	spec := tunnelGateway("agent-two-peers", v1alpha1.ModeRouted,
		siteTunnel("per-pair", p0, v1alpha1.ChildSAPerSubnetPair, [2]netip.Prefix{topology.TenantSubnet, p0.Subnet}, [2]netip.Prefix{secondTenant, p0.Subnet}),
		siteTunnel("single", p1, v1alpha1.ChildSASingle, [2]netip.Prefix{topology.TenantSubnet, p1.Subnet}, [2]netip.Prefix{secondTenant, p1.Subnet}))
	start := time.Now()
	g := startAgent(t, tp, spec, psks)
	g.waitTunnels(20*time.Second, "both tunnels ESTABLISHED with every CHILD_SA INSTALLED", up(map[string][]string{
		"per-pair": {render.ChildName("per-pair", topology.TenantSubnet, p0.Subnet), render.ChildName("per-pair", secondTenant, p0.Subnet)},
		"single":   {"single"},
	}))
	t.Logf("agent: mounted configuration to both tunnels ESTABLISHED in the status ConfigMap in %v", time.Since(start).Round(time.Millisecond))

	for i, p := range tp.Peers {
		for _, dst := range []netip.Addr{topology.Service, serviceB} {
			ping(t, tp, fmt.Sprintf("client host %d → tenant service", i), p.HostNS, dst)
		}
	}
}

// TestAgentWrongPSK runs the agent with two tunnels, one to a client site
// configured with another PSK: the published status shows that tunnel not
// established with charon's authentication error while the other tunnel
// is up, and no PSK appears in the status, the agent's log, its metrics or
// the gateway charon's log.
func TestAgentWrongPSK(t *testing.T) {
	tp := topology.Start(t, topology.Options{Peers: 2})
	p0, p1 := tp.Peers[0], tp.Peers[1]
	psks := map[string][]byte{"good": []byte("wrong-psk-test-good-0123"), "bad": []byte("wrong-psk-test-gateway-4567")}
	const peersPSK = "wrong-psk-test-peer-89ab"
	loadSheets(t, tp, clientSheet(p0, string(psks["good"]), tenantChild(p0)), clientSheet(p1, peersPSK, tenantChild(p1)))

	spec := tunnelGateway("agent-wrong-psk", v1alpha1.ModeRouted,
		siteTunnel("good", p0, v1alpha1.ChildSAPerSubnetPair, [2]netip.Prefix{topology.TenantSubnet, p0.Subnet}),
		siteTunnel("bad", p1, v1alpha1.ChildSAPerSubnetPair, [2]netip.Prefix{topology.TenantSubnet, p1.Subnet}))
	start := time.Now()
	g := startAgent(t, tp, spec, psks)
	got := g.waitTunnels(20*time.Second, "the tunnel with the wrong PSK reported down with an authentication error, the other up", func(got map[string]v1alpha1.TunnelStatus) error {
		if err := up(map[string][]string{"good": {render.ChildName("good", topology.TenantSubnet, p0.Subnet)}})(got); err != nil {
			return err
		}
		if bad := got["bad"]; bad.LastError != status.ErrAuthenticationFailed {
			return fmt.Errorf("tunnel bad has last error %q", bad.LastError)
		}
		return nil
	})
	t.Logf("agent: mounted configuration to AUTHENTICATION_FAILED in the status ConfigMap in %v", time.Since(start).Round(time.Millisecond))
	t.Logf("tunnel bad: IKE state %q, last error %q; the agent logged %d bytes", got["bad"].IKEState, got["bad"].LastError, len(g.logged()))
	if bad := got["bad"]; bad.IKEState == v1alpha1.IKEStateEstablished || len(bad.ChildSAs) != 0 || bad.EstablishedAt != nil {
		t.Errorf("tunnel bad is reported up: %+v", bad)
	}
	if good := got["good"]; good.LastError != "" {
		t.Errorf("tunnel good has last error %q", good.LastError)
	}
	ping(t, tp, "client host 0 → tenant service", p0.HostNS, topology.Service)

	data, err := g.statusData()
	if err != nil {
		t.Fatal(err)
	}
	psks["bad (the peer's)"] = []byte(peersPSK)
	noSecret(t, "the status ConfigMap", data, psks)
	noSecret(t, "the agent's log", g.logged(), psks)
	noSecret(t, "the agent's metrics", metricsText(t, g), psks)
	noSecret(t, "the gateway charon's log", tp.Gateway.Log(), psks)
}

// TestAgentRekeyPFS runs the agent with two tunnels whose CHILD_SAs the
// gateway rekeys within seconds (rekeyTime 3s, lifeTime 5s: charon rekeys
// 1 to 3 s after install), with PFS: to one client site whose sheet has
// the same DH group, each rekey (a CREATE_CHILD_SA with REKEY_SA and a new
// key exchange) replaces the CHILD_SA's SPIs and traffic still flows; to
// the other, whose sheet has another DH group, the tunnel comes up
// (IKE_AUTH negotiates no DH group for its CHILD_SA), the mismatch is
// caught at the first rekey and reported as NO_PROPOSAL_CHOSEN, and once
// the CHILD_SA expires the tunnel has none left while the status keeps the
// error.
func TestAgentRekeyPFS(t *testing.T) {
	tp := topology.Start(t, topology.Options{Peers: 2})
	p0, p1 := tp.Peers[0], tp.Peers[1]
	psks := map[string][]byte{"pfs": []byte("rekey-test-psk-pfs-0123"), "mismatch": []byte("rekey-test-psk-mismatch-4567")}
	sheets := []topology.ClientSheet{clientSheet(p0, string(psks["pfs"]), tenantChild(p0)), clientSheet(p1, string(psks["mismatch"]), tenantChild(p1))}
	for i := range sheets {
		sheets[i].ESPProposals = []string{"aes256gcm16-ecp256"}
	}
	loadSheets(t, tp, sheets...)

	// A rekeyTime under 10s needs a lifeTime (the renderer refuses it
	// without): charon's default, 110% of rekeyTime in whole seconds,
	// would equal it, and the CHILD_SA would expire and be created anew
	// instead of being rekeyed.
	lifetime := v1alpha1.ChildLifetime{RekeyTime: ptr.To[v1alpha1.Duration]("3s"), LifeTime: ptr.To[v1alpha1.Duration]("5s")}
	pfs := siteTunnel("pfs", p0, v1alpha1.ChildSAPerSubnetPair, [2]netip.Prefix{topology.TenantSubnet, p0.Subnet})
	mismatch := siteTunnel("mismatch", p1, v1alpha1.ChildSAPerSubnetPair, [2]netip.Prefix{topology.TenantSubnet, p1.Subnet})
	pfs.ESPProposals, mismatch.ESPProposals = []string{"aes256gcm16-ecp256"}, []string{"aes256gcm16-modp2048"}
	pfs.ChildLifetime, mismatch.ChildLifetime = lifetime, lifetime
	rekeys := tp.Gateway.Events(t, "child-rekey")
	start := time.Now()
	g := startAgent(t, tp, tunnelGateway("agent-rekey", v1alpha1.ModeRouted, pfs, mismatch), psks)
	pfsChild, mismatchChild := render.ChildName("pfs", topology.TenantSubnet, p0.Subnet), render.ChildName("mismatch", topology.TenantSubnet, p1.Subnet)
	g.waitTunnels(20*time.Second, "both tunnels up", up(map[string][]string{"pfs": {pfsChild}, "mismatch": {mismatchChild}}))
	first := tp.Gateway.WaitSA(t, "pfs", 5*time.Second, topology.Up(pfsChild))
	was, _ := first.Installed(pfsChild)
	t.Logf("agent: mounted configuration to both tunnels ESTABLISHED in the status ConfigMap in %v", time.Since(start).Round(time.Millisecond))

	select {
	case ev := <-rekeys:
		if ev.Message.Get("pfs") == nil {
			t.Fatalf("charon rekeyed a CHILD_SA of another tunnel first: %v", ev.Message.Keys())
		}
		t.Logf("pfs: CHILD_SA rekeyed %v after the configuration was mounted", ev.Timestamp.Sub(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("no child-rekey event of tunnel pfs within 10s")
	}
	// An INSTALLED CHILD_SA with new SPIs from a new ECP_256 key exchange
	// (charon keeps rekeying it every 1 to 3 s).
	rekeyed := tp.Gateway.WaitSA(t, "pfs", 5*time.Second, topology.Up(pfsChild))
	if now, _ := rekeyed.Installed(pfsChild); now.SPIIn == was.SPIIn || now.SPIOut == was.SPIOut || now.DHGroup != "ECP_256" {
		t.Errorf("the rekeyed CHILD_SA has spi-in %s spi-out %s dh-group %q; was %s %s, want new SPIs and ECP_256", now.SPIIn, now.SPIOut, now.DHGroup, was.SPIIn, was.SPIOut)
	}
	if rekeyed.UniqueID != first.UniqueID {
		t.Errorf("the IKE SA was replaced by the CHILD_SA rekey: uniqueid %s, was %s", rekeyed.UniqueID, first.UniqueID)
	}
	ping(t, tp, "client host 0 → tenant service after the rekey", p0.HostNS, topology.Service)

	// charon's only word on the mismatch is the initiator's "received
	// NO_PROPOSAL_CHOSEN notify, no CHILD_SA built" when the rekey fails;
	// when the CHILD_SA expires, recreating it fails the same way.
	g.waitTunnels(10*time.Second, "the PFS mismatch caught at the rekey and reported", func(got map[string]v1alpha1.TunnelStatus) error {
		if e := got["mismatch"].LastError; e != status.ErrNoProposalChosen {
			return fmt.Errorf("tunnel mismatch has last error %q", e)
		}
		return nil
	})
	t.Logf("mismatch: %s in the status %v after the configuration was mounted", status.ErrNoProposalChosen, time.Since(start).Round(time.Millisecond))
	// Which of the two comes first depends on timing: under load the
	// CHILD_SA can reach its hard expiry before the rekey job runs, and
	// close_action start recreates it, which fails on the same proposal.
	failed := false
	for l := range strings.Lines(tp.Gateway.Log()) {
		failed = failed || strings.Contains(l, "<mismatch|") &&
			(strings.Contains(l, "CHILD_SA rekeying failed") || strings.Contains(l, "failed to establish CHILD_SA, keeping IKE_SA"))
	}
	if !failed {
		t.Errorf("the gateway's charon logged neither a failed rekey nor a failed recreate of tunnel mismatch's CHILD_SA")
	}
	got := g.waitTunnels(10*time.Second, "the mismatched CHILD_SA expired, the tunnel reported not up with the error kept, the other tunnel up", func(got map[string]v1alpha1.TunnelStatus) error {
		if m := got["mismatch"]; m.IKEState != v1alpha1.IKEStateEstablished || len(m.ChildSAs) != 0 || m.LastError != status.ErrNoProposalChosen || m.Up {
			return fmt.Errorf("tunnel mismatch is %+v", m)
		}
		return up(map[string][]string{"pfs": {pfsChild}})(got)
	})
	t.Logf("mismatch: CHILD_SA gone %v after the configuration was mounted; status %+v", time.Since(start).Round(time.Millisecond), got["mismatch"])
}

// TestAgentNATExposures runs the agent in mode nat: the client site sees
// the tenant side as inside addresses (100.64.0.0/24). An exposure makes
// the tenant service's TCP and UDP ports reachable from the client host at
// an inside address and port; the service sees the connections come from
// the gateway's tenant-side address (masquerade, so replies return through
// the gateway). A reverse exposure makes a port of the client host
// reachable from the tenant service at a port of the gateway; the client
// host sees the connections come from the reverse exposure's sourceAddress,
// an inside address the tunnel carries (internal/render/nat.go).
func TestAgentNATExposures(t *testing.T) {
	tp := topology.Start(t, topology.Options{})
	p0 := tp.Peers[0]
	psks := map[string][]byte{"site": []byte("nat-test-psk-0123456789")}
	insideSite(t, tp, psks["site"])

	const (
		exposed, exposedPort = "100.64.0.10", 8080
		source               = "100.64.0.9"
		listenPort           = 2222
	)
	service := v1alpha1.IPv4(topology.Service.String())
	spec := tunnelGateway("agent-nat", v1alpha1.ModeNAT, siteTunnel("site", p0, v1alpha1.ChildSAPerSubnetPair, [2]netip.Prefix{inside, p0.Subnet}))
	spec.TenantSubnets = []v1alpha1.CIDR{v1alpha1.CIDR(topology.TenantSubnet.String())}
	spec.Exposures = []v1alpha1.Exposure{
		{Name: "web", Protocol: "tcp", InsideAddress: exposed, Port: exposedPort, Target: v1alpha1.ExposureTarget{Address: &service, Port: 80}},
		{Name: "dns", Protocol: "udp", InsideAddress: exposed, Port: 5353, Target: v1alpha1.ExposureTarget{Address: &service, Port: 53}},
	}
	spec.ReverseExposures = []v1alpha1.ReverseExposure{{Name: "ssh", Protocol: "tcp", ListenPort: listenPort,
		ClientAddress: v1alpha1.IPv4(p0.Host.String()), ClientPort: 22, SourceAddress: source}}
	tp.ServeWhoAmI(t, tp.Gateway.ServiceNS, "tcp", topology.Service.String()+":80")
	tp.ServeWhoAmI(t, tp.Gateway.ServiceNS, "udp", topology.Service.String()+":53")
	tp.ServeWhoAmI(t, p0.HostNS, "tcp", p0.Host.String()+":22")

	start := time.Now()
	g := startAgent(t, tp, spec, psks)
	g.waitTunnels(20*time.Second, "the tunnel up", up(map[string][]string{"site": {render.ChildName("site", inside, p0.Subnet)}}))
	t.Logf("agent: mounted configuration to ESTABLISHED in the status ConfigMap in %v", time.Since(start).Round(time.Millisecond))

	askEach(t, tp, []whoAmI{
		{"exposure web: client host → inside address (tcp)", p0.HostNS, "tcp", fmt.Sprintf("%s:%d", exposed, exposedPort), topology.TenantAddress},
		{"exposure dns: client host → inside address (udp)", p0.HostNS, "udp", exposed + ":5353", topology.TenantAddress},
		{"reverse exposure ssh: tenant service → gateway (tcp)", tp.Gateway.ServiceNS, "tcp", fmt.Sprintf("%s:%d", topology.TenantAddress, listenPort), netip.MustParseAddr(source)},
	})
	g.waitCarried("site")
}

// inside is the presented subnet of the mode nat tests: the client site
// sees the tenant side as these addresses.
var inside = netip.MustParsePrefix("100.64.0.0/24")

// insideSite gives the gateway an address in inside (libipsec routes a
// CHILD_SA only when charon has an address in its local selector; a /32
// claims no route for the subnet) and configures the client site to answer
// a tunnel between its subnet and inside with psk.
func insideSite(t *testing.T, tp *topology.Topology, psk []byte) {
	t.Helper()
	p0 := tp.Peers[0]
	tp.MustExec(tp.Gateway.NS, "ip", "addr", "add", "100.64.0.1/32", "dev", topology.TenantInterface)
	loadSheets(t, tp, clientSheet(p0, string(psk),
		topology.ClientChild{Name: "inside", LocalTS: []string{p0.Subnet.String()}, RemoteTS: []string{inside.String()}}))
}

// A whoAmI is a connection from namespace ns to a ServeWhoAmI listener at
// network address addr, which must see it come from wantFrom.
type whoAmI struct {
	what, ns, network, addr string
	wantFrom                netip.Addr
}

// askEach makes each connection of cases and fails t for every one the
// listener did not answer or saw from another address than wanted.
func askEach(t *testing.T, tp *topology.Topology, cases []whoAmI) {
	t.Helper()
	for _, c := range cases {
		began := time.Now()
		from, err := tp.AskWhoAmI(c.ns, c.network, c.addr, 3*time.Second)
		if err != nil {
			t.Errorf("%s: %v", c.what, err)
			continue
		}
		if got, err := netip.ParseAddrPort(from); err != nil || got.Addr() != c.wantFrom {
			t.Errorf("%s: the listener saw the connection come from %s, want %s", c.what, from, c.wantFrom)
			continue
		}
		t.Logf("%s: answered in %v, the listener saw %s", c.what, time.Since(began).Round(time.Microsecond), from)
	}
}

// waitCarried waits until every CHILD_SA of tunnel counted at least 3
// packets each way: the connections went through the tunnel, as the client
// site has no other route to the inside addresses.
func (g *agentGateway) waitCarried(tunnel string) {
	g.t.Helper()
	g.waitTunnels(5*time.Second, "the CHILD_SA's counters show the connections", func(got map[string]v1alpha1.TunnelStatus) error {
		for _, c := range got[tunnel].ChildSAs {
			if c.PacketsIn < 3 || c.PacketsOut < 3 {
				return fmt.Errorf("CHILD_SA %s counted %d packets in, %d out", c.Name, c.PacketsIn, c.PacketsOut)
			}
		}
		return nil
	})
}
