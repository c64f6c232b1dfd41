package render

import (
	"cmp"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

var certNow = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)

// testCert signs a certificate for key's public key (self-signed when
// parent is nil) and returns it, parsed.
func testCert(t *testing.T, subject pkix.Name, isCA bool, notAfter time.Time, key crypto.Signer, parent *x509.Certificate, parentKey crypto.Signer) *x509.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: subject, DNSNames: []string{"gw.example.com"}, IPAddresses: []net.IP{net.ParseIP("203.0.113.10")},
		NotBefore: certNow.Add(-time.Hour), NotAfter: notAfter, IsCA: isCA, BasicConstraintsValid: true}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c
}

func pemOf(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func TestParseTunnelCert(t *testing.T) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := testCert(t, pkix.Name{CommonName: "CA"}, true, certNow.Add(time.Hour), caKey, nil, nil)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	gw := pkix.Name{Country: []string{"DE"}, CommonName: "gw.example.com"}
	ecCert := testCert(t, gw, false, certNow.Add(time.Hour), ecKey, ca, caKey)
	rsaCert := testCert(t, gw, false, certNow.Add(time.Hour), rsaKey, ca, caKey)
	expired := testCert(t, gw, false, certNow.Add(-time.Minute), ecKey, ca, caKey)
	edCert := testCert(t, gw, false, certNow.Add(time.Hour), edKey, ca, caKey)
	sec1, _ := x509.MarshalECPrivateKey(ecKey)
	pkcs8EC, _ := x509.MarshalPKCS8PrivateKey(ecKey)
	pkcs8RSA, _ := x509.MarshalPKCS8PrivateKey(rsaKey)
	pkcs8Ed, _ := x509.MarshalPKCS8PrivateKey(edKey)
	otherKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := x509.MarshalECPrivateKey(otherKey)
	chain := append(pemOf("CERTIFICATE", ecCert.Raw), pemOf("CERTIFICATE", ca.Raw)...)
	caPEM := pemOf("CERTIFICATE", ca.Raw)

	cases := map[string]struct {
		reason       string
		crt, key, ca []byte
		wantType     string
		wantChain    int
		// wantErr is a part of the error, and wantKey the key it names.
		wantErr, wantKey string
	}{
		"SEC1":         {reason: "cert-manager's ECDSA key (SEC 1), with its chain: the intermediates are kept.", crt: chain, key: pemOf("EC PRIVATE KEY", sec1), ca: caPEM, wantType: KeyTypeECDSA, wantChain: 1},
		"PKCS8EC":      {reason: "An ECDSA key in PKCS#8.", crt: chain, key: pemOf("PRIVATE KEY", pkcs8EC), ca: caPEM, wantType: KeyTypeECDSA, wantChain: 1},
		"PKCS1":        {reason: "An RSA key in PKCS#1.", crt: pemOf("CERTIFICATE", rsaCert.Raw), key: pemOf("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey)), ca: caPEM, wantType: KeyTypeRSA},
		"PKCS8RSA":     {reason: "An RSA key in PKCS#8 (cert-manager's encoding PKCS8).", crt: pemOf("CERTIFICATE", rsaCert.Raw), key: pemOf("PRIVATE KEY", pkcs8RSA), ca: caPEM, wantType: KeyTypeRSA},
		"Mismatch":     {reason: "A key that is not the certificate's.", crt: chain, key: pemOf("EC PRIVATE KEY", other), ca: caPEM, wantErr: "does not match the certificate", wantKey: KeyTLSKey},
		"Expired":      {reason: "An expired certificate is named with its expiry.", crt: pemOf("CERTIFICATE", expired.Raw), key: pemOf("EC PRIVATE KEY", sec1), ca: caPEM, wantErr: "expired at", wantKey: KeyTLSCert},
		"NoCert":       {reason: "tls.crt without a certificate.", crt: []byte("garbage"), key: pemOf("EC PRIVATE KEY", sec1), ca: caPEM, wantErr: "holds no PEM certificate", wantKey: KeyTLSCert},
		"KeyInCert":    {reason: "A key pasted into tls.crt.", crt: pemOf("EC PRIVATE KEY", sec1), key: pemOf("EC PRIVATE KEY", sec1), ca: caPEM, wantErr: "only CERTIFICATE blocks", wantKey: KeyTLSCert},
		"Encrypted":    {reason: "An encrypted key cannot be loaded unattended.", crt: chain, key: pemOf("ENCRYPTED PRIVATE KEY", []byte{1}), ca: caPEM, wantErr: "encrypted", wantKey: KeyTLSKey},
		"Ed25519":      {reason: "Ed25519 is refused with the algorithms to use.", crt: pemOf("CERTIFICATE", edCert.Raw), key: pemOf("PRIVATE KEY", pkcs8Ed), ca: caPEM, wantErr: "use an RSA or ECDSA key", wantKey: KeyTLSKey},
		"NoCA":         {reason: "An empty CA bundle.", crt: chain, key: pemOf("EC PRIVATE KEY", sec1), ca: []byte("\n"), wantErr: "holds no PEM certificate", wantKey: "ca.crt"},
		"PeerCertAsCA": {reason: "The peer's own certificate given as its CA.", crt: chain, key: pemOf("EC PRIVATE KEY", sec1), ca: pemOf("CERTIFICATE", ecCert.Raw), wantErr: "is not a CA certificate", wantKey: "ca.crt"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseTunnelCert(tc.crt, tc.key, tc.ca, "ca.crt", certNow)
			if tc.wantErr != "" {
				var ce *CertError
				if !errors.As(err, &ce) || ce.Key != tc.wantKey || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s\nParseTunnelCert: error %v, want one naming key %s with %q", tc.reason, err, tc.wantKey, tc.wantErr)
				}
				for _, k := range [][]byte{sec1, other, pkcs8Ed} {
					if strings.Contains(err.Error(), string(pemOf("EC PRIVATE KEY", k))) || strings.Contains(err.Error(), string(k)) {
						t.Errorf("%s\nthe error holds a key", tc.reason)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nParseTunnelCert: %v", tc.reason, err)
			}
			if got.KeyType != tc.wantType || len(got.Chain) != tc.wantChain || len(got.CAs) != 1 {
				t.Errorf("%s\ngot key type %s, %d intermediates, %d CAs", tc.reason, got.KeyType, len(got.Chain), len(got.CAs))
			}
		})
	}
}

func TestCheckCertIdentities(t *testing.T) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := testCert(t, pkix.Name{CommonName: "CA"}, true, certNow.Add(time.Hour), caKey, nil, nil)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	cert := testCert(t, pkix.Name{Country: []string{"DE"}, Organization: []string{"Example AG"}, CommonName: "gw.example.com"}, false, certNow.Add(time.Hour), key, ca, caKey)
	tc := &TunnelCert{Cert: cert}
	noSubject := &TunnelCert{Cert: testCert(t, pkix.Name{}, false, certNow.Add(time.Hour), key, ca, caKey)}
	remote := v1alpha1.Identity{FQDN: ptr.To("peer.example")}
	cases := map[string]struct {
		reason string
		// cert replaces tc when given.
		cert      *TunnelCert
		local     *v1alpha1.Identity
		peerID    string
		wantLocal string
		wantErr   string
	}{
		"Subject":             {reason: "The certificate's subject, typed: rendered as the certificate's own DER.", local: &v1alpha1.Identity{DN: ptr.To("C=DE, O=Example AG, CN=gw.example.com")}, wantLocal: asn1dn(cert.RawSubject)},
		"Default":             {reason: "No localId: the certificate's subject, rendered by certAuth.", wantLocal: ""},
		"Reversed":            {reason: "An RFC 4514 string (reversed) is refused with the order to use.", local: &v1alpha1.Identity{DN: ptr.To("CN=gw.example.com, O=Example AG, C=DE")}, wantErr: "reverse order"},
		"OtherDN":             {reason: "Another DN is refused with the certificate's subject.", local: &v1alpha1.Identity{DN: ptr.To("C=DE, CN=gw.example.com")}, wantErr: `is not the subject of the certificate in Secret gw-tls ("C=DE, O=Example AG, CN=gw.example.com")`},
		"FQDN":                {reason: "A DNS name of the subjectAltName.", local: &v1alpha1.Identity{FQDN: ptr.To("gw.example.com")}, wantLocal: "gw.example.com"},
		"NoFQDN":              {reason: "A DNS name the certificate lacks.", local: &v1alpha1.Identity{FQDN: ptr.To("vpn.example.com")}, wantErr: "not a DNS name in the subjectAltName"},
		"NoEmail":             {reason: "An email address the certificate lacks.", local: &v1alpha1.Identity{Email: ptr.To("vpn@example.com")}, wantErr: "not an email address in the subjectAltName"},
		"Two":                 {reason: "Two kinds of identity at once.", local: &v1alpha1.Identity{FQDN: ptr.To("gw.example.com"), Email: ptr.To("a@b.example")}, wantErr: "exactly one of dn, fqdn, email and ip"},
		"IP":                  {reason: "An IP address of the subjectAltName (the floating IP), rendered as the dotted quad charon takes for an IP identity.", local: &v1alpha1.Identity{IP: ptr.To[v1alpha1.IPv4]("203.0.113.10")}, wantLocal: "203.0.113.10"},
		"NoIP":                {reason: "An IP address the certificate's subjectAltName lacks is refused, not presented for the peer to refuse.", local: &v1alpha1.Identity{IP: ptr.To[v1alpha1.IPv4]("203.0.113.11")}, wantErr: "203.0.113.11 is not an IP address in the subjectAltName of the certificate in Secret gw-tls ([203.0.113.10])"},
		"EmptySubjectDefault": {reason: "No localId and a certificate with an empty subject (cert-manager's without commonName): the gateway would present an empty DN; refused with the certificate's subjectAltNames to pick from.", cert: noSubject, wantErr: "has an empty subject, the identity the gateway presents when localId is left out: set localId to one of its subjectAltNames (DNS [gw.example.com], email [], IP [203.0.113.10])"},
		"EmptySubjectFQDN":    {reason: "A certificate with an empty subject serves with a subjectAltName as localId.", cert: noSubject, local: &v1alpha1.Identity{FQDN: ptr.To("gw.example.com")}, wantLocal: "gw.example.com"},
		"PeerID":              {reason: "peer.id beside certificate.", peerID: "peer.example", wantErr: "remove peer.id"},
	}
	for name, tc2 := range cases {
		t.Run(name, func(t *testing.T) {
			var errs Errors
			tn := v1alpha1.Tunnel{Name: "t", Peer: v1alpha1.Peer{Address: "198.51.100.7", ID: tc2.peerID},
				Certificate: &v1alpha1.CertificateAuth{SecretName: "gw-tls", LocalID: tc2.local, RemoteID: remote}}
			local, rem := checkCert(&errs, field.NewPath("tunnels").Key("t"), tn, cmp.Or(tc2.cert, tc))
			err := errs.err()
			if tc2.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc2.wantErr) {
					t.Fatalf("%s\ncheckCert: %v, want %q", tc2.reason, err, tc2.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\ncheckCert: %v", tc2.reason, err)
			}
			if local != tc2.wantLocal || rem != "peer.example" {
				t.Errorf("%s\ncheckCert = %q, %q", tc2.reason, local, rem)
			}
		})
	}
}
