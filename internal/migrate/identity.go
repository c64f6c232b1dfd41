package migrate

import (
	"net/netip"
	"regexp"
	"strings"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// An idKind is the form of an IKE identity as charon parses it from a
// string (identification_create_from_string).
type idKind string

const (
	idAny   idKind = "any"   // %any: any identity
	idIPv4  idKind = "ipv4"  // an IPv4 address
	idFQDN  idKind = "fqdn"  // fw.example.net or @fw.example.net (no DNS lookup)
	idEmail idKind = "email" // user@example.net
	idDN    idKind = "dn"    // C=DE, O=Example, CN=fw
	idOther idKind = "other" // keyid (@#...), @@user, IPv6, binary forms
)

// Keywords and values that recur in ipsec.conf.
const (
	anyID     = "%any"
	kwLeftID  = "leftid"
	kwRightID = "rightid"
	kwConn    = "conn"
	yes       = "yes"
	actStart  = "start"
	actTrap   = "trap"
)

// The API's patterns for a PSK tunnel's peer.id (Peer.ID) and a
// certificate identity's FQDN.
var (
	peerIDPattern = regexp.MustCompile(`^([0-9]{1,3}(\.[0-9]{1,3}){3}|[a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?|[a-zA-Z0-9._+-]+@[a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?)$`)
	fqdnPattern   = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*$`)
)

// parseID classifies an identity string and returns it as charon compares
// it: an FQDN without its '@'.
func parseID(s string) (idKind, string) {
	s = strings.TrimSpace(s)
	switch {
	case s == anyID || s == "" || s == "0.0.0.0":
		return idAny, anyID
	case strings.HasPrefix(s, "@#"), strings.HasPrefix(s, "@@"), strings.Contains(s, ":#"):
		return idOther, s
	case strings.HasPrefix(s, "@"):
		return idFQDN, s[1:]
	case strings.Contains(s, "="):
		return idDN, s
	case strings.Contains(s, "@"):
		return idEmail, s
	}
	if a, err := netip.ParseAddr(s); err == nil {
		if a.Is4() {
			return idIPv4, s
		}
		return idOther, s
	}
	return idFQDN, s
}

// certIdentity is id as a certificate Identity of the API, or nil when the
// API has no form for it (an IP address, %any, a key ID).
func certIdentity(id string) *gwv1alpha1.Identity {
	k, v := parseID(id)
	switch {
	case k == idDN:
		return &gwv1alpha1.Identity{DN: &v}
	case k == idFQDN && fqdnPattern.MatchString(v):
		return &gwv1alpha1.Identity{FQDN: &v}
	case k == idEmail:
		return &gwv1alpha1.Identity{Email: &v}
	}
	return nil
}
