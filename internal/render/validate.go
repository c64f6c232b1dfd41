package render

import (
	"bytes"
	"fmt"
	"net/netip"
	"regexp"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

var (
	// name of a tunnel, exposure or reverse exposure.
	validName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// fqdn is a DNS name usable as a peer address or identity.
	fqdn = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*$`)
	// email is a user@domain identity (strongSwan ID_RFC822_ADDR).
	email = regexp.MustCompile(`^[a-zA-Z0-9._+-]+@[a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?$`)
	// mac is a lower-case colon-separated MAC address.
	mac = regexp.MustCompile(`^([0-9a-f]{2}:){5}[0-9a-f]{2}$`)
)

// pair is one parsed traffic selector pair of a tunnel.
type pair struct {
	tunnel        string
	index         int
	local, remote netip.Prefix
}

func (p pair) path() string {
	return fmt.Sprintf("tunnels[%s].trafficSelectors[%d]", p.tunnel, p.index)
}

// checked is what validation learned that rendering reuses.
type checked struct {
	pairs   []pair
	private netip.Addr
}

// validate checks in against everything strongSwan, nftables and the
// semantics of a site-to-site gateway require, and returns every problem
// found as Errors.
func validate(in Input) (*checked, error) { //nolint:gocyclo // one check per part of the spec, in its order
	var errs Errors
	c := &checked{}
	s := in.Spec

	c.private = ipv4(&errs, "endpoint.privateAddress", string(s.Endpoint.PrivateAddress))
	if id := ipv4(&errs, "endpoint.localId", string(s.Endpoint.LocalID)); id.IsValid() && id == c.private {
		errs.add("endpoint.localId", "%s is the gateway's private address: peers reach the gateway through its floating IP and know it by that address, so IKE_AUTH would fail on the identity; set localId to the floating IP", id)
	}
	gw := ipv4(&errs, "endpoint.gateway", string(s.Endpoint.Gateway))
	var own netip.Prefix
	if s.Endpoint.PrefixLength < 1 || s.Endpoint.PrefixLength > 30 {
		errs.add("endpoint.prefixLength", "%d is not a prefix length between 1 and 30", s.Endpoint.PrefixLength)
	} else if c.private.IsValid() {
		own = netip.PrefixFrom(c.private, int(s.Endpoint.PrefixLength)).Masked()
		if gw.IsValid() && !own.Contains(gw) {
			errs.add("endpoint.gateway", "%s is not in the endpoint's network %s", gw, own)
		}
	}
	if !mac.MatchString(s.Endpoint.MACAddress) {
		errs.add("endpoint.macAddress", "%q is not a lower-case MAC address such as fa:16:3e:12:34:56", s.Endpoint.MACAddress)
	}
	switch s.Mode {
	case "", v1alpha1.ModeNAT, v1alpha1.ModeRouted:
	default:
		errs.add("mode", "%q is not nat or routed", s.Mode)
	}

	var tenant []netip.Prefix
	for i, t := range s.TenantSubnets {
		if p, ok := cidr(&errs, fmt.Sprintf("tenantSubnets[%d]", i), string(t)); ok {
			tenant = append(tenant, p)
		}
	}

	seen := map[string]string{}
	peers := map[string]string{}
	for _, t := range s.Tunnels {
		path := fmt.Sprintf("tunnels[%s]", t.Name)
		if !validName.MatchString(t.Name) || len(t.Name) > 32 {
			errs.add(path+".name", "must be at most 32 lower-case letters, digits and '-', starting and ending with a letter or digit")
		}
		if _, dup := seen[t.Name]; dup {
			errs.add(path, "a second tunnel has this name")
		}
		seen[t.Name] = t.Name
		c.pairs = append(c.pairs, checkTunnel(&errs, in, t, path)...)
		peer := t.Peer.Address + " " + peerID(t)
		if other, dup := peers[peer]; dup {
			errs.add(path+".peer", "tunnel %s already connects to %s with identity %s: strongSwan negotiates one IKE SA per peer, so put the subnet pairs into one tunnel",
				other, t.Peer.Address, peerID(t))
		} else {
			peers[peer] = t.Name
		}
	}

	for i, a := range c.pairs {
		if s.Mode != v1alpha1.ModeRouted {
			checkPresented(&errs, a, tenant, c.pairs)
		}
		for _, b := range c.pairs[i+1:] {
			if a.local.Overlaps(b.local) && a.remote.Overlaps(b.remote) {
				errs.add(b.path(), "local %s and remote %s overlap %s (local %s, remote %s): traffic would match both",
					b.local, b.remote, a.path(), a.local, a.remote)
			}
		}
		for _, t := range tenant {
			if a.remote.Overlaps(t) {
				errs.add(a.path()+".remote", "%s overlaps tenant subnet %s", a.remote, t)
			}
		}
		if own.IsValid() && a.remote.Overlaps(own) {
			errs.add(a.path()+".remote", "%s overlaps the gateway's own network %s", a.remote, own)
		}
	}

	checkExposures(&errs, in, c.pairs)
	return c, errs.err()
}

// checkTunnel checks one tunnel's own fields and returns its parsed pairs.
func checkTunnel(errs *Errors, in Input, t v1alpha1.Tunnel, path string) []pair { //nolint:gocyclo // one check per field of a tunnel, in the spec's order
	if net, err := netip.ParseAddr(t.Peer.Address); err == nil {
		if !net.Is4() {
			errs.add(path+".peer.address", "%s is not an IPv4 address", t.Peer.Address)
		}
	} else if !fqdn.MatchString(t.Peer.Address) {
		errs.add(path+".peer.address", "%q is neither an IPv4 address nor a DNS name", t.Peer.Address)
	}
	if id := t.Peer.ID; id != "" && !fqdn.MatchString(id) && !email.MatchString(id) {
		if a, err := netip.ParseAddr(id); err != nil || !a.Is4() {
			errs.add(path+".peer.id", "%q is not an IPv4 address, DNS name or user@domain", id)
		}
	}
	if t.IKEVersion != 1 && t.IKEVersion != 2 {
		errs.add(path+".ikeVersion", "%d is not 1 or 2", t.IKEVersion)
	}
	if t.IKEVersion == 1 && t.MOBIKE {
		errs.add(path+".mobike", "MOBIKE is an IKEv2 extension")
	}
	if t.MOBIKE && in.Spec.Replicas != nil && *in.Spec.Replicas == 2 {
		errs.add(path+".mobike", "must be false with replicas 2: a pod that gives the gateway's address up would move its IKE SAs to the pod network's interface (MOBIKE); leave it out, or use replicas 1")
	}
	if t.IKEVersion == 2 && t.DPD.Timeout != nil {
		errs.add(path+".dpd.timeout", "is an IKEv1 setting: an IKEv2 peer is declared dead when the retransmissions of a DPD check run out; remove it")
	}
	switch t.Unique {
	case "", v1alpha1.UniqueNo, v1alpha1.UniqueReplace, v1alpha1.UniqueKeep:
	default:
		errs.add(path+".unique", "%q is not no, replace or keep", t.Unique)
	}
	for i, p := range t.IKEProposals {
		if err := checkProposal(p, true); err != nil {
			errs.add(fmt.Sprintf("%s.ikeProposals[%d]", path, i), "%q: %v", p, err)
		}
	}
	for i, p := range t.ESPProposals {
		if err := checkProposal(p, false); err != nil {
			errs.add(fmt.Sprintf("%s.espProposals[%d]", path, i), "%q: %v", p, err)
		}
	}
	if len(t.IKEProposals) == 0 {
		errs.add(path+".ikeProposals", "at least one IKE proposal is needed")
	}
	if len(t.ESPProposals) == 0 {
		errs.add(path+".espProposals", "at least one ESP proposal is needed")
	}
	checkPSK(errs, path+".preSharedKeySecretRef", in.PSKs[t.Name])
	if len(t.TrafficSelectors) == 0 {
		errs.add(path+".trafficSelectors", "at least one local/remote subnet pair is needed")
	}
	for _, d := range []struct {
		field string
		d     *v1alpha1.Duration
	}{
		{"ikeLifetime.rekeyTime", t.IKELifetime.RekeyTime},
		{"ikeLifetime.reauthTime", t.IKELifetime.ReauthTime},
		{"childLifetime.rekeyTime", t.ChildLifetime.RekeyTime},
		{"childLifetime.lifeTime", t.ChildLifetime.LifeTime},
		{"dpd.delay", t.DPD.Delay},
		{"dpd.timeout", t.DPD.Timeout},
	} {
		if d.d == nil {
			continue
		}
		if _, err := d.d.Duration(); err != nil {
			errs.add(path+"."+d.field, "%q is not a duration such as 90m or 4h", string(*d.d))
		}
	}
	// strongSwan's default life_time is 110% of rekey_time in whole
	// seconds (integer arithmetic): the same under 10s.
	if lt := t.ChildLifetime; lt.RekeyTime != nil && lt.LifeTime == nil && childRekeySeconds(lt) < 10 && childRekeySeconds(lt) != 0 {
		errs.add(path+".childLifetime.lifeTime", "must be given with a rekeyTime under 10s: strongSwan's default (110%% of rekeyTime in whole seconds) would equal it, and the CHILD_SA would expire instead of being rekeyed")
	}
	if lt := t.ChildLifetime; lt.RekeyTime != nil && lt.LifeTime != nil && childRekeySeconds(lt) == 0 && lifeSeconds(lt) != 0 {
		errs.add(path+".childLifetime.rekeyTime", "0 turns rekeying off, so every CHILD_SA would expire at lifeTime %s and the tunnel drop until a new one is negotiated: give a rekeyTime below lifeTime, or leave lifeTime out (with rekeyTime 0 the CHILD_SA then lives until the peer rekeys it)", string(*lt.LifeTime))
	}
	if t.StartAction == actionTrap && in.Spec.DataPlane == v1alpha1.DataPlaneLibipsec {
		errs.add(path+".startAction", "trap never initiates with dataPlane Libipsec (kernel-libipsec raises no acquires, so matching traffic is dropped and no IKE SA starts): use start (or respond), or dataPlane KernelXFRM")
	}
	if t.IKEVersion == 1 && t.ChildSALayout == v1alpha1.ChildSASingle && len(t.TrafficSelectors) > 1 {
		errs.add(path+".childSALayout", "IKEv1 negotiates one subnet pair per CHILD_SA: use PerSubnetPair")
	}
	var pairs []pair
	for i, ts := range t.TrafficSelectors {
		p := pair{tunnel: t.Name, index: i}
		var okL, okR bool
		p.local, okL = cidr(errs, fmt.Sprintf("%s.trafficSelectors[%d].local", path, i), string(ts.Local))
		p.remote, okR = cidr(errs, fmt.Sprintf("%s.trafficSelectors[%d].remote", path, i), string(ts.Remote))
		if okL && okR {
			if p.local.Overlaps(p.remote) {
				errs.add(p.path(), "local %s overlaps remote %s: the same addresses cannot be on both sides of the tunnel; give the client's subnet as remote and a local subnet apart from it", p.local, p.remote)
			}
			pairs = append(pairs, p)
		}
	}
	if t.ChildSALayout != v1alpha1.ChildSASingle {
		checkChildNames(errs, pairs)
	}
	return pairs
}

// minPSK is the shortest pre-shared key accepted, in bytes: anything
// shorter falls to a dictionary at once (FortiGate's minimum; NIST SP
// 800-63B asks 8 of a memorized secret, but a migrated peer's key is not
// ours to lengthen).
const minPSK = 6

// checkPSK checks a tunnel's pre-shared key without ever putting it, or a
// part of it, into a message.
func checkPSK(errs *Errors, path string, psk []byte) {
	switch {
	case len(psk) == 0:
		errs.add(path, "the pre-shared key is missing or empty")
	case bytes.ContainsAny(psk, "\n\r"):
		errs.add(path, "the pre-shared key contains a line break (often a trailing newline from echo or a file): no peer's configuration can type it, so authentication would fail; write the Secret with printf '%%s' or kubectl create secret --from-literal")
	case bytes.IndexByte(psk, 0) >= 0:
		errs.add(path, "the pre-shared key contains a NUL byte, which peers' configurations end the key at: write it without")
	case len(psk) < minPSK:
		errs.add(path, "the pre-shared key is %d bytes: at least %d are needed (20 or more random characters are advised)", len(psk), minPSK)
	}
}

// checkPresented reports, in mode nat, a local traffic selector (the
// addresses presented to the client) of p that overlaps one of the tenant's
// real subnets or a client subnet (a remote selector of any pair): the NAT
// could not tell a presented address from a real one.
func checkPresented(errs *Errors, p pair, tenant []netip.Prefix, pairs []pair) {
	for _, t := range tenant {
		if p.local.Overlaps(t) {
			errs.add(p.path()+".local", "%s overlaps tenant subnet %s: in mode nat the local subnets are the addresses presented to the client, apart from the tenant's real ones; pick a range of its own (such as in 100.64.0.0/10)", p.local, t)
		}
	}
	for _, o := range pairs {
		if o.tunnel == p.tunnel && o.index == p.index {
			continue
		}
		if p.local.Overlaps(o.remote) {
			errs.add(p.path()+".local", "%s overlaps client subnet %s (%s.remote): in mode nat the presented addresses must be apart from every client's; pick a range of its own", p.local, o.remote, o.path())
		}
	}
}

// checkChildNames reports distinct pairs of one tunnel whose CHILD_SA names
// (ChildName, a 32-bit hash) collide; a repeated pair is reported as an
// overlap instead.
func checkChildNames(errs *Errors, pairs []pair) {
	names := map[string]pair{}
	for _, p := range pairs {
		n := ChildName(p.tunnel, p.local, p.remote)
		if o, dup := names[n]; dup && (o.local != p.local || o.remote != p.remote) {
			errs.add(p.path(), "its CHILD_SA name %s is also that of %s: change the subnets of either pair", n, o.path())
		}
		names[n] = p
	}
}

// checkExposures checks exposures and reverse exposures against the
// tunnels' traffic selectors.
func checkExposures(errs *Errors, in Input, pairs []pair) {
	s := in.Spec
	if s.Mode == v1alpha1.ModeRouted && (len(s.Exposures) > 0 || len(s.ReverseExposures) > 0) {
		errs.add("mode", "exposures and reverse exposures need mode nat")
	}
	listen := map[string]string{}
	for _, e := range s.Exposures {
		path := fmt.Sprintf("exposures[%s]", e.Name)
		inside := ipv4(errs, path+".insideAddress", string(e.InsideAddress))
		if inside.IsValid() && len(remotesFor(pairs, inside)) == 0 {
			errs.add(path+".insideAddress", "%s is in no tunnel's local traffic selector", inside)
		}
		if e.Target.Address != nil {
			ipv4(errs, path+".target.address", string(*e.Target.Address))
		} else if addr, ok := in.ServiceAddresses[e.Name]; !ok {
			errs.add(path+".target.serviceName", "the Service's cluster IP is not known")
		} else {
			ipv4(errs, path+".target.serviceName", addr)
		}
		key := fmt.Sprintf("%s %s:%d", e.Protocol, e.InsideAddress, e.Port)
		if other, dup := listen[key]; dup {
			errs.add(path, "%s is already exposed by %s", key, other)
		}
		listen[key] = path
	}
	for _, r := range s.ReverseExposures {
		path := fmt.Sprintf("reverseExposures[%s]", r.Name)
		client := ipv4(errs, path+".clientAddress", string(r.ClientAddress))
		source := ipv4(errs, path+".sourceAddress", string(r.SourceAddress))
		if client.IsValid() && source.IsValid() && !carried(pairs, source, client) {
			errs.add(path, "no tunnel carries traffic from %s (sourceAddress, a local traffic selector) to %s (clientAddress, a remote one)", source, client)
		}
		key := fmt.Sprintf("%s port %d", r.Protocol, r.ListenPort)
		if other, dup := listen[key]; dup {
			errs.add(path+".listenPort", "%s is already used by %s", key, other)
		}
		listen[key] = path
	}
}

// remotesFor returns the remote subnets of the pairs whose local subnet
// holds a.
func remotesFor(pairs []pair, a netip.Addr) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range pairs {
		if p.local.Contains(a) {
			out = append(out, p.remote)
		}
	}
	return out
}

// carried says whether a pair carries traffic from src to dst.
func carried(pairs []pair, src, dst netip.Addr) bool {
	for _, p := range pairs {
		if p.local.Contains(src) && p.remote.Contains(dst) {
			return true
		}
	}
	return false
}

func peerID(t v1alpha1.Tunnel) string {
	if t.Peer.ID != "" {
		return t.Peer.ID
	}
	return t.Peer.Address
}

// ipv4 parses s as an IPv4 address, recording a problem at path if it is
// not one.
func ipv4(errs *Errors, path, s string) netip.Addr {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		errs.add(path, "%q is not an IPv4 address", s)
		return netip.Addr{}
	}
	return a
}

// cidr parses s as an IPv4 network without host bits, recording a problem
// at path if it is not one.
func cidr(errs *Errors, path, s string) (netip.Prefix, bool) {
	p, err := netip.ParsePrefix(s)
	switch {
	case err != nil || !p.Addr().Is4():
		errs.add(path, "%q is not an IPv4 network in CIDR notation", s)
		return netip.Prefix{}, false
	case p.Masked() != p:
		errs.add(path, "%s has host bits set: did you mean %s?", s, p.Masked())
		return netip.Prefix{}, false
	}
	return p, true
}

// lifeSeconds is a CHILD_SA's life time in whole seconds as rendered; 1
// (not 0) when it does not parse, which is reported apart.
func lifeSeconds(lt v1alpha1.ChildLifetime) int64 {
	d, err := lt.LifeTime.Duration()
	if err != nil {
		return 1
	}
	return seconds(d)
}

// childRekeySeconds is a CHILD_SA's rekey time in whole seconds as
// rendered; 10 (no complaint of its own) when it does not parse, which is
// reported apart.
func childRekeySeconds(lt v1alpha1.ChildLifetime) int64 {
	d, err := lt.RekeyTime.Duration()
	if err != nil {
		return 10
	}
	return seconds(d)
}
