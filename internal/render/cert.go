package render

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// Keys of a Secret of type kubernetes.io/tls.
const (
	KeyTLSCert = "tls.crt"
	KeyTLSKey  = "tls.key"
)

// Private key types of a TunnelCert, as VICI's load-key names them.
const (
	KeyTypeRSA   = "rsa"
	KeyTypeECDSA = "ecdsa"
)

// A TunnelCert is the X.509 material of a tunnel with certificate
// authentication, parsed and checked by ParseTunnelCert.
type TunnelCert struct {
	// Cert is the gateway's certificate.
	Cert *x509.Certificate
	// Chain are the intermediate CA certificates that followed it in
	// tls.crt, DER, in their order.
	Chain [][]byte
	// KeyType is KeyTypeRSA or KeyTypeECDSA; Key the private key, DER:
	// PKCS#1 for RSA, SEC 1 for ECDSA, the forms strongSwan's pkcs1 and
	// openssl plugins load whatever form tls.key had.
	KeyType string
	Key     []byte
	// CAs are the CA certificates that sign the peer's certificate.
	CAs []*x509.Certificate
}

// A CertError is a problem with one key of a Secret or ConfigMap of a
// certificate tunnel; its message says what is wrong and how to fix it,
// never a key's bytes.
type CertError struct {
	// Key is the key at fault: tls.crt, tls.key or the CA key.
	Key string
	// Err says what is wrong.
	Err error
}

func (e *CertError) Error() string { return fmt.Sprintf("key %s: %v", e.Key, e.Err) }

// Unwrap returns the reason.
func (e *CertError) Unwrap() error { return e.Err }

// ParseTunnelCert parses tls.crt (crt: the gateway's certificate, then
// any intermediates, PEM), tls.key (key: its private key, PEM, PKCS#1,
// PKCS#8 or SEC 1) and the peer's CA certificates (ca, PEM, from key caKey)
// and checks them at now: the key is the certificate's, every certificate
// is valid now, every CA certificate is a CA. It returns a *CertError
// naming the key at fault and the fix.
func ParseTunnelCert(crt, key, ca []byte, caKey string, now time.Time) (*TunnelCert, error) {
	certs, err := pemCerts(crt)
	if err != nil {
		return nil, &CertError{Key: KeyTLSCert, Err: err}
	}
	tc := &TunnelCert{Cert: certs[0]}
	for _, c := range certs[1:] {
		tc.Chain = append(tc.Chain, c.Raw)
	}
	for i, c := range certs {
		if err := validAt(c, now); err != nil {
			return nil, &CertError{Key: KeyTLSCert, Err: fmt.Errorf("certificate %d (%s): %w: renew it (cert-manager renews before expiry when the Certificate's renewBefore allows)", i+1, dnString(c.RawSubject), err)}
		}
	}
	if tc.KeyType, tc.Key, err = privateKey(key, tc.Cert.PublicKey); err != nil {
		return nil, &CertError{Key: KeyTLSKey, Err: err}
	}
	if tc.CAs, err = pemCerts(ca); err != nil {
		return nil, &CertError{Key: caKey, Err: err}
	}
	for _, c := range tc.CAs {
		if !c.IsCA {
			return nil, &CertError{Key: caKey, Err: fmt.Errorf("certificate %s is not a CA certificate (no basicConstraints CA:TRUE): give the CA that signs the peer's certificate, not the peer's certificate itself", dnString(c.RawSubject))}
		}
		if err := validAt(c, now); err != nil {
			return nil, &CertError{Key: caKey, Err: fmt.Errorf("CA certificate %s: %w: get the CA's current certificate from the peer", dnString(c.RawSubject), err)}
		}
	}
	return tc, nil
}

// pemCerts parses every CERTIFICATE block of data, in order; at least one.
func pemCerts(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("holds a PEM block of type %q: only CERTIFICATE blocks belong here", b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d does not parse: %w", len(out)+1, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
	}
	return out, nil
}

// validAt says why c is not valid at now, or nil.
func validAt(c *x509.Certificate, now time.Time) error {
	switch {
	case now.Before(c.NotBefore):
		return fmt.Errorf("is not valid before %s", c.NotBefore.UTC().Format(time.RFC3339))
	case now.After(c.NotAfter):
		return fmt.Errorf("expired at %s", c.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

// privateKey parses the one private key of data (PEM: PKCS#1, PKCS#8 or
// SEC 1), checks that it is pub's and returns it as load-key takes it.
func privateKey(data []byte, pub crypto.PublicKey) (string, []byte, error) {
	b, _ := pem.Decode(data)
	if b == nil {
		return "", nil, errors.New("holds no PEM private key (-----BEGIN PRIVATE KEY-----)")
	}
	if _, encrypted := b.Headers["Proc-Type"]; encrypted || b.Type == "ENCRYPTED PRIVATE KEY" {
		return "", nil, errors.New("holds an encrypted private key: store it unencrypted, as cert-manager does")
	}
	var k any
	var err error
	switch b.Type {
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(b.Bytes)
	case "PRIVATE KEY":
		k, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	default:
		return "", nil, fmt.Errorf("holds a PEM block of type %q, not a private key", b.Type)
	}
	if err != nil {
		return "", nil, fmt.Errorf("the private key does not parse: %w", err)
	}
	switch k := k.(type) {
	case *rsa.PrivateKey:
		if !k.PublicKey.Equal(pub) {
			return "", nil, errMismatch
		}
		return KeyTypeRSA, x509.MarshalPKCS1PrivateKey(k), nil
	case *ecdsa.PrivateKey:
		if !k.PublicKey.Equal(pub) {
			return "", nil, errMismatch
		}
		der, err := x509.MarshalECPrivateKey(k)
		return KeyTypeECDSA, der, err
	default:
		return "", nil, fmt.Errorf("holds a %T key: use an RSA or ECDSA key (cert-manager: privateKey.algorithm RSA or ECDSA)", k)
	}
}

// errMismatch: tls.key and tls.crt are not a pair.
var errMismatch = errors.New("the private key does not match the certificate in tls.crt (its public key differs): put the key the certificate was issued for, or the certificate of this key, first in tls.crt")

// checkCert checks tunnel t's certificate settings against its parsed
// material tc (nil when the tunnel has none) and returns the local and
// remote identities to render.
func checkCert(errs *Errors, path *field.Path, t v1alpha1.Tunnel, tc *TunnelCert) (local, remote string) {
	path = path.Child("certificate")
	ca := t.Certificate
	if tc == nil {
		errs.add(path, "the certificate, key and CA certificates were not read")
		return "", ""
	}
	local = checkLocalID(errs, path.Child("localId"), ca, tc)
	remote = identity(errs, path.Child("remoteId"), ca.RemoteID)
	if t.Peer.ID != "" {
		errs.add(path, "with certificate the peer's identity is certificate.remoteId: remove peer.id")
	}
	return local, remote
}

// checkLocalID checks certificate tunnel ca's local identity (at path)
// against its certificate tc.Cert, which must hold it (or, when none is
// given, have a subject to present), and returns it to render: "" for the
// certificate's subject.
func checkLocalID(errs *Errors, path *field.Path, ca *v1alpha1.CertificateAuth, tc *TunnelCert) string {
	if ca.LocalID == nil {
		if rs, err := rdns(tc.Cert.RawSubject); err == nil && len(rs) == 0 {
			errs.add(path, "the certificate in Secret %s has an empty subject, the identity the gateway presents when localId is left out: set localId to one of its subjectAltNames (DNS %v, email %v, IP %v)", ca.SecretName, tc.Cert.DNSNames, tc.Cert.EmailAddresses, tc.Cert.IPAddresses)
		}
		return ""
	}
	local := identity(errs, path, *ca.LocalID)
	switch id := *ca.LocalID; {
	case id.DN != nil && local != "":
		der, _ := parseDN(*id.DN)
		switch {
		case sameDN(der, tc.Cert.RawSubject):
			// The certificate's own encoding: charon finds it byte
			// for byte.
			local = asn1dn(tc.Cert.RawSubject)
		case reversedDN(der, tc.Cert.RawSubject):
			errs.add(path.Child("dn"), "lists the attributes in the reverse order of the certificate's subject %q: write them in that order", dnString(tc.Cert.RawSubject))
		default:
			errs.add(path.Child("dn"), "is not the subject of the certificate in Secret %s (%q): give that subject, or leave localId out to present it", ca.SecretName, dnString(tc.Cert.RawSubject))
		}
	case id.FQDN != nil && !slices.Contains(tc.Cert.DNSNames, *id.FQDN):
		errs.add(path.Child("fqdn"), "%q is not a DNS name in the subjectAltName of the certificate in Secret %s (%v): charon could not prove it", *id.FQDN, ca.SecretName, tc.Cert.DNSNames)
	case id.Email != nil && !slices.Contains(tc.Cert.EmailAddresses, *id.Email):
		errs.add(path.Child("email"), "%q is not an email address in the subjectAltName of the certificate in Secret %s (%v): charon could not prove it", *id.Email, ca.SecretName, tc.Cert.EmailAddresses)
	case id.IP != nil && local != "" && !slices.ContainsFunc(tc.Cert.IPAddresses, func(a net.IP) bool { return a.String() == local }):
		errs.add(path.Child("ip"), "%s is not an IP address in the subjectAltName of the certificate in Secret %s (%v): charon could not prove it, and the peer would refuse the gateway; issue the certificate with it (cert-manager: spec.ipAddresses)", local, ca.SecretName, tc.Cert.IPAddresses)
	}
	return local
}

// identity checks id and returns it as swanctl's id takes it: a DN as
// asn1dn:#<DER in hex>, a DNS name, email address or IPv4 address as it
// is (charon takes a dotted quad for an IP identity).
func identity(errs *Errors, path *field.Path, id v1alpha1.Identity) string {
	n := 0
	var out string
	if id.DN != nil {
		n++
		der, err := parseDN(*id.DN)
		if err != nil {
			errs.add(path.Child("dn"), "%q %v", *id.DN, err)
		} else {
			out = asn1dn(der)
		}
	}
	if id.FQDN != nil {
		n++
		if _, err := netip.ParseAddr(*id.FQDN); err == nil || !fqdn.MatchString(*id.FQDN) {
			errs.add(path.Child("fqdn"), "%q is not a DNS name", *id.FQDN)
		}
		out = *id.FQDN
	}
	if id.Email != nil {
		n++
		if !email.MatchString(*id.Email) {
			errs.add(path.Child("email"), "%q is not an email address such as vpn@example.com", *id.Email)
		}
		out = *id.Email
	}
	if id.IP != nil {
		n++
		if a := ipv4(errs, path.Child("ip"), string(*id.IP)); a.IsValid() {
			out = a.String()
		}
	}
	if n != 1 {
		errs.add(path, "give exactly one of dn, fqdn, email and ip")
		return ""
	}
	return out
}

// asn1dn is the swanctl id of the DER name der: strongSwan parses
// "asn1dn:#<hex>" as that exact encoding.
func asn1dn(der []byte) string {
	return fmt.Sprintf("asn1dn:#%x", der)
}
