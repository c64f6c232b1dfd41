//go:build integration

package integration

import (
	"context"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strongswan/govici/vici"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/agent/status"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// The gateway's certificate subject, made by Go's crypto/x509 as
// cert-manager makes it (PrintableStrings), and the same DN as the
// tunnels' localId and the sites' remote id give it. ASCII: the sites type
// it as a string, and strongSwan 5.9.8 refuses a string DN with other
// characters ("invalid value for: id"; the gateway renders its DNs as
// asn1dn:#<DER>, which takes any).
var (
	gatewaySubject = pkix.Name{Country: []string{"DE"}, Locality: []string{"Muenchen"}, Organization: []string{"Example AG"},
		OrganizationalUnit: []string{"VPN"}, CommonName: "gw.example.com"}
	gatewayDN = "C=DE, L=Muenchen, O=Example AG, OU=VPN, CN=gw.example.com"
)

// certTunnel returns a tunnel of the gateway to peer authenticated with
// certificates: the peer must present remoteDN and a certificate of
// the CA in Secret caSecret.
func certTunnel(name string, peer *topology.Peer, caSecret, remoteDN string) v1alpha1.Tunnel {
	tn := siteTunnel(name, peer, v1alpha1.ChildSAPerSubnetPair, [2]netip.Prefix{topology.TenantSubnet, peer.Subnet})
	tn.Certificate = &v1alpha1.CertificateAuth{
		SecretName: "gateway-tls", PeerCA: v1alpha1.CARef{SecretName: ptr.To(caSecret)},
		LocalID: &v1alpha1.Identity{DN: ptr.To(gatewayDN)}, RemoteID: v1alpha1.Identity{DN: ptr.To(remoteDN)},
	}
	return tn
}

// certSheet is clientSheet for a site authenticating with its
// certificate (Peer.OpenSSLSite) and trusting the gateway's CA.
func certSheet(peer *topology.Peer, children ...topology.ClientChild) topology.ClientSheet {
	s := clientSheet(peer, "", children...)
	s.Certs, s.RemoteID = true, gatewayDN
	return s
}

// mustTunnelCert parses the material of a certificate tunnel as the
// provider does from its Secrets.
func mustTunnelCert(t *testing.T, gw topology.Issued, peerCA []byte) *render.TunnelCert {
	t.Helper()
	tc, err := render.ParseTunnelCert(gw.Cert, gw.Key, peerCA, v1alpha1.DefaultCAKey, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// TestAgentCertificates runs the agent with two certificate tunnels to two
// client sites, each with a PKI of its own made by openssl (UTF8String
// subjects): the gateway's certificate is Go-made (as cert-manager's), and
// every identity is a DN with several RDNs, the sites' with non-ASCII and
// escaped characters (',' and '+' in values). The tunnel to site 0 comes
// up and carries traffic; the tunnel to site 1 names site 0's CA as the
// peer's CA, and the published status says that site 1's certificate is
// not trusted while the site itself accepts the gateway, which presents its
// certificate's subject there (no localId). Then the gateway's
// certificate is rotated in the Secret (a new key, from the same CA): the
// agent loads it live, the established IKE SA stays up and carries
// traffic, and the reauthentication that follows presents the new
// certificate. No key, in PEM, DER or as rendered, appears in the
// mounted ConfigMap's files, the status, the agent's log or metrics or
// the gateway charon's log.
func TestAgentCertificates(t *testing.T) {
	topology.Need(t, "openssl")
	tp := topology.Start(t, topology.Options{Peers: 2})
	p0, p1 := tp.Peers[0], tp.Peers[1]
	// Site 0's subject: a ',' and a '+' in values, non-ASCII; escaped in
	// the tunnel's remoteId.
	const site0Subj, site0DN = `/C=CH/O=Zürich, Peer AG/OU=Net\+Ops/CN=vpn.peer0.example`, `C=CH, O=Zürich\, Peer AG, OU=Net\+Ops, CN=vpn.peer0.example`
	const site1Subj, site1DN = "/C=FR/O=Société Peer 1/CN=vpn.peer1.example", "C=FR, O=Société Peer 1, CN=vpn.peer1.example"
	ca0 := p0.OpenSSLSite(t, "/C=CH/O=Zürich, Peer AG/CN=Peer 0 Root CA", site0Subj)
	p1.OpenSSLSite(t, "/C=FR/O=Société Peer 1/CN=Peer 1 Root CA", site1Subj)

	gwCA := topology.NewCA(t, pkix.Name{Organization: []string{"Example AG"}, CommonName: "Example Gateway CA"})
	for _, p := range tp.Peers {
		p.TrustGateway(t, gwCA.Cert)
	}
	issued := gwCA.Issue(t, gatewaySubject, []string{"gw.example.com"}, time.Now().Add(-time.Minute), time.Now().Add(time.Hour), topology.SEC1)

	loadSheets(t, tp, certSheet(p0, tenantChild(p0)), certSheet(p1, tenantChild(p1)))

	// wrong-ca presents the certificate's subject by default (no localId).
	wrongCA := certTunnel("wrong-ca", p1, "site0-ca", site1DN)
	wrongCA.Certificate.LocalID = nil
	spec := tunnelGateway("agent-certs", v1alpha1.ModeRouted, certTunnel("site0", p0, "site0-ca", site0DN), wrongCA)
	certs := map[string]*render.TunnelCert{"site0": mustTunnelCert(t, issued, ca0), "wrong-ca": mustTunnelCert(t, issued, ca0)}
	start := time.Now()
	g := startAgentCerts(t, tp, spec, nil, certs, nil)
	site0Child := render.ChildName("site0", topology.TenantSubnet, p0.Subnet)
	got := g.waitTunnels(30*time.Second, "site0 up with certificates, wrong-ca reported untrusted", func(got map[string]v1alpha1.TunnelStatus) error {
		if err := up(map[string][]string{"site0": {site0Child}})(got); err != nil {
			return err
		}
		if e := got["wrong-ca"].LastError; e != status.ErrPeerCertificateUntrusted {
			return fmt.Errorf("tunnel wrong-ca has last error %q", e)
		}
		return nil
	})
	t.Logf("agent: mounted configuration to site0 ESTABLISHED and wrong-ca %s in the status ConfigMap in %v", got["wrong-ca"].LastError, time.Since(start).Round(time.Millisecond))
	if w := got["wrong-ca"]; w.IKEState == v1alpha1.IKEStateEstablished || w.Up {
		t.Errorf("tunnel wrong-ca is reported up: %+v", w)
	}
	ping(t, tp, "client host 0 → tenant service", p0.HostNS, topology.Service)
	if !strings.Contains(p1.Log(), "authentication of '"+gatewayDN+"' with ECDSA_WITH_SHA256_DER successful") {
		t.Errorf("site 1 did not authenticate the gateway by its certificate's subject (wrong-ca has no localId)")
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before := tp.Gateway.WaitSA(t, "site0", 5*time.Second, topology.Up(site0Child))
	if !strings.Contains(before.RemoteID, "vpn.peer0.example") || !strings.Contains(before.LocalID, "gw.example.com") {
		t.Errorf("IKE SA site0: local id %q, remote id %q: want the certificates' DNs", before.LocalID, before.RemoteID)
	}

	// Rotation: a new certificate with a new key, an RSA one (the first
	// is ECDSA), so that the sites' logs tell which one authenticated.
	rotated := gwCA.Issue(t, gatewaySubject, []string{"gw.example.com"}, time.Now().Add(-time.Minute), time.Now().Add(time.Hour), topology.PKCS8RSA)
	g.certs = map[string]*render.TunnelCert{"site0": mustTunnelCert(t, rotated, ca0), "wrong-ca": mustTunnelCert(t, rotated, ca0)}
	g.publish(spec, nil)
	rotatedAt := time.Now()
	eventually(t, 10*time.Second, "the rotated certificate loaded into the gateway's charon, with its key", func() error {
		return loadedCert(ctx, tp.Gateway.Dial(t), rotated)
	})
	t.Logf("rotated certificate loaded %v after the Secret changed", time.Since(rotatedAt).Round(time.Millisecond))
	time.Sleep(3 * time.Second)
	after := tp.Gateway.WaitSA(t, "site0", 5*time.Second, topology.Up(site0Child))
	if after.UniqueID != before.UniqueID {
		t.Errorf("the rotation replaced IKE SA site0 (unique id %s, now %s): it must stay until reauthentication", before.UniqueID, after.UniqueID)
	}
	ping(t, tp, "client host 0 → tenant service after the rotation", p0.HostNS, topology.Service)

	// Reauthentication presents the rotated certificate: site 0 verifies
	// an RSA signature.
	rsaAuths := strings.Count(p0.Log(), "CN=gw.example.com' with RSA_EMSA_PKCS1_SHA2_256 successful")
	if _, err := tp.Gateway.Swanctl(ctx, "--rekey", "--ike", "site0", "--reauth"); err != nil {
		t.Fatal(err)
	}
	reauth := tp.Gateway.WaitSA(t, "site0", 20*time.Second, func(sa topology.IKESA) bool {
		return sa.UniqueID != before.UniqueID && topology.Up(site0Child)(sa)
	})
	t.Logf("reauthenticated: IKE SA site0 unique id %s, was %s", reauth.UniqueID, before.UniqueID)
	eventually(t, 5*time.Second, "site 0 authenticated the gateway with the rotated certificate's RSA key", func() error {
		if n := strings.Count(p0.Log(), "CN=gw.example.com' with RSA_EMSA_PKCS1_SHA2_256 successful"); n != rsaAuths+1 {
			return fmt.Errorf("site 0 logged %d RSA authentications of the gateway, %d before the reauthentication", n, rsaAuths)
		}
		return nil
	})
	ping(t, tp, "client host 0 → tenant service after the reauthentication", p0.HostNS, topology.Service)

	// Neither key, in any form, anywhere a user or an operator can read.
	keys := map[string][]byte{}
	for name, is := range map[string]topology.Issued{"first": issued, "rotated": rotated} {
		keys[name+" (PEM)"] = is.Key
		b, _ := pem.Decode(is.Key)
		keys[name+" (DER, base64)"] = []byte(base64.StdEncoding.EncodeToString(b.Bytes))
		tc := mustTunnelCert(t, is, ca0)
		keys[name+" (rendered)"] = []byte(fmt.Sprintf("%x", tc.Key))
		keys[name+" (raw)"] = tc.Key
		keys[name+" (PEM body line)"] = []byte(strings.Split(string(is.Key), "\n")[1])
	}
	data, err := g.statusData()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{contract.KeySwanctlConf, contract.KeyNATRules} {
		b, err := os.ReadFile(filepath.Join(g.configDir, f))
		if err != nil {
			t.Fatal(err)
		}
		noSecret(t, "the mounted ConfigMap's "+f, string(b), keys)
		if strings.Contains(string(b), fmt.Sprintf("%x", rotated.Leaf.Raw)) {
			t.Errorf("the mounted ConfigMap's %s holds the gateway's certificate", f)
		}
	}
	noSecret(t, "the status ConfigMap", data, keys)
	noSecret(t, "the agent's log", g.logged(), keys)
	noSecret(t, "the agent's metrics", metricsText(t, g), keys)
	noSecret(t, "the gateway charon's log", tp.Gateway.Log(), keys)
}

// loadedCert says why charon (over sess) does not hold is's certificate
// with its private key, or nil when it does.
func loadedCert(ctx context.Context, sess *vici.Session, is topology.Issued) error {
	m := vici.NewMessage()
	if err := m.Set("type", "X509"); err != nil {
		return err
	}
	for ev, err := range sess.CallStreaming(ctx, "list-certs", "list-cert", m) {
		if err != nil {
			return err
		}
		if data, _ := ev.Get("data").(string); data == string(is.Leaf.Raw) {
			if ev.Get("has_privkey") != "yes" {
				return fmt.Errorf("charon holds the certificate without its private key")
			}
			return nil
		}
	}
	return fmt.Errorf("charon does not hold the certificate")
}
