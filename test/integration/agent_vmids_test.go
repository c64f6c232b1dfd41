//go:build integration

package integration

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// TestAgentVMIdentities brings up, with real charons, the identities VM
// gateways' peers use that the API refused before (issue 32). Site 0
// authenticates with an openssl-made certificate whose subject has a
// multi-valued RDN (OU=Net+CN=rtr1.example.net), named in the tunnel's
// remoteId as openssl prints it; the gateway presents its floating IP as an
// IP identity (certificate.localId.ip), in its certificate's
// subjectAltName, and site 0 expects exactly that identity. Site 1
// authenticates with a PSK and the identity fw_1.example.net, named in
// peer.id with strongSwan's '@'. Both tunnels come up and carry traffic.
func TestAgentVMIdentities(t *testing.T) {
	topology.Need(t, "openssl")
	tp := topology.Start(t, topology.Options{Peers: 2})
	p0, p1 := tp.Peers[0], tp.Peers[1]
	ca0 := p0.OpenSSLSite(t, "/C=DE/O=Example AG/CN=Site 0 Root CA", "/C=DE/O=Example AG/OU=Net+CN=rtr1.example.net")
	gwCA := topology.NewCA(t, gatewaySubject)
	p0.TrustGateway(t, gwCA.Cert)
	issued := gwCA.Issue(t, gatewaySubject, []string{"gw.example.com", topology.FloatingIP.String()}, time.Now().Add(-time.Minute), time.Now().Add(time.Hour), topology.PKCS1)

	site0 := certSheet(p0, tenantChild(p0))
	site0.RemoteID = topology.FloatingIP.String()
	const psk = "vm-identities-psk"
	site1 := clientSheet(p1, psk, tenantChild(p1))
	site1.LocalID = "fw_1.example.net"
	loadSheets(t, tp, site0, site1)

	cert := certTunnel("site0", p0, "site0-ca", "C=DE, O=Example AG, OU=Net + CN=rtr1.example.net")
	cert.Certificate.LocalID = &v1alpha1.Identity{IP: ptr.To(v1alpha1.IPv4(topology.FloatingIP.String()))}
	named := siteTunnel("site1", p1, v1alpha1.ChildSAPerSubnetPair, [2]netip.Prefix{topology.TenantSubnet, p1.Subnet})
	named.Peer.ID = "@fw_1.example.net"
	spec := tunnelGateway("agent-vmids", v1alpha1.ModeRouted, cert, named)
	start := time.Now()
	g := startAgentCerts(t, tp, spec, map[string][]byte{"site1": []byte(psk)}, map[string]*render.TunnelCert{"site0": mustTunnelCert(t, issued, ca0)}, nil)
	g.waitTunnels(30*time.Second, "both tunnels up", up(map[string][]string{
		"site0": {render.ChildName("site0", topology.TenantSubnet, p0.Subnet)},
		"site1": {render.ChildName("site1", topology.TenantSubnet, p1.Subnet)},
	}))
	t.Logf("agent: mounted configuration to both tunnels ESTABLISHED in %v", time.Since(start).Round(time.Millisecond))
	ping(t, tp, "client host 0 → tenant service", p0.HostNS, topology.Service)
	ping(t, tp, "client host 1 → tenant service", p1.HostNS, topology.Service)
	sa := tp.Gateway.WaitSA(t, "site0", 5*time.Second, func(topology.IKESA) bool { return true })
	// charon prints a multi-valued RDN's attributes as it prints RDNs.
	if sa.LocalID != topology.FloatingIP.String() || sa.RemoteID != "C=DE, O=Example AG, OU=Net, CN=rtr1.example.net" {
		t.Errorf("IKE SA site0: local id %q, remote id %q: want the floating IP and the site's multi-valued subject", sa.LocalID, sa.RemoteID)
	}
	if !strings.Contains(p0.Log(), "authentication of '"+topology.FloatingIP.String()+"' with RSA_EMSA_PKCS1_SHA2_256 successful") {
		t.Errorf("site 0 did not authenticate the gateway as %s by its certificate", topology.FloatingIP)
	}
	noSecret(t, "the agent's log", g.logged(), map[string][]byte{"site1": []byte(psk)})
}
