package topology

import (
	"context"
	"fmt"
	"strings"
)

// A ClientSheet is the parameter sheet a client site fills in for a
// site-to-site VPN: its own and the provider's addresses and identities,
// the PSK, the phase 1 and phase 2 proposals and the subnet pairs. The peer
// charon is configured from it by SwanctlConf, which writes swanctl.conf
// by hand on purpose: independently of internal/render and internal/swanctl,
// so that a mistake there cannot be mirrored on both ends of a test tunnel
// (https://docs.strongswan.org/docs/5.9/swanctl/swanctlConf.html).
type ClientSheet struct {
	// Name of the connection on the client's side.
	Name string
	// IKEVersion is 1 or 2; 2 when zero.
	IKEVersion int
	// LocalAddress is the client site's public address; RemoteAddress the
	// gateway's (the floating IP).
	LocalAddress, RemoteAddress string
	// LocalID and RemoteID are the IKE identities; the addresses when
	// empty.
	LocalID, RemoteID string
	// PSK is the pre-shared key, printable and without double quotes.
	PSK string
	// IKEProposals (phase 1) and ESPProposals (phase 2), in strongSwan's
	// syntax.
	IKEProposals, ESPProposals []string
	// Children are the CHILD_SAs (phase 2 selectors), one per entry.
	Children []ClientChild
	// StartAction of every child: none (respond, the default), start or
	// trap.
	StartAction string
	// DPDDelay such as "5s"; none when empty. DPDAction of every child:
	// clear, trap or restart; strongSwan's default when empty.
	DPDDelay, DPDAction string
	// KeyingTries is how often the IKE SA is tried before giving up, "0"
	// for ever; strongSwan's default (1) when empty. CloseAction of every
	// child when the peer closes it: none, trap or start; strongSwan's
	// default (none) when empty. An always-on site sets "0" and start.
	KeyingTries, CloseAction string
	// Unique is the connection's uniqueness policy (no, never, keep or
	// replace); strongSwan's default (no) when empty.
	Unique string
	// RekeyTime of the IKE SA such as "4h"; strongSwan's default when empty.
	RekeyTime string
	// Encap "yes" forces UDP encapsulation of ESP, as a gateway built by
	// hand behind a NAT may have it; strongSwan's default (no) when empty.
	Encap string
	// Certs, when true, authenticates both sides with certificates
	// (auth pubkey) instead of PSK: the site's certificate x509/site.pem,
	// whose key is private/site.pem (Peer.OpenSSLSite writes both), and
	// the gateway's CA x509ca/gateway-ca.pem (Peer.TrustGateway). LocalID
	// and RemoteID are then in swanctl's syntax, such as a DN written as
	// the site's administrator types it ("C=CH, O=Peer AG, CN=vpn").
	Certs bool
	// ReauthTime of the IKE SA such as "10s"; strongSwan's default (none)
	// when empty.
	ReauthTime string
}

// A ClientChild is one CHILD_SA of a ClientSheet.
type ClientChild struct {
	// Name of the child.
	Name string
	// LocalTS are the client's subnets, RemoteTS the gateway side's.
	LocalTS, RemoteTS []string
	// RekeyTime and LifeTime of the CHILD_SA such as "1h"; strongSwan's
	// defaults when empty.
	RekeyTime, LifeTime string
}

// SwanctlConf writes the sheet as a complete swanctl.conf: one connection
// and its secret.
func (s ClientSheet) SwanctlConf() []byte {
	var b strings.Builder
	line := func(depth int, format string, args ...any) {
		b.WriteString(strings.Repeat("  ", depth))
		fmt.Fprintf(&b, format, args...)
		b.WriteByte('\n')
	}
	set := func(depth int, key, value string) {
		if value != "" {
			line(depth, "%s = %s", key, value)
		}
	}
	version := s.IKEVersion
	if version == 0 {
		version = 2
	}
	localID, remoteID := or(s.LocalID, s.LocalAddress), or(s.RemoteID, s.RemoteAddress)
	line(0, "connections {")
	line(1, "%s {", s.Name)
	set(2, "version", fmt.Sprint(version))
	set(2, "local_addrs", s.LocalAddress)
	set(2, "remote_addrs", s.RemoteAddress)
	set(2, "proposals", strings.Join(s.IKEProposals, ","))
	set(2, "rekey_time", s.RekeyTime)
	set(2, "dpd_delay", s.DPDDelay)
	set(2, "keyingtries", s.KeyingTries)
	set(2, "unique", s.Unique)
	set(2, "encap", s.Encap)
	set(2, "reauth_time", s.ReauthTime)
	if s.Certs {
		// Quoted: a DN holds ',' and '='. Without LocalID the site
		// presents its certificate's subject.
		line(2, "local {")
		set(3, "auth", "pubkey")
		set(3, "certs", "site.pem")
		if s.LocalID != "" {
			line(3, "id = %q", s.LocalID)
		}
		line(2, "}")
		line(2, "remote {")
		set(3, "auth", "pubkey")
		line(3, "id = %q", remoteID)
		set(3, "cacerts", "gateway-ca.pem")
		line(2, "}")
	} else {
		line(2, "local {")
		set(3, "auth", "psk")
		set(3, "id", localID)
		line(2, "}")
		line(2, "remote {")
		set(3, "auth", "psk")
		set(3, "id", remoteID)
		line(2, "}")
	}
	line(2, "children {")
	for _, c := range s.Children {
		line(3, "%s {", c.Name)
		set(4, "local_ts", strings.Join(c.LocalTS, ","))
		set(4, "remote_ts", strings.Join(c.RemoteTS, ","))
		set(4, "esp_proposals", strings.Join(s.ESPProposals, ","))
		set(4, "rekey_time", c.RekeyTime)
		set(4, "life_time", c.LifeTime)
		set(4, "start_action", s.StartAction)
		set(4, "dpd_action", s.DPDAction)
		set(4, "close_action", s.CloseAction)
		line(3, "}")
	}
	line(2, "}")
	line(1, "}")
	line(0, "}")
	if s.Certs {
		// swanctl loads private/site.pem by itself.
		return []byte(b.String())
	}
	line(0, "secrets {")
	line(1, "ike-%s {", s.Name)
	set(2, "id-local", localID)
	set(2, "id-remote", remoteID)
	line(2, "secret = %q", s.PSK)
	line(1, "}")
	line(0, "}")
	return []byte(b.String())
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// LoadSheet configures the peer from s with the swanctl command (see
// Charon.LoadFile), replacing its previous configuration.
func (p *Peer) LoadSheet(ctx context.Context, s ClientSheet) error {
	return p.LoadFile(ctx, s.SwanctlConf(), s.Name)
}
