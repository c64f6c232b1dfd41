package migrate

import (
	"io/fs"
	"path"
	"strings"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// The directories of ipsec.d that certificates and keys are read from,
// relative to the directory of ipsec.conf.
const (
	dirCerts   = "ipsec.d/certs"
	dirCACerts = "ipsec.d/cacerts"
	dirPrivate = "ipsec.d/private"
)

// localAddress is the address charon bound the conn to and, without
// leftid, presented as its identity: left's address, or for
// %defaultroute and %any the VM's address on its default route (the
// importer's --vm-address).
func (im *importer) localAddress(c Conn) string {
	switch l := c.Get("left", anyID); l {
	case "%defaultroute", anyID, "%any4":
		return im.opts.VMAddress
	default:
		return l
	}
}

// strokeAuth converts authby/leftauth/rightauth, the identities and the
// credentials; false drops the tunnel.
func (im *importer) strokeAuth(c Conn, t *gwv1alpha1.Tunnel, add func(Finding)) bool {
	auth := c.Get("authby", "pubkey")
	if c.Has("leftauth") {
		auth = c.Get("leftauth", "")
	}
	if r := c.Get("rightauth", auth); r != auth && (!isPSK(r) || !isPSK(auth)) {
		add(Finding{Setting: "rightauth", Value: r, Outcome: Refused, Drops: true, From: c.Settings["rightauth"].From,
			Detail: "both sides authenticate the same way in the API (a PSK or certificates)"})
		return false
	}
	switch {
	case isPSK(auth):
		return im.strokePSK(c, t, add)
	case auth == "pubkey" || auth == "rsasig" || auth == "ecdsasig" || auth == "rsa" || auth == "ecdsa":
		return im.strokeCert(c, t, add)
	default:
		add(Finding{Setting: "authby", Value: auth, Outcome: Refused, Drops: true, From: c.Settings["authby"].From,
			Detail: "only pre-shared keys and certificates are in the API (XAUTH, EAP and authby=never are not)"})
		return false
	}
}

func isPSK(a string) bool { return a == "psk" || a == "secret" }

func (im *importer) strokePSK(c Conn, t *gwv1alpha1.Tunnel, add func(Finding)) bool {
	add(Finding{Setting: "authby", Value: c.Get("authby", ""), Outcome: Converted, From: c.Settings["authby"].From, Detail: "a pre-shared key"})
	local := im.localIdentity(c, add)
	right := c.Get("right", "")
	remote := c.Get(kwRightID, right)
	k, v := parseID(remote)
	switch {
	case !c.Has(kwRightID):
		add(Finding{Setting: kwRightID, Value: remote, Outcome: Converted, Detail: "the peer's address, as charon expected it (peer.id left out)"})
	case v == right:
		add(Finding{Setting: kwRightID, Value: remote, Outcome: Converted, From: c.Settings[kwRightID].From, Detail: "the peer's address (peer.id left out)"})
	case (k == idIPv4 || k == idFQDN || k == idEmail) && peerIDPattern.MatchString(v):
		t.Peer.ID = v
		add(Finding{Setting: kwRightID, Value: remote, Outcome: Converted, From: c.Settings[kwRightID].From, Detail: "peer.id " + v + " (" + string(k) + ")"})
	default:
		add(Finding{Setting: kwRightID, Value: remote, Outcome: Refused, From: c.Settings[kwRightID].From,
			Detail: "the API's peer.id takes an IPv4 address, a DNS name or user@domain, not " + string(k) + ": the gateway expects the peer's address, and a peer presenting this identity fails IKE_AUTH (waits on the API: identities it refuses)"})
	}
	t.Peer.Address = right
	i := SelectPSK(im.secrets, local, remote)
	if i < 0 {
		add(Finding{Setting: "ipsec.secrets", Outcome: Refused, Drops: true,
			Detail: "no PSK entry of ipsec.secrets matches " + local + " and " + remote + ": charon had no key for this conn"})
		return false
	}
	s := im.secrets[i]
	add(Finding{Setting: "ipsec.secrets", Value: "PSK for " + strings.Join(s.IDs, " "), Outcome: Converted, From: s.From,
		Detail: "the PSK charon picks for " + local + " and " + remote + " (best match of the peer's identity, then the local one, then the later in the file), into Secret " + im.pskSecretName() + " key " + t.Name})
	im.psks[t.Name] = s.Value
	t.PreSharedKeySecretRef = pskRef(im.pskSecretName(), t.Name)
	return true
}

// localIdentity reports the identity the VM presented and returns it. The
// gateway presents its floating IP with a PSK (the API has no local
// identity for PSK tunnels): anything else is refused, never silently
// replaced.
func (im *importer) localIdentity(c Conn, add func(Finding)) string {
	addr := im.localAddress(c)
	id, from := c.Get(kwLeftID, addr), c.Settings[kwLeftID].From
	_, v := parseID(id)
	switch v {
	case "":
		add(Finding{Setting: kwLeftID, Outcome: Refused, Detail: "left is " + c.Get("left", anyID) + ": the VM presented its address on the default route, unknown here; give it with --vm-address"})
	case im.opts.FloatingIP:
		add(Finding{Setting: kwLeftID, Value: id, Outcome: Converted, From: from, Detail: "the floating IP, which the gateway presents"})
	default:
		how := kwLeftID
		if !c.Has(kwLeftID) {
			how = "no leftid: charon presented left's address"
		}
		add(Finding{Setting: kwLeftID, Value: id, Outcome: Refused, From: from,
			Detail: how + ", " + v + "; the gateway presents its floating IP " + im.opts.FloatingIP + " (the API has no other local identity for a PSK tunnel): a peer that checks the identity it was given for years (rightid, a peer ID) fails IKE_AUTH at cutover until it accepts " + im.opts.FloatingIP})
	}
	return v
}

func (im *importer) strokeCert(c Conn, t *gwv1alpha1.Tunnel, add func(Finding)) bool {
	t.Peer.Address = c.Get("right", "")
	cert := c.Get("leftcert", "")
	if cert == "" {
		add(Finding{Setting: "leftcert", Outcome: Refused, Drops: true, Detail: "authby pubkey without leftcert: the VM's certificate is unknown"})
		return false
	}
	crt, err := fs.ReadFile(im.fsys, path.Join(im.dir, dirCerts, path.Base(cert)))
	if err != nil {
		add(Finding{Setting: "leftcert", Value: cert, Outcome: Refused, Drops: true, From: c.Settings["leftcert"].From, Detail: "cannot read it from " + dirCerts + ": " + err.Error()})
		return false
	}
	var key []byte
	for _, s := range im.secrets {
		if s.Type == "RSA" || s.Type == "ECDSA" || s.Type == "PKCS8" {
			if key, err = fs.ReadFile(im.fsys, path.Join(im.dir, dirPrivate, path.Base(string(s.Value)))); err == nil {
				break
			}
		}
	}
	if key == nil {
		add(Finding{Setting: "ipsec.secrets", Outcome: Refused, Drops: true, Detail: "no RSA/ECDSA entry names a readable key in " + dirPrivate})
		return false
	}
	ca, err := im.caBundle()
	if err != nil || len(ca) == 0 {
		add(Finding{Setting: "rightca", Outcome: Refused, Drops: true, Detail: "no CA certificate in " + dirCACerts + " to check the peer's certificate"})
		return false
	}
	secret := im.opts.Name + "-" + t.Name + "-tls"
	caName := im.opts.Name + "-peer-ca"
	t.Certificate = &gwv1alpha1.CertificateAuth{SecretName: secret, PeerCA: gwv1alpha1.CARef{SecretName: &caName}}
	add(Finding{Setting: "leftcert", Value: cert, Outcome: Converted, From: c.Settings["leftcert"].From,
		Detail: "certificate and key into Secret " + secret + " (kubernetes.io/tls), the CAs of " + dirCACerts + " into Secret " + caName})
	if c.Has(kwLeftID) {
		if id := certIdentity(c.Get(kwLeftID, "")); id != nil {
			t.Certificate.LocalID = id
			add(Finding{Setting: kwLeftID, Value: c.Get(kwLeftID, ""), Outcome: Converted, From: c.Settings[kwLeftID].From})
		} else {
			add(Finding{Setting: kwLeftID, Value: c.Get(kwLeftID, ""), Outcome: Refused, From: c.Settings[kwLeftID].From,
				Detail: "certificate.localId takes a DN, DNS name or email only: the gateway presents its certificate's subject DN, and a peer expecting this identity fails IKE_AUTH (waits on the API: an IP identity with certificates)"})
		}
	} else {
		add(Finding{Setting: kwLeftID, Outcome: Converted, Detail: "the certificate's subject DN, as charon presented it"})
	}
	remote := certIdentity(c.Get(kwRightID, ""))
	if remote == nil {
		add(Finding{Setting: kwRightID, Value: c.Get(kwRightID, c.Get("right", "")), Outcome: Refused, Drops: true, From: c.Settings[kwRightID].From,
			Detail: "certificate.remoteId takes a DN, DNS name or email; the VM expected the peer's address or %any, which the API cannot check (waits on the API: identities it refuses)"})
		return false
	}
	t.Certificate.RemoteID = *remote
	im.tls[secret] = [2][]byte{crt, key}
	im.ca = ca
	add(Finding{Setting: kwRightID, Value: c.Get(kwRightID, ""), Outcome: Converted, From: c.Settings[kwRightID].From})
	return true
}

// caBundle concatenates the CA certificates of ipsec.d/cacerts.
func (im *importer) caBundle() ([]byte, error) {
	entries, err := fs.ReadDir(im.fsys, path.Join(im.dir, dirCACerts))
	if err != nil {
		return nil, err
	}
	var out []byte
	for _, e := range entries {
		b, err := fs.ReadFile(im.fsys, path.Join(im.dir, dirCACerts, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}
