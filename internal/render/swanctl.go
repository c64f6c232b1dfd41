package render

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/swanctl"
	"github.com/ipsecgw/provider-ipsec/internal/xfrmi"
)

// The API's start actions (a tunnel's startAction).
const (
	actionStart   = "start"
	actionTrap    = "trap"
	actionRespond = "respond"
)

// startActions maps the API's start actions to swanctl's start_action.
var startActions = map[string]string{actionStart: "start", actionTrap: "trap", actionRespond: "none"}

// closeActions maps the API's start actions to swanctl's close_action, what
// charon does when the peer deletes a CHILD_SA or (strongSwan 5.9: each
// child's close_action, when the peer deletes the IKE SA) the IKE SA: an
// always-on tunnel initiates again at once, a trap tunnel arms its trap
// policy again, and a responder-only tunnel leaves it to the peer, which
// closed it and is the one to initiate.
var closeActions = map[string]string{actionStart: "start", actionTrap: "trap", actionRespond: "none"}

// alwaysOn are the start actions whose tunnels charon must keep
// initiating: keyingtries 0 retries for ever (strongSwan's default, 1,
// gives up after one attempt's retransmissions). Only start: a trap
// tunnel's trap policy stays installed when a triggered initiation fails,
// so the next matching packet initiates again, and keyingtries 0 would
// keep one stray packet's initiation retrying for ever after the traffic
// stopped (towards a peer that may be gone for good); a respond tunnel
// initiates only for a DPD restart. Both keep strongSwan's default.
var alwaysOn = map[string]bool{actionStart: true}

// swanctlConf builds the connections document and the secrets document.
// Settings the spec leaves unset are left out, so strongSwan's defaults
// apply.
func swanctlConf(in Input, c *checked) (conf, secrets *swanctl.Section) {
	conf, secrets = &swanctl.Section{}, &swanctl.Section{}
	conns := conf.Section("connections")
	secs := secrets.Section("secrets")
	ep := in.Spec.Endpoint
	for _, t := range in.Spec.Tunnels {
		conn := conns.Section(t.Name)
		conn.Set("version", strconv.Itoa(int(t.IKEVersion)))
		conn.Set("local_addrs", string(ep.PrivateAddress))
		conn.Set("remote_addrs", t.Peer.Address)
		conn.Set("proposals", strings.Join(t.IKEProposals, ","))
		setDuration(conn, "rekey_time", t.IKELifetime.RekeyTime)
		setDuration(conn, "reauth_time", t.IKELifetime.ReauthTime)
		setDuration(conn, "rand_time", t.IKELifetime.RandTime)
		setDuration(conn, "dpd_delay", t.DPD.Delay)
		setDuration(conn, "dpd_timeout", t.DPD.Timeout)
		conn.Set("encap", yesNo(t.ForceEncapsulation))
		conn.Set("mobike", yesNo(t.MOBIKE))
		if t.Fragmentation != "" {
			conn.Set("fragmentation", t.Fragmentation)
		}
		if alwaysOn[t.StartAction] {
			conn.Set("keyingtries", "0")
		}
		conn.Set("unique", cmp.Or(t.Unique, v1alpha1.UniqueNo))
		if t.Certificate != nil {
			certAuth(conn, secs, certsOf(secrets), t, c, in.Certs[t.Name])
		} else {
			conn.Section("local").Set("auth", "psk").Set("id", string(ep.LocalID))
			conn.Section("remote").Set("auth", "psk").Set("id", peerID(t))
		}
		children := conn.Section("children")
		for _, ch := range childSAs(t, c.pairs) {
			child := children.Section(ch.name)
			child.Set("local_ts", strings.Join(ch.local, ","))
			child.Set("remote_ts", strings.Join(ch.remote, ","))
			child.Set("esp_proposals", strings.Join(t.ESPProposals, ","))
			setDuration(child, "rekey_time", t.ChildLifetime.RekeyTime)
			setDuration(child, "life_time", t.ChildLifetime.LifeTime)
			setDuration(child, "rand_time", t.ChildLifetime.RandTime)
			if t.DPD.Action != "" {
				child.Set("dpd_action", t.DPD.Action)
			}
			if a, ok := startActions[t.StartAction]; ok {
				child.Set("start_action", a)
			}
			if a, ok := closeActions[t.StartAction]; ok {
				child.Set("close_action", a)
			}
			if t.Mode == v1alpha1.TunnelModeRoute {
				// The CHILD_SAs' SAs and policies are bound to the
				// tunnel's XFRM interface; charon installs no routes
				// for them (kernel-netlink's install_routes_xfrmi is
				// off): the agent routes the tunnel's routes.
				id := strconv.FormatUint(uint64(xfrmi.IfID(t.Name)), 10)
				child.Set("if_id_in", id)
				child.Set("if_id_out", id)
			}
		}
		if t.Certificate != nil {
			continue
		}
		secs.Section("ike-"+t.Name).
			Set("id-local", string(ep.LocalID)).
			Set("id-remote", peerID(t)).
			Set("secret", "0x"+hex.EncodeToString(in.PSKs[t.Name]))
	}
	return conf, secrets
}

// certAuth renders certificate tunnel t's authentication (swanctl auth
// pubkey): its local and remote sections in conn, the remote one naming
// the peer's CA certificates (remote.cacerts) that certs holds, and its
// private key in secs. The gateway's certificate is in certs too, but no
// connection names it (no local.certs): charon finds it by the local
// identity among the loaded certificates. So a renewed certificate with
// the same identity leaves the connection as it was, and charon keeps its
// IKE SAs (a changed connection's would be closed and initiated again)
// until they are reauthenticated, with the new certificate. It is sent
// whether or not the peer asks for it (send_cert always): not every
// peer sends a certificate request.
func certAuth(conn, secs, certs *swanctl.Section, t v1alpha1.Tunnel, c *checked, tc *TunnelCert) {
	id := c.ids[t.Name][0]
	if id == "" {
		id = asn1dn(tc.Cert.RawSubject)
	}
	conn.Set("send_cert", "always")
	conn.Section("local").Set("auth", "pubkey").Set("id", id)
	cas := make([]string, len(tc.CAs))
	for i := range tc.CAs {
		cas[i] = fmt.Sprintf("cacert-%s-%d", t.Name, i)
	}
	conn.Section("remote").Set("auth", "pubkey").Set("id", c.ids[t.Name][1]).Set("cacerts", strings.Join(cas, ","))
	secs.Section("private-"+t.Name).Set("type", tc.KeyType).Set("data", "0x"+hex.EncodeToString(tc.Key))
	certs.Set("cert-"+t.Name, "0x"+hex.EncodeToString(tc.Cert.Raw))
	for i, der := range tc.Chain {
		certs.Set(fmt.Sprintf("chain-%s-%d", t.Name, i+1), "0x"+hex.EncodeToString(der))
	}
	for i, ca := range tc.CAs {
		certs.Set(cas[i], "0x"+hex.EncodeToString(ca.Raw))
	}
}

// certsOf returns the certs section of the secrets document, adding it
// after the secrets section when it is not there yet.
func certsOf(secrets *swanctl.Section) *swanctl.Section {
	if s := secrets.Lookup("certs"); s != nil {
		return s
	}
	return secrets.Section("certs")
}

// child is one CHILD_SA to render.
type child struct {
	name          string
	local, remote []string
}

// ChildName is the name of the CHILD_SA of tunnel that carries local to
// remote in layout PerSubnetPair: <tunnel>-<h>, h the first eight hex
// digits of the SHA-256 of "<local> <remote>" (such as "10.30.0.0/24
// 192.168.10.0/24"). It depends on the pair alone, so adding, removing or
// reordering other pairs renames no child and a live reload leaves their
// CHILD_SAs up. It is at most 41 characters, a valid swanctl section name
// (tunnel names are at most 32 of [a-z0-9-]).
func ChildName(tunnel string, local, remote netip.Prefix) string {
	h := sha256.Sum256([]byte(local.String() + " " + remote.String()))
	return tunnel + "-" + hex.EncodeToString(h[:4])
}

// childSAs lays a tunnel's subnet pairs out as CHILD_SAs: one per pair,
// named by ChildName, or one named <tunnel> carrying every subnet.
func childSAs(t v1alpha1.Tunnel, pairs []pair) []child {
	var out []child
	single := child{name: t.Name}
	for _, p := range pairs {
		if p.tunnel != t.Name {
			continue
		}
		l, r := p.local.String(), p.remote.String()
		if t.ChildSALayout == v1alpha1.ChildSASingle {
			if !slices.Contains(single.local, l) {
				single.local = append(single.local, l)
			}
			if !slices.Contains(single.remote, r) {
				single.remote = append(single.remote, r)
			}
			continue
		}
		out = append(out, child{name: ChildName(t.Name, p.local, p.remote), local: []string{l}, remote: []string{r}})
	}
	if t.ChildSALayout == v1alpha1.ChildSASingle {
		out = append(out, single)
	}
	return out
}

// setDuration sets key to d in whole seconds ("3600s", see seconds) when d
// is given; validate has checked that it parses.
func setDuration(s *swanctl.Section, key string, d *v1alpha1.Duration) {
	if d == nil {
		return
	}
	v, _ := d.Duration()
	s.Set(key, strconv.FormatInt(seconds(v), 10)+"s")
}

// seconds is d in whole seconds, rounded up, as rendered for strongSwan.
func seconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
