package render

import (
	"bytes"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/xfrmi"
)

var (
	// name of a tunnel, exposure or reverse exposure.
	validName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// fqdn is a DNS name usable as a peer address or identity.
	fqdn = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*$`)
	// idName is a DNS name as a peer's identity: strongSwan takes any
	// name for an ID_FQDN, and peers' names carry '_' ("fw_1.example.net").
	idName = regexp.MustCompile(`^[a-zA-Z0-9_]([-a-zA-Z0-9_]{0,61}[a-zA-Z0-9_])?(\.[a-zA-Z0-9_]([-a-zA-Z0-9_]{0,61}[a-zA-Z0-9_])?)*$`)
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

func (p pair) path() *field.Path {
	return field.NewPath("tunnels").Key(p.tunnel).Child("trafficSelectors").Index(p.index)
}

// checked is what validation learned that rendering reuses.
type checked struct {
	pairs   []pair
	private netip.Addr
	// ids are the local and remote identities of each certificate
	// tunnel, by name, as swanctl's id takes them; local is "" when
	// certificate.localId is not given (the certificate's subject).
	ids   map[string][2]string
	hides []hide
	// routes are the parsed routes of the route-mode tunnels, in spec
	// order.
	routes []route
}

// hide is one parsed hideNAT rule of a tunnel: connections from tenant to
// remote get a source address of presented (one address: a /32).
type hide struct {
	path           *field.Path
	tenant, remote []netip.Prefix
	presented      netip.Prefix
}

// route is one parsed route of a route-mode tunnel.
type route struct {
	tunnel string
	index  int
	dst    netip.Prefix
	metric uint32
}

func (r route) path() *field.Path {
	return field.NewPath("tunnels").Key(r.tunnel).Child("routes").Index(r.index)
}

// validate checks in against everything strongSwan, nftables and the
// semantics of a site-to-site gateway require, and returns every problem
// found as Errors.
func validate(in Input) (*checked, error) { //nolint:gocyclo // one check per part of the spec, in its order
	var errs Errors
	c := &checked{ids: map[string][2]string{}}
	s := in.Spec

	c.private = ipv4(&errs, field.NewPath("endpoint", "privateAddress"), string(s.Endpoint.PrivateAddress))
	if id := ipv4(&errs, field.NewPath("endpoint", "localId"), string(s.Endpoint.LocalID)); id.IsValid() && id == c.private {
		errs.add(field.NewPath("endpoint", "localId"), "%s is the gateway's private address: peers reach the gateway through its floating IP and know it by that address, so IKE_AUTH would fail on the identity; set localId to the floating IP", id)
	}
	gw := ipv4(&errs, field.NewPath("endpoint", "gateway"), string(s.Endpoint.Gateway))
	var own netip.Prefix
	if s.Endpoint.PrefixLength < 1 || s.Endpoint.PrefixLength > 30 {
		errs.add(field.NewPath("endpoint", "prefixLength"), "%d is not a prefix length between 1 and 30", s.Endpoint.PrefixLength)
	} else if c.private.IsValid() {
		own = netip.PrefixFrom(c.private, int(s.Endpoint.PrefixLength)).Masked()
		if gw.IsValid() && !own.Contains(gw) {
			errs.add(field.NewPath("endpoint", "gateway"), "%s is not in the endpoint's network %s", gw, own)
		}
	}
	if !mac.MatchString(s.Endpoint.MACAddress) {
		errs.add(field.NewPath("endpoint", "macAddress"), "%q is not a lower-case MAC address such as fa:16:3e:12:34:56", s.Endpoint.MACAddress)
	}
	switch s.Mode {
	case "", v1alpha1.ModeNAT, v1alpha1.ModeRouted:
	default:
		errs.add(field.NewPath("mode"), "%q is not nat or routed", s.Mode)
	}

	checkTCPMSS(&errs, field.NewPath("tcpMSS"), s.TCPMSS)

	var tenant []netip.Prefix
	for i, t := range s.TenantSubnets {
		if p, ok := cidr(&errs, field.NewPath("tenantSubnets").Index(i), string(t)); ok {
			tenant = append(tenant, p)
		}
	}

	seen := map[string]string{}
	peers := map[string]string{}
	route := map[string]bool{}
	for _, t := range s.Tunnels {
		route[t.Name] = t.Mode == v1alpha1.TunnelModeRoute
		path := field.NewPath("tunnels").Key(t.Name)
		if !validName.MatchString(t.Name) || len(t.Name) > 32 {
			errs.add(path.Child("name"), "must be at most 32 lower-case letters, digits and '-', starting and ending with a letter or digit")
		}
		if _, dup := seen[t.Name]; dup {
			errs.add(path, "a second tunnel has this name")
		}
		seen[t.Name] = t.Name
		pairs := checkTunnel(&errs, in, t, path)
		c.pairs = append(c.pairs, pairs...)
		if route[t.Name] {
			c.routes = append(c.routes, checkRoutes(&errs, t, path, pairs)...)
		}
		if t.Certificate != nil {
			local, remote := checkCert(&errs, path, t, in.Certs[t.Name])
			c.ids[t.Name] = [2]string{local, remote}
		}
		peer := t.Peer.Address + " " + c.remoteID(t)
		if other, dup := peers[peer]; dup {
			errs.add(path.Child("peer"), "tunnel %s already connects to %s with identity %s: strongSwan negotiates one IKE SA per peer, so put the subnet pairs into one tunnel",
				other, t.Peer.Address, c.remoteID(t))
		} else {
			peers[peer] = t.Name
		}
	}

	for i, a := range c.pairs {
		if route[a.tunnel] {
			// Its traffic is what its routes send into its XFRM
			// interface: checkRouted checks those.
			continue
		}
		if s.Mode != v1alpha1.ModeRouted {
			checkPresented(&errs, a, tenant, c.pairs)
		}
		for _, b := range c.pairs[i+1:] {
			if route[b.tunnel] {
				continue
			}
			if a.local.Overlaps(b.local) && a.remote.Overlaps(b.remote) {
				errs.add(b.path(), "local %s and remote %s overlap %s (local %s, remote %s): traffic would match both",
					b.local, b.remote, a.path(), a.local, a.remote)
			}
		}
		for _, t := range tenant {
			if a.remote.Overlaps(t) {
				errs.add(a.path().Child("remote"), "%s overlaps tenant subnet %s", a.remote, t)
			}
		}
		if own.IsValid() && a.remote.Overlaps(own) {
			errs.add(a.path().Child("remote"), "%s overlaps the gateway's own network %s", a.remote, own)
		}
	}

	checkRouted(&errs, in, c, tenant, own, route)
	checkExposures(&errs, in, c.pairs)
	c.hides = checkHideNAT(&errs, in, tenant, c.pairs)
	return c, errs.err()
}

// checkTunnel checks one tunnel's own fields and returns its parsed pairs.
func checkTunnel(errs *Errors, in Input, t v1alpha1.Tunnel, path *field.Path) []pair { //nolint:gocyclo // one check per field of a tunnel, in the spec's order
	if net, err := netip.ParseAddr(t.Peer.Address); err == nil {
		if !net.Is4() {
			errs.add(path.Child("peer", "address"), "%s is not an IPv4 address", t.Peer.Address)
		}
	} else if !fqdn.MatchString(t.Peer.Address) {
		errs.add(path.Child("peer", "address"), "%q is neither an IPv4 address nor a DNS name", t.Peer.Address)
	}
	checkPeerID(errs, path.Child("peer", "id"), t.Peer.ID)
	if t.IKEVersion != 1 && t.IKEVersion != 2 {
		errs.add(path.Child("ikeVersion"), "%d is not 1 or 2", t.IKEVersion)
	}
	if t.IKEVersion == 1 && t.MOBIKE {
		errs.add(path.Child("mobike"), "MOBIKE is an IKEv2 extension")
	}
	if t.MOBIKE && in.Spec.Replicas != nil && *in.Spec.Replicas == 2 {
		errs.add(path.Child("mobike"), "must be false with replicas 2: a pod that gives the gateway's address up would move its IKE SAs to the pod network's interface (MOBIKE); leave it out, or use replicas 1")
	}
	if t.IKEVersion == 2 && t.DPD.Timeout != nil {
		errs.add(path.Child("dpd", "timeout"), "is an IKEv1 setting: an IKEv2 peer is declared dead when the retransmissions of a DPD check run out; remove it")
	}
	switch t.Unique {
	case "", v1alpha1.UniqueNo, v1alpha1.UniqueReplace, v1alpha1.UniqueKeep:
	default:
		errs.add(path.Child("unique"), "%q is not no, replace or keep", t.Unique)
	}
	for i, p := range t.IKEProposals {
		if err := checkProposal(p, true); err != nil {
			errs.add(path.Child("ikeProposals").Index(i), "%q: %v", p, err)
		}
	}
	for i, p := range t.ESPProposals {
		if err := checkProposal(p, false); err != nil {
			errs.add(path.Child("espProposals").Index(i), "%q: %v", p, err)
		}
	}
	if len(t.IKEProposals) == 0 {
		errs.add(path.Child("ikeProposals"), "at least one IKE proposal is needed")
	}
	if len(t.ESPProposals) == 0 {
		errs.add(path.Child("espProposals"), "at least one ESP proposal is needed")
	}
	switch {
	case t.Certificate != nil && t.PreSharedKeySecretRef != nil:
		errs.add(path, "give exactly one of preSharedKeySecretRef (a pre-shared key) and certificate (X.509 certificates)")
	case t.Certificate == nil:
		checkPSK(errs, path.Child("preSharedKeySecretRef"), in.PSKs[t.Name])
	}
	if len(t.TrafficSelectors) == 0 {
		errs.add(path.Child("trafficSelectors"), "at least one local/remote subnet pair is needed")
	}
	for _, d := range []struct {
		field, sub string
		d          *v1alpha1.Duration
	}{
		{"ikeLifetime", "rekeyTime", t.IKELifetime.RekeyTime},
		{"ikeLifetime", "reauthTime", t.IKELifetime.ReauthTime},
		{"ikeLifetime", "randTime", t.IKELifetime.RandTime},
		{"childLifetime", "rekeyTime", t.ChildLifetime.RekeyTime},
		{"childLifetime", "lifeTime", t.ChildLifetime.LifeTime},
		{"childLifetime", "randTime", t.ChildLifetime.RandTime},
		{"dpd", "delay", t.DPD.Delay},
		{"dpd", "timeout", t.DPD.Timeout},
	} {
		if d.d == nil {
			continue
		}
		if _, err := d.d.Duration(); err != nil {
			errs.add(path.Child(d.field, d.sub), "%q is not a duration such as 90m or 4h", string(*d.d))
		}
	}
	// strongSwan's default life_time is 110% of rekey_time in whole
	// seconds (integer arithmetic): the same under 10s.
	if lt := t.ChildLifetime; lt.RekeyTime != nil && lt.LifeTime == nil && childRekeySeconds(lt) < 10 && childRekeySeconds(lt) != 0 {
		errs.add(path.Child("childLifetime", "lifeTime"), "must be given with a rekeyTime under 10s: strongSwan's default (110%% of rekeyTime in whole seconds) would equal it, and the CHILD_SA would expire instead of being rekeyed")
	}
	if lt := t.ChildLifetime; lt.RekeyTime != nil && lt.LifeTime != nil && childRekeySeconds(lt) == 0 && lifeSeconds(lt) != 0 {
		errs.add(path.Child("childLifetime", "rekeyTime"), "0 turns rekeying off, so every CHILD_SA would expire at lifeTime %s and the tunnel drop until a new one is negotiated: give a rekeyTime below lifeTime, or leave lifeTime out (with rekeyTime 0 the CHILD_SA then lives until the peer rekeys it)", string(*lt.LifeTime))
	}
	checkRandTimes(errs, t, path)
	if t.StartAction == actionTrap && in.Spec.DataPlane == v1alpha1.DataPlaneLibipsec {
		errs.add(path.Child("startAction"), "trap never initiates with dataPlane Libipsec (kernel-libipsec raises no acquires, so matching traffic is dropped and no IKE SA starts): use start (or respond), or dataPlane KernelXFRM")
	}
	checkTCPMSS(errs, path.Child("tcpMSS"), t.TCPMSS)
	checkTunnelMode(errs, in, t, path)
	if t.IKEVersion == 1 && t.ChildSALayout == v1alpha1.ChildSASingle && len(t.TrafficSelectors) > 1 {
		errs.add(path.Child("childSALayout"), "IKEv1 negotiates one subnet pair per CHILD_SA: use PerSubnetPair")
	}
	var pairs []pair
	for i, ts := range t.TrafficSelectors {
		p := pair{tunnel: t.Name, index: i}
		var okL, okR bool
		p.local, okL = cidr(errs, path.Child("trafficSelectors").Index(i).Child("local"), string(ts.Local))
		p.remote, okR = cidr(errs, path.Child("trafficSelectors").Index(i).Child("remote"), string(ts.Remote))
		if okL && okR {
			anyNet := p.local.Bits() == 0 || p.remote.Bits() == 0
			if anyNet && t.Mode != v1alpha1.TunnelModeRoute {
				// Refused here alone: it would overlap everything.
				errs.add(p.path(), "0.0.0.0/0 traffic selectors are for mode route (one XFRM interface per tunnel, routes deciding what enters it): set mode route with routes, or give the subnets the tunnel carries")
				continue
			}
			if p.local.Overlaps(p.remote) && !anyNet {
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

// checkTCPMSS checks a tcpMSS at path, if given: the schema's bounds, for
// a spec that did not pass admission.
func checkTCPMSS(errs *Errors, path *field.Path, mss *int32) {
	if mss != nil && (*mss < MinTCPMSS || *mss > MaxTCPMSS) {
		errs.add(path, "%d is not a TCP MSS between %d and %d bytes (below, hosts may refuse it; above, a segment does not fit a %d-byte path even without a tunnel): leave it out for the MSS computed from the tunnel's ESP proposals", *mss, MinTCPMSS, MaxTCPMSS, PathMTU)
	}
}

// checkTunnelMode checks a tunnel's mode and the fields of mode route.
func checkTunnelMode(errs *Errors, in Input, t v1alpha1.Tunnel, path *field.Path) {
	switch t.Mode {
	case "", v1alpha1.TunnelModePolicy:
		if len(t.Routes) > 0 {
			errs.add(path.Child("routes"), "routes are for mode route: a policy-mode tunnel carries the subnets of its traffic selectors; set mode route, or remove routes")
		}
		if t.RouteMetric != nil {
			errs.add(path.Child("routeMetric"), "routeMetric is for mode route: set mode route, or remove routeMetric")
		}
		return
	case v1alpha1.TunnelModeRoute:
	default:
		errs.add(path.Child("mode"), "%q is not policy or route", t.Mode)
		return
	}
	if in.Spec.DataPlane == v1alpha1.DataPlaneLibipsec {
		errs.add(path.Child("mode"), "route needs dataPlane KernelXFRM: strongSwan's kernel-libipsec has no XFRM interface IDs (if_id) and routes every CHILD_SA through its own TUN device; use mode policy, or dataPlane KernelXFRM")
	}
	if in.Spec.Mode != v1alpha1.ModeRouted {
		errs.add(path.Child("mode"), "route needs the gateway's mode routed: in mode nat the local traffic selectors are the addresses presented to the client, which 0.0.0.0/0 cannot be; set mode routed, or use mode policy")
	}
	if len(t.Routes) == 0 {
		errs.add(path.Child("routes"), "a tunnel in mode route needs routes: the remote subnets routed over its XFRM interface")
	}
	if m := t.RouteMetric; m != nil && (*m < 0 || *m > 65535) {
		errs.add(path.Child("routeMetric"), "%d is not between 0 and 65535", *m)
	}
}

// checkRoutes parses the routes of route-mode tunnel t and checks each
// against the tunnel's own remote traffic selectors (pairs): a packet
// routed into the interface outside them finds no CHILD_SA and is dropped.
func checkRoutes(errs *Errors, t v1alpha1.Tunnel, path *field.Path, pairs []pair) []route {
	metric := uint32(v1alpha1.DefaultRouteMetric)
	if t.RouteMetric != nil && *t.RouteMetric >= 0 {
		metric = uint32(*t.RouteMetric)
	}
	var out []route
	seen := map[netip.Prefix]bool{}
	for i, r := range t.Routes {
		dst, ok := cidr(errs, path.Child("routes").Index(i), string(r))
		if !ok {
			continue
		}
		rt := route{tunnel: t.Name, index: i, dst: dst, metric: metric}
		if seen[dst] {
			errs.add(rt.path(), "%s is routed twice", dst)
			continue
		}
		seen[dst] = true
		if !slices.ContainsFunc(pairs, func(p pair) bool { return p.remote.Bits() <= dst.Bits() && p.remote.Contains(dst.Addr()) }) {
			errs.add(rt.path(), "%s is in no remote traffic selector of the tunnel: its packets would find no CHILD_SA in the interface and be dropped; widen a remote selector (such as 0.0.0.0/0) or route a subnet inside one", dst)
		}
		out = append(out, rt)
	}
	return out
}

// checkRouted checks the route-mode tunnels across the gateway: their
// interface IDs must differ, and each route must pass checkRoute.
func checkRouted(errs *Errors, in Input, c *checked, tenant []netip.Prefix, own netip.Prefix, route map[string]bool) {
	ids := map[uint32]string{}
	for _, t := range in.Spec.Tunnels {
		if !route[t.Name] {
			continue
		}
		id := xfrmi.IfID(t.Name)
		if other, dup := ids[id]; dup && other != t.Name {
			errs.add(field.NewPath("tunnels").Key(t.Name).Child("name"), "its XFRM interface ID %d is also that of tunnel %s: rename either tunnel", id, other)
		}
		ids[id] = t.Name
	}
	for _, r := range c.routes {
		checkRoute(errs, in, r, c.pairs, tenant, own, route)
	}
}

// checkRoute reports a route that covers a tenant subnet, the gateway's
// own network (own, when valid), a peer's address (IKE and ESP would enter
// a tunnel) or a policy-mode tunnel's remote selector (the route would win
// over that tunnel's policy, whose traffic would then leave through the
// XFRM interface).
func checkRoute(errs *Errors, in Input, r route, pairs []pair, tenant []netip.Prefix, own netip.Prefix, routed map[string]bool) {
	for _, t := range tenant {
		if r.dst.Overlaps(t) {
			errs.add(r.path(), "%s overlaps tenant subnet %s", r.dst, t)
		}
	}
	if own.IsValid() && r.dst.Overlaps(own) {
		errs.add(r.path(), "%s overlaps the gateway's own network %s", r.dst, own)
	}
	for _, t := range in.Spec.Tunnels {
		if a, err := netip.ParseAddr(t.Peer.Address); err == nil && r.dst.Contains(a) {
			errs.add(r.path(), "%s holds the address %s of tunnel %s's peer: IKE and ESP to it would enter the tunnel; route the peer's subnets, not its address", r.dst, a, t.Name)
		}
	}
	for _, p := range pairs {
		if !routed[p.tunnel] && r.dst.Overlaps(p.remote) {
			errs.add(r.path(), "%s overlaps %s.remote %s of a tunnel in mode policy: the route would take that tunnel's traffic into the XFRM interface", r.dst, p.path(), p.remote)
		}
	}
}

// minPSK is the shortest pre-shared key accepted, in bytes: anything
// shorter falls to a dictionary at once (FortiGate's minimum; NIST SP
// 800-63B asks 8 of a memorized secret, but a migrated peer's key is not
// ours to lengthen).
const minPSK = 6

// checkPSK checks a tunnel's pre-shared key without ever putting it, or a
// part of it, into a message.
func checkPSK(errs *Errors, path *field.Path, psk []byte) {
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
			errs.add(p.path().Child("local"), "%s overlaps tenant subnet %s: in mode nat the local subnets are the addresses presented to the client, apart from the tenant's real ones; pick a range of its own (such as in 100.64.0.0/10)", p.local, t)
		}
	}
	for _, o := range pairs {
		if o.tunnel == p.tunnel && o.index == p.index {
			continue
		}
		if p.local.Overlaps(o.remote) {
			errs.add(p.path().Child("local"), "%s overlaps client subnet %s (%s.remote): in mode nat the presented addresses must be apart from every client's; pick a range of its own", p.local, o.remote, o.path())
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
		errs.add(field.NewPath("mode"), "exposures and reverse exposures need mode nat")
	}
	listen := map[string]string{}
	for _, e := range s.Exposures {
		path := field.NewPath("exposures").Key(e.Name)
		inside := ipv4(errs, path.Child("insideAddress"), string(e.InsideAddress))
		if inside.IsValid() && len(remotesFor(pairs, inside)) == 0 {
			errs.add(path.Child("insideAddress"), "%s is in no tunnel's local traffic selector", inside)
		}
		if e.Target.Address != nil {
			ipv4(errs, path.Child("target", "address"), string(*e.Target.Address))
		} else if addr, ok := in.ServiceAddresses[e.Name]; !ok {
			errs.add(path.Child("target", "serviceName"), "the Service's cluster IP is not known")
		} else {
			ipv4(errs, path.Child("target", "serviceName"), addr)
		}
		key := fmt.Sprintf("%s %s:%d", e.Protocol, e.InsideAddress, e.Port)
		if other, dup := listen[key]; dup {
			errs.add(path, "%s is already exposed by %s", key, other)
		}
		listen[key] = path.String()
	}
	for _, r := range s.ReverseExposures {
		path := field.NewPath("reverseExposures").Key(r.Name)
		client := ipv4(errs, path.Child("clientAddress"), string(r.ClientAddress))
		source := ipv4(errs, path.Child("sourceAddress"), string(r.SourceAddress))
		if client.IsValid() && source.IsValid() && !carried(pairs, source, client) {
			errs.add(path, "no tunnel carries traffic from %s (sourceAddress, a local traffic selector) to %s (clientAddress, a remote one)", source, client)
		}
		key := fmt.Sprintf("%s port %d", r.Protocol, r.ListenPort)
		if other, dup := listen[key]; dup {
			errs.add(path.Child("listenPort"), "%s is already used by %s", key, other)
		}
		listen[key] = path.String()
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

// remoteID is the identity tunnel t's peer presents, as rendered.
func (c *checked) remoteID(t v1alpha1.Tunnel) string {
	if t.Certificate != nil {
		return c.ids[t.Name][1]
	}
	return peerID(t)
}

// peerID is the identity tunnel t's peer presents, as swanctl's id takes
// it: a DN as asn1dn:#<DER in hex> (as a certificate identity's dn; an
// invalid one as written, which validation reports), any other form as
// written, the peer's address when none is given.
func peerID(t v1alpha1.Tunnel) string {
	switch id := t.Peer.ID; {
	case id == "":
		return t.Peer.Address
	case isDN(id):
		if der, err := parseDN(id); err == nil {
			return asn1dn(der)
		}
	}
	return t.Peer.ID
}

// isDN says whether peer identity id is a distinguished name: it has an
// attribute=value (no other form has '='), or is asn1dn:#<hex>.
func isDN(id string) bool {
	return strings.Contains(id, "=") || strings.HasPrefix(id, asn1dnPrefix)
}

// checkPeerID checks a PSK tunnel's peer.id (at path), if given, in the
// forms charon reads: an IPv4 address; a DNS name, '_' allowed, with or
// without strongSwan's '@' (an FQDN even when it looks like an address);
// user@domain; a DN.
func checkPeerID(errs *Errors, path *field.Path, id string) {
	switch {
	case id == "", email.MatchString(id), idName.MatchString(strings.TrimPrefix(id, "@")):
		// idName also holds every dotted quad; one that is no IPv4
		// address (300.1.1.1) charon takes for a DNS name, as it
		// takes any name.
	case isDN(id):
		if _, err := parseDN(id); err != nil {
			errs.add(path, "%q is taken for a distinguished name (it has '=') and %v", id, err)
		}
	default:
		errs.add(path, "%q is not an IPv4 address, DNS name (@name, too), user@domain or distinguished name (C=DE, O=Example AG, CN=fw)", id)
	}
}

// ipv4 parses s as an IPv4 address, recording a problem at path if it is
// not one.
func ipv4(errs *Errors, path *field.Path, s string) netip.Addr {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		errs.add(path, "%q is not an IPv4 address", s)
		return netip.Addr{}
	}
	return a
}

// cidr parses s as an IPv4 network without host bits, recording a problem
// at path if it is not one.
func cidr(errs *Errors, path *field.Path, s string) (netip.Prefix, bool) {
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

// checkHideNAT checks the tunnels' hideNAT rules against the gateway's
// tenant subnets and every tunnel's traffic selectors, and returns them
// parsed, in the spec's order.
func checkHideNAT(errs *Errors, in Input, tenant []netip.Prefix, pairs []pair) []hide { //nolint:gocyclo // one check per rule of a hideNAT, in its order
	var out []hide
	for _, t := range in.Spec.Tunnels {
		for _, r := range t.HideNAT {
			h := hide{path: field.NewPath("tunnels").Key(t.Name).Child("hideNAT").Key(r.Name)}
			if in.Spec.Mode == v1alpha1.ModeRouted {
				errs.add(h.path, "hideNAT needs mode nat: in mode routed the tenant network reaches client subnets untranslated")
				continue
			}
			if !validName.MatchString(r.Name) || len(r.Name) > 63 {
				errs.add(h.path.Child("name"), "must be at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit")
			}
			var ok bool
			switch {
			case (r.PresentedAddress == nil) == (r.PresentedPool == nil):
				errs.add(h.path, "needs exactly one of presentedAddress or presentedPool")
			case r.PresentedAddress != nil:
				a := ipv4(errs, h.path.Child("presentedAddress"), string(*r.PresentedAddress))
				ok = a.IsValid()
				h.presented = netip.PrefixFrom(a, 32)
			default:
				h.presented, ok = cidr(errs, h.path.Child("presentedPool"), string(*r.PresentedPool))
			}
			at, shown := h.path.Child("presentedAddress"), h.presented.Addr().String()
			if r.PresentedPool != nil {
				at, shown = h.path.Child("presentedPool"), h.presented.String()
			}
			for i, s := range r.TenantSubnets {
				p, pok := cidr(errs, h.path.Child("tenantSubnets").Index(i), string(s))
				if !pok {
					continue
				}
				if !within(tenant, p) {
					errs.add(h.path.Child("tenantSubnets").Index(i), "%s lies in no tenantSubnets entry of the gateway: add it there (the security group admits traffic from those only)", p)
				}
				h.tenant = append(h.tenant, p)
			}
			for i, s := range r.RemoteSubnets {
				p, pok := cidr(errs, h.path.Child("remoteSubnets").Index(i), string(s))
				if !pok {
					continue
				}
				if ok && !carriedNets(pairs, t.Name, h.presented, p) {
					errs.add(at, "%s lies in no local subnet of a traffic selector of tunnel %s whose remote subnet holds %s (remoteSubnets[%d]): the tunnel carries only its selectors' pairs; present an address of that local subnet, or add the pair to trafficSelectors", shown, t.Name, p, i)
				}
				h.remote = append(h.remote, p)
			}
			if len(h.tenant) == 0 {
				errs.add(h.path.Child("tenantSubnets"), "at least one tenant subnet is needed")
			}
			if len(h.remote) == 0 {
				errs.add(h.path.Child("remoteSubnets"), "at least one remote subnet is needed")
			}
			if !ok {
				continue
			}
			for _, s := range tenant {
				if h.presented.Overlaps(s) {
					errs.add(at, "%s overlaps tenant subnet %s: the presented addresses must be apart from the tenant's real ones; present addresses of the tunnel's local subnet (such as in 100.64.0.0/10)", shown, s)
				}
			}
			for _, p := range pairs {
				if h.presented.Overlaps(p.remote) {
					errs.add(at, "%s overlaps client subnet %s (%s.remote): the client would see its own addresses as the source; present addresses of the tunnel's local subnet", shown, p.remote, p.path())
				}
			}
			for _, o := range out {
				if overlapsAny(h.tenant, o.tenant) && overlapsAny(h.remote, o.remote) {
					errs.add(h.path, "translates connections %s also translates (their tenantSubnets and remoteSubnets overlap): give each connection one rule", o.path)
				}
			}
			out = append(out, h)
		}
	}
	return out
}

// within says whether p lies inside one of nets.
func within(nets []netip.Prefix, p netip.Prefix) bool {
	for _, n := range nets {
		if n.Bits() <= p.Bits() && n.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

// overlapsAny says whether a network of a overlaps one of b.
func overlapsAny(a, b []netip.Prefix) bool {
	for _, x := range a {
		for _, y := range b {
			if x.Overlaps(y) {
				return true
			}
		}
	}
	return false
}

// carriedNets says whether a pair of tunnel carries traffic from every
// address of src to every address of dst.
func carriedNets(pairs []pair, tunnel string, src, dst netip.Prefix) bool {
	for _, p := range pairs {
		if p.tunnel == tunnel && within([]netip.Prefix{p.local}, src) && within([]netip.Prefix{p.remote}, dst) {
			return true
		}
	}
	return false
}

// strongSwan's rekey times when a tunnel leaves them out, in seconds.
const (
	defaultIKERekey   = 4 * 3600
	defaultChildRekey = 3600
)

// checkRandTimes refuses a rand_time that is not shorter than the rekey or
// reauthentication time it is subtracted from: charon subtracts a random
// value below rand_time from that time without a bound, so a longer
// rand_time can wrap the time around (no rekey at all) or rekey at once.
func checkRandTimes(errs *Errors, t v1alpha1.Tunnel, path *field.Path) {
	secs := func(d *v1alpha1.Duration, def int64) int64 {
		if d == nil {
			return def
		}
		v, err := d.Duration()
		if err != nil {
			return -1
		}
		return seconds(v)
	}
	if r := secs(t.IKELifetime.RandTime, 0); r > 0 {
		for _, b := range []struct {
			field string
			s     int64
		}{
			{"rekeyTime", secs(t.IKELifetime.RekeyTime, defaultIKERekey)},
			{"reauthTime", secs(t.IKELifetime.ReauthTime, 0)},
		} {
			if b.s > 0 && r >= b.s {
				errs.add(path.Child("ikeLifetime", "randTime"), "%ds is not shorter than ikeLifetime.%s (%ds): give a randTime below it (strongSwan's default is 10%% of it)", r, b.field, b.s)
			}
		}
	}
	if r, rekey := secs(t.ChildLifetime.RandTime, 0), secs(t.ChildLifetime.RekeyTime, defaultChildRekey); r > 0 && rekey > 0 && r >= rekey {
		errs.add(path.Child("childLifetime", "randTime"), "%ds is not shorter than childLifetime.rekeyTime (%ds): give a randTime below it (strongSwan's default is lifeTime - rekeyTime)", r, rekey)
	}
}
