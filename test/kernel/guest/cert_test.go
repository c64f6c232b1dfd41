//go:build kernel

package guest

import (
	"crypto/x509/pkix"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// TestTunnelCertificate runs a certificate tunnel (auth pubkey) of a mode
// routed gateway on the kernel's data plane: the gateway's certificate and
// the client site's, each from a CA of its own (test/topology's pki, as
// cert-manager issues them; the guest has no openssl command), the
// gateway's material parsed and rendered as the provider renders it from
// its Secrets and loaded by the agent. Each side authenticates the other
// by its certificate's DN, and pings both ways between the client host and
// the tenant service are counted by the gateway kernel's two SAs.
func TestTunnelCertificate(t *testing.T) {
	tp := start(t, 1)
	p0 := tp.Peers[0]
	const gatewayDN, siteDN = "C=DE, O=Example AG, CN=gw.example.com", "C=CH, O=Peer AG, CN=vpn.peer0.example"
	gwCA := topology.NewCA(t, pkix.Name{Organization: []string{"Example AG"}, CommonName: "Example Gateway CA"})
	siteCA := topology.NewCA(t, pkix.Name{Organization: []string{"Peer AG"}, CommonName: "Peer 0 Root CA"})
	now := time.Now()
	gw := gwCA.Issue(t, pkix.Name{Country: []string{"DE"}, Organization: []string{"Example AG"}, CommonName: "gw.example.com"},
		[]string{"gw.example.com"}, now.Add(-time.Minute), now.Add(time.Hour), topology.SEC1)
	site := siteCA.Issue(t, pkix.Name{Country: []string{"CH"}, Organization: []string{"Peer AG"}, CommonName: "vpn.peer0.example"},
		nil, now.Add(-time.Minute), now.Add(time.Hour), topology.PKCS8EC)

	// The client site's swanctl directories, as ClientSheet.Certs expects
	// them (Peer.OpenSSLSite writes the same with openssl).
	for name, data := range map[string][]byte{"x509/site.pem": site.Cert, "private/site.pem": site.Key} {
		file := filepath.Join(p0.Dir, "swanctl", name)
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p0.TrustGateway(t, gwCA.Cert)
	sheet := clientSheet(p0, nil, topology.ClientChild{Name: "tenant", LocalTS: []string{p0.Subnet.String()}, RemoteTS: []string{topology.TenantSubnet.String()}})
	sheet.Certs, sheet.RemoteID = true, gatewayDN
	loadSheet(t, p0, sheet)

	tn := siteTunnel("cert", p0, [2]netip.Prefix{topology.TenantSubnet, p0.Subnet})
	tn.Certificate = &v1alpha1.CertificateAuth{
		SecretName: "gateway-tls", PeerCA: v1alpha1.CARef{SecretName: ptr.To("site-ca")},
		LocalID: &v1alpha1.Identity{DN: ptr.To(gatewayDN)}, RemoteID: v1alpha1.Identity{DN: ptr.To(siteDN)},
	}
	spec := gatewaySpec(v1alpha1.ModeRouted, tn)
	spec.TenantSubnets = []v1alpha1.CIDR{v1alpha1.CIDR(topology.TenantSubnet.String())}
	tc, err := render.ParseTunnelCert(gw.Cert, gw.Key, siteCA.Cert, v1alpha1.DefaultCAKey, now)
	if err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	startAgentInput(t, tp, render.Input{Spec: spec, Certs: map[string]*render.TunnelCert{tn.Name: tc}})
	sa := tp.Gateway.WaitSA(t, tn.Name, upTimeout, topology.Up(render.ChildName(tn.Name, topology.TenantSubnet, p0.Subnet)))
	t.Logf("agent started to the CHILD_SA INSTALLED in %v; IKE SA local id %q, remote id %q", time.Since(began).Round(time.Millisecond), sa.LocalID, sa.RemoteID)
	if sa.LocalID != gatewayDN || sa.RemoteID != siteDN {
		t.Errorf("IKE SA cert: local id %q, remote id %q; want %q and %q", sa.LocalID, sa.RemoteID, gatewayDN, siteDN)
	}
	for _, c := range []struct {
		who, log, line string
	}{
		{"the client site", p0.Log(), "authentication of '" + gatewayDN + "' with ECDSA_WITH_SHA256_DER successful"},
		{"the gateway", tp.Gateway.Log(), "authentication of '" + siteDN + "' with ECDSA_WITH_SHA256_DER successful"},
	} {
		if !strings.Contains(c.log, c.line) {
			t.Errorf("%s did not log %q", c.who, c.line)
		}
	}

	ping(t, tp, "client host → tenant service", p0.HostNS, topology.Service)
	ping(t, tp, "tenant service → client host", tp.Gateway.ServiceNS, p0.Host)
	kernelCarried(t, tp, 2, 6)
}
