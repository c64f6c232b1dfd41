//go:build integration

package integration

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// TestAgentHideNAT runs the agent in mode nat with a hideNAT rule: the
// tenant service (10.30.0.5) opens a TCP connection to the client host's
// own address through the tunnel, the client host sees it come from the
// presented address (an inside address the tunnel carries) and the answer
// comes back, de-NATed by conntrack. Beside it an exposure (client →
// inside address → tenant service) and a reverse exposure (tenant → the
// gateway's port → client host, with its own sourceAddress, which the hide
// NAT must not override) keep working. A second tenant subnet
// (10.30.1.0/24) that the rule does not list is not translated, and the
// tunnel, which carries the presented subnet only, does not carry it: the
// connection gets no answer and conntrack shows it untranslated.
func TestAgentHideNAT(t *testing.T) {
	topology.Need(t, "conntrack")
	tp := topology.Start(t, topology.Options{})
	addSecondTenant(tp)
	p0 := tp.Peers[0]
	psks := map[string][]byte{"site": []byte("hide-nat-test-psk-0123456789")}
	insideSite(t, tp, psks["site"])

	const (
		presented            = "100.64.0.20"
		exposed, exposedPort = "100.64.0.10", 8080
		source               = "100.64.0.9"
		listenPort           = 2222
		clientPort           = 8443
	)
	service := v1alpha1.IPv4(topology.Service.String())
	tunnel := siteTunnel("site", p0, v1alpha1.ChildSAPerSubnetPair, [2]netip.Prefix{inside, p0.Subnet})
	tunnel.HideNAT = []v1alpha1.HideNAT{{Name: "apps", TenantSubnets: []v1alpha1.CIDR{v1alpha1.CIDR(topology.TenantSubnet.String())},
		RemoteSubnets: []v1alpha1.CIDR{v1alpha1.CIDR(p0.Subnet.String())}, PresentedAddress: ptr.To(v1alpha1.IPv4(presented))}}
	spec := tunnelGateway("agent-hide-nat", v1alpha1.ModeNAT, tunnel)
	spec.TenantSubnets = []v1alpha1.CIDR{v1alpha1.CIDR(topology.TenantSubnet.String()), v1alpha1.CIDR(secondTenant.String())}
	spec.Exposures = []v1alpha1.Exposure{{Name: "web", Protocol: "tcp", InsideAddress: exposed, Port: exposedPort, Target: v1alpha1.ExposureTarget{Address: &service, Port: 80}}}
	spec.ReverseExposures = []v1alpha1.ReverseExposure{{Name: "ssh", Protocol: "tcp", ListenPort: listenPort,
		ClientAddress: v1alpha1.IPv4(p0.Host.String()), ClientPort: 22, SourceAddress: source}}
	tp.ServeWhoAmI(t, tp.Gateway.ServiceNS, "tcp", topology.Service.String()+":80")
	tp.ServeWhoAmI(t, p0.HostNS, "tcp", p0.Host.String()+":22")
	tp.ServeWhoAmI(t, p0.HostNS, "tcp", fmt.Sprintf("%s:%d", p0.Host, clientPort))

	start := time.Now()
	g := startAgent(t, tp, spec, psks)
	g.waitTunnels(20*time.Second, "the tunnel up", up(map[string][]string{"site": {render.ChildName("site", inside, p0.Subnet)}}))
	t.Logf("agent: mounted configuration to ESTABLISHED in the status ConfigMap in %v", time.Since(start).Round(time.Millisecond))

	direct := fmt.Sprintf("%s:%d", p0.Host, clientPort)
	askEach(t, tp, []whoAmI{
		{"hide NAT apps: tenant service → the client host's own address", tp.Gateway.ServiceNS, "tcp", direct, netip.MustParseAddr(presented)},
		{"reverse exposure ssh beside it: tenant service → gateway", tp.Gateway.ServiceNS, "tcp", fmt.Sprintf("%s:%d", topology.TenantAddress, listenPort), netip.MustParseAddr(source)},
		{"exposure web beside it: client host → inside address", p0.HostNS, "tcp", fmt.Sprintf("%s:%d", exposed, exposedPort), topology.TenantAddress},
	})
	// conntrack translated the hide NAT's connection: its reply tuple goes
	// to the presented address.
	if out := tp.MustExec(tp.Gateway.NS, "conntrack", "-L", "-p", "tcp", "-s", topology.Service.String(), "-d", p0.Host.String(), "--dport", fmt.Sprint(clientPort)); !strings.Contains(out, "dst="+presented+" ") {
		t.Errorf("conntrack holds no connection of the tenant service to %s translated to %s:\n%s", direct, presented, out)
	}

	// The second tenant subnet is not listed: untranslated, not carried.
	began := time.Now()
	if from, err := tp.AskWhoAmIFrom(tp.Gateway.ServiceNS, "tcp", serviceB, direct, 3*time.Second); err == nil {
		t.Errorf("unlisted tenant subnet %s: the client host answered, having seen %s; want no connection", secondTenant, from)
	} else {
		t.Logf("unlisted tenant subnet %s → %s: no answer after %v (%v)", secondTenant, direct, time.Since(began).Round(time.Millisecond), err)
	}
	out := tp.MustExec(tp.Gateway.NS, "conntrack", "-L", "-p", "tcp", "-s", serviceB.String(), "-d", p0.Host.String())
	if !strings.Contains(out, fmt.Sprintf("src=%s dst=%s", p0.Host, serviceB)) || strings.Contains(out, "dst="+presented+" ") {
		t.Errorf("conntrack should hold the unlisted subnet's connection untranslated (reply from %s to %s):\n%s", p0.Host, serviceB, out)
	}
	g.waitCarried("site")
}
