//go:build kernel

package guest

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/internal/xfrmi"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// upTimeout bounds a tunnel's bring-up in the guest, from the agent's
// start: its validation charon, the load and IKE's Diffie-Hellman under
// TCG emulation, which runs the guest 5-20 times slower than the machine
// (measured: 16-25 s at a load average of 3 on two cores, 52 s at 16).
const upTimeout = 2 * time.Minute

// inside is the presented subnet of mode nat: the client site sees the
// tenant side as these addresses.
var inside = netip.MustParsePrefix("100.64.0.0/24")

// TestTunnelPolicyNAT runs a policy-based tunnel of a mode nat gateway
// with an exposure, a reverse exposure and a hide NAT on the kernel's data
// plane (KernelXFRM): the image's charon with kernel-netlink, the image's
// agent loading the rendered configuration and NAT rules. A TCP connection
// from the client host to the exposure's inside address reaches the tenant
// service (from the gateway's tenant address: masquerade), one from the
// tenant service to the reverse exposure reaches the client host (from the
// reverse exposure's source address), one from the tenant service to the
// client host's own address reaches it from the hide NAT's presented
// address (the kernel looks the XFRM policy up again after the SNAT: before
// it, the tenant address matches none), and the gateway's kernel holds the
// CHILD_SA's two SAs, each of which counted the packets.
func TestTunnelPolicyNAT(t *testing.T) {
	tp := start(t, 1)
	p0 := tp.Peers[0]
	psk := []byte("kernel-policy-nat-psk-0123456789")
	loadSheet(t, p0, clientSheet(p0, psk, topology.ClientChild{Name: "inside", LocalTS: []string{p0.Subnet.String()}, RemoteTS: []string{inside.String()}}))

	const (
		exposed, exposedPort = "100.64.0.10", 8080
		source               = "100.64.0.9"
		listenPort           = 2222
		presented            = "100.64.0.20"
		clientPort           = 8443
	)
	service := v1alpha1.IPv4(topology.Service.String())
	tunnel := siteTunnel("site", p0, [2]netip.Prefix{inside, p0.Subnet})
	tunnel.HideNAT = []v1alpha1.HideNAT{{Name: "apps", TenantSubnets: []v1alpha1.CIDR{v1alpha1.CIDR(topology.TenantSubnet.String())},
		RemoteSubnets: []v1alpha1.CIDR{v1alpha1.CIDR(p0.Subnet.String())}, PresentedAddress: ptr.To(v1alpha1.IPv4(presented))}}
	spec := gatewaySpec(v1alpha1.ModeNAT, tunnel)
	spec.TenantSubnets = []v1alpha1.CIDR{v1alpha1.CIDR(topology.TenantSubnet.String())}
	spec.Exposures = []v1alpha1.Exposure{{Name: "web", Protocol: "tcp", InsideAddress: exposed, Port: exposedPort,
		Target: v1alpha1.ExposureTarget{Address: &service, Port: 80}}}
	spec.ReverseExposures = []v1alpha1.ReverseExposure{{Name: "ssh", Protocol: "tcp", ListenPort: listenPort,
		ClientAddress: v1alpha1.IPv4(p0.Host.String()), ClientPort: 22, SourceAddress: source}}
	tp.ServeWhoAmI(t, tp.Gateway.ServiceNS, "tcp", topology.Service.String()+":80")
	tp.ServeWhoAmI(t, p0.HostNS, "tcp", p0.Host.String()+":22")
	tp.ServeWhoAmI(t, p0.HostNS, "tcp", fmt.Sprintf("%s:%d", p0.Host, clientPort))

	began := time.Now()
	startAgent(t, tp, spec, map[string][]byte{"site": psk})
	tp.Gateway.WaitSA(t, "site", upTimeout, topology.Up(render.ChildName("site", inside, p0.Subnet)))
	t.Logf("agent started to the CHILD_SA INSTALLED in %v", time.Since(began).Round(time.Millisecond))

	ask(t, tp, "exposure web: client host → inside address", p0.HostNS, "tcp", fmt.Sprintf("%s:%d", exposed, exposedPort), topology.TenantAddress)
	ask(t, tp, "reverse exposure ssh: tenant service → gateway", tp.Gateway.ServiceNS, "tcp", fmt.Sprintf("%s:%d", topology.TenantAddress, listenPort), netip.MustParseAddr(source))
	ask(t, tp, "hide NAT apps: tenant service → the client host's own address", tp.Gateway.ServiceNS, "tcp", fmt.Sprintf("%s:%d", p0.Host, clientPort), netip.MustParseAddr(presented))
	kernelCarried(t, tp, 2, 3)
}

// TestTunnelRoutedIKEv1 runs an IKEv1 policy-based tunnel of a mode routed
// gateway (no NAT: the tenant subnet itself is the local selector) on the
// kernel's data plane: pings both ways between the client host and the
// tenant service, and the gateway's kernel holds the two SAs, each of
// which counted them.
func TestTunnelRoutedIKEv1(t *testing.T) {
	tp := start(t, 1)
	p0 := tp.Peers[0]
	psk := []byte("kernel-routed-ikev1-psk-0123456789")
	sheet := clientSheet(p0, psk, topology.ClientChild{Name: "tenant", LocalTS: []string{p0.Subnet.String()}, RemoteTS: []string{topology.TenantSubnet.String()}})
	sheet.IKEVersion = 1
	loadSheet(t, p0, sheet)

	tn := siteTunnel("v1", p0, [2]netip.Prefix{topology.TenantSubnet, p0.Subnet})
	tn.IKEVersion = 1
	spec := gatewaySpec(v1alpha1.ModeRouted, tn)
	spec.TenantSubnets = []v1alpha1.CIDR{v1alpha1.CIDR(topology.TenantSubnet.String())}

	began := time.Now()
	startAgent(t, tp, spec, map[string][]byte{tn.Name: psk})
	tp.Gateway.WaitSA(t, tn.Name, upTimeout, topology.Up(render.ChildName(tn.Name, topology.TenantSubnet, p0.Subnet)))
	t.Logf("agent started to the CHILD_SA INSTALLED in %v", time.Since(began).Round(time.Millisecond))

	ping(t, tp, "client host → tenant service", p0.HostNS, topology.Service)
	ping(t, tp, "tenant service → client host", tp.Gateway.ServiceNS, p0.Host)
	kernelCarried(t, tp, 2, 6)
}

// TestTunnelRouteBased runs a route-mode tunnel (gateway mode routed,
// selectors 0.0.0.0/0 on the gateway's side, narrowed by the client site
// to its subnet and the tenant subnet, as a firewall that offers only its
// LAN does): the agent creates the tunnel's XFRM interface on net1 with
// its interface ID and routes the client subnet over it; charon installs
// the SAs with that ID. Pings between the client host and the tenant
// service go through the interface (its counters) and the kernel's SAs.
func TestTunnelRouteBased(t *testing.T) {
	tp := start(t, 1)
	p0 := tp.Peers[0]
	psk := []byte("kernel-route-psk-0123456789")
	loadSheet(t, p0, clientSheet(p0, psk, topology.ClientChild{Name: "tenant", LocalTS: []string{p0.Subnet.String()}, RemoteTS: []string{topology.TenantSubnet.String()}}))

	any := netip.MustParsePrefix("0.0.0.0/0")
	tn := siteTunnel("cloud-vpn-1", p0, [2]netip.Prefix{any, any})
	tn.Mode = v1alpha1.TunnelModeRoute
	tn.Routes = []v1alpha1.CIDR{v1alpha1.CIDR(p0.Subnet.String())}
	spec := gatewaySpec(v1alpha1.ModeRouted, tn)
	spec.TenantSubnets = []v1alpha1.CIDR{v1alpha1.CIDR(topology.TenantSubnet.String())}

	began := time.Now()
	startAgent(t, tp, spec, map[string][]byte{tn.Name: psk})
	tp.Gateway.WaitSA(t, tn.Name, upTimeout, topology.Up(render.ChildName(tn.Name, any, any)))
	t.Logf("agent started to the CHILD_SA INSTALLED in %v", time.Since(began).Round(time.Millisecond))

	id := xfrmi.IfID(tn.Name)
	link := xfrmi.InterfaceName(id)
	if out := tp.MustExec(tp.Gateway.NS, "ip", "route", "show", p0.Subnet.String()); !strings.Contains(out, "dev "+link) {
		t.Fatalf("the gateway routes %s as:\n%s\nwant through %s", p0.Subnet, out, link)
	}
	ping(t, tp, "client host → tenant service", p0.HostNS, topology.Service)
	ping(t, tp, "tenant service → client host", tp.Gateway.ServiceNS, p0.Host)

	_, states := kernelSAs(t, tp, tp.Gateway.NS)
	if want := fmt.Sprintf("if_id %#x", id); strings.Count(states, want) != 2 {
		t.Errorf("the gateway's kernel SAs:\n%s\nwant both with %s", states, want)
	}
	kernelCarried(t, tp, 2, 6)
	stats := tp.MustExec(tp.Gateway.NS, "ip", "-s", "link", "show", link)
	if rx, tx := linkPackets(stats); rx < 6 || tx < 6 {
		t.Errorf("%s counted %d packets in and %d out, want at least 6 each way:\n%s", link, rx, tx, stats)
	}
}
