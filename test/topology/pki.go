package topology

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// A CA issues certificates with Go's crypto/x509, as cert-manager's CA
// issuer does: a subject's strings are PrintableStrings where they fit,
// UTF8Strings otherwise, its attributes in pkix.Name's fixed order (C, ST,
// L, O, OU, CN).
type CA struct {
	// Cert is the CA's certificate, PEM (a Secret's ca.crt).
	Cert []byte
	cert *x509.Certificate
	key  crypto.Signer
}

// An Issued is a certificate and its key as a Secret of type
// kubernetes.io/tls holds them: tls.crt (the certificate, then the CA's, as
// cert-manager writes a chain) and tls.key.
type Issued struct {
	// Cert is tls.crt, Key tls.key, both PEM.
	Cert, Key []byte
	// Leaf is the certificate.
	Leaf *x509.Certificate
}

// KeyForm is how an Issued's key is written: PKCS1 (RSA), PKCS8 (RSA, as
// cert-manager's encoding PKCS8) or SEC1 (ECDSA, cert-manager's default
// for ECDSA keys).
type KeyForm int

// Key forms of Issue.
const (
	PKCS1 KeyForm = iota
	PKCS8RSA
	PKCS8EC
	SEC1
)

var serial int64

// NewCA makes a self-signed CA named subject, valid for a day around now.
func NewCA(t testing.TB, subject pkix.Name) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{Cert: pemBlock("CERTIFICATE", der), cert: cert, key: key}
}

// Issue signs a certificate for subject, with dnsNames as subjectAltNames
// (an entry that is an IP address as an iPAddress), valid from notBefore
// to notAfter, its key written in form.
func (ca *CA) Issue(t testing.TB, subject pkix.Name, dnsNames []string, notBefore, notAfter time.Time, form KeyForm) Issued {
	t.Helper()
	var key crypto.Signer
	var err error
	if form == PKCS1 || form == PKCS8RSA {
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	} else {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	var dns []string
	var ips []net.IP
	for _, n := range dnsNames {
		if ip := net.ParseIP(n); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, n)
		}
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: subject, DNSNames: dns, IPAddresses: ips,
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	var keyPEM []byte
	switch form {
	case PKCS1:
		keyPEM = pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key.(*rsa.PrivateKey)))
	case SEC1:
		b, _ := x509.MarshalECPrivateKey(key.(*ecdsa.PrivateKey))
		keyPEM = pemBlock("EC PRIVATE KEY", b)
	default:
		b, _ := x509.MarshalPKCS8PrivateKey(key)
		keyPEM = pemBlock("PRIVATE KEY", b)
	}
	return Issued{Cert: append(pemBlock("CERTIFICATE", der), ca.Cert...), Key: keyPEM, Leaf: leaf}
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// OpenSSLSite makes a client site's PKI with the openssl command, as a
// site's administrator would, independently of Go's encoding: a CA named
// caSubj and a certificate for subj signed by it (openssl's -subj syntax,
// "/C=CH/O=Peer AG/CN=vpn"; values UTF-8, encoded as UTF8Strings; '+'
// joins the attributes of a multi-valued RDN, "\+" is a '+' in a value), an
// ECDSA P-256 key each, valid for a day. It writes them into the peer's
// swanctl directories (see Charon.LoadFile) as x509/site.pem (certificate),
// private/site.pem (key) and x509ca/site-ca.pem, and returns the CA's
// certificate, PEM.
func (p *Peer) OpenSSLSite(t testing.TB, caSubj, subj string) []byte {
	t.Helper()
	dir := filepath.Join(p.Dir, "swanctl")
	for _, d := range []string{"x509", "x509ca", "private"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	tmp := t.TempDir()
	ca, caKey := filepath.Join(dir, "x509ca", "site-ca.pem"), filepath.Join(tmp, "ca.key")
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("openssl", args...).CombinedOutput(); err != nil {
			t.Fatalf("openssl %v: %v\n%s", args, err, out)
		}
	}
	run("req", "-x509", "-utf8", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
		"-subj", caSubj, "-keyout", caKey, "-out", ca,
		"-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
	key, csr := filepath.Join(dir, "private", "site.pem"), filepath.Join(tmp, "site.csr")
	run("req", "-new", "-utf8", "-multivalue-rdn", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
		"-subj", subj, "-keyout", key, "-out", csr)
	ext := filepath.Join(tmp, "ext.cnf")
	if err := os.WriteFile(ext, []byte("basicConstraints = CA:FALSE\nkeyUsage = digitalSignature\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", caKey, "-CAcreateserial", "-CAserial", filepath.Join(tmp, "ca.srl"), "-days", "1",
		"-extfile", ext, "-out", filepath.Join(dir, "x509", "site.pem"))
	data, err := os.ReadFile(ca)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TrustGateway writes the CA of the gateway's certificate (PEM) as the
// peer's x509ca/gateway-ca.pem.
func (p *Peer) TrustGateway(t testing.TB, caPEM []byte) {
	t.Helper()
	dir := filepath.Join(p.Dir, "swanctl", "x509ca")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gateway-ca.pem"), caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
}
