package render

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/xfrmi"
)

// routeBased returns a gateway in mode routed with a cloud VPN
// connection's two route-mode tunnels (active 100, backup 200), for cases
// to break one thing in.
func routeBased() Input {
	in := valid()
	in.Spec.Mode = v1alpha1.ModeRouted
	for i := range in.Spec.Tunnels {
		tn := &in.Spec.Tunnels[i]
		tn.Mode = v1alpha1.TunnelModeRoute
		tn.TrafficSelectors = []v1alpha1.TrafficSelector{{Local: "0.0.0.0/0", Remote: "0.0.0.0/0"}}
		tn.Routes = []v1alpha1.CIDR{"172.31.0.0/16"}
		tn.RouteMetric = ptr.To(int32(100 * (i + 1)))
	}
	return in
}

func TestValidateRouteMode(t *testing.T) {
	cases := map[string]struct {
		reason string
		mod    func(*Input)
		want   Errors
	}{
		"ActiveBackup": {
			reason: "Two route-mode tunnels with identical 0.0.0.0/0 selectors and different metrics: the XFRM interfaces keep them apart.",
			mod:    func(*Input) {},
		},
		"ECMPDefaultMetric": {
			reason: "Both metrics left out (100): equal-cost routes are fine.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].RouteMetric, in.Spec.Tunnels[1].RouteMetric = nil, nil
			},
		},
		"PolicyAnyNet": {
			reason: "0.0.0.0/0 selectors in mode policy stay refused (their policies would take every packet), naming the pair and the way out.",
			mod:    func(in *Input) { in.Spec.Tunnels[0] = policy(in.Spec.Tunnels[0]) },
			want:   Errors{{"tunnels[a].trafficSelectors[0]", "0.0.0.0/0 traffic selectors are for mode route (one XFRM interface per tunnel, routes deciding what enters it): set mode route with routes, or give the subnets the tunnel carries"}},
		},
		"TwoPolicyIdentical": {
			reason: "Two policy-mode tunnels with identical selectors stay refused: traffic would match both.",
			mod: func(in *Input) {
				for i := range in.Spec.Tunnels {
					in.Spec.Tunnels[i] = policy(in.Spec.Tunnels[i])
					in.Spec.Tunnels[i].TrafficSelectors[0] = v1alpha1.TrafficSelector{Local: "10.30.0.0/24", Remote: "172.31.0.0/16"}
				}
			},
			want: Errors{{"tunnels[b].trafficSelectors[0]", "local 10.30.0.0/24 and remote 172.31.0.0/16 overlap tunnels[a].trafficSelectors[0] (local 10.30.0.0/24, remote 172.31.0.0/16): traffic would match both"}},
		},
		"Libipsec": {
			reason: "kernel-libipsec has no interface IDs: refused, naming the tunnel's mode.",
			mod:    func(in *Input) { in.Spec.Tunnels = in.Spec.Tunnels[:1]; in.Spec.DataPlane = v1alpha1.DataPlaneLibipsec },
			want:   Errors{{"tunnels[a].mode", "route needs dataPlane KernelXFRM: strongSwan's kernel-libipsec has no XFRM interface IDs (if_id) and routes every CHILD_SA through its own TUN device; use mode policy, or dataPlane KernelXFRM"}},
		},
		"ModeNAT": {
			reason: "The gateway's mode left out is nat, whose presented local subnets 0.0.0.0/0 cannot be: refused.",
			mod:    func(in *Input) { in.Spec.Tunnels = in.Spec.Tunnels[:1]; in.Spec.Mode = "" },
			want:   Errors{{"tunnels[a].mode", "route needs the gateway's mode routed: in mode nat the local traffic selectors are the addresses presented to the client, which 0.0.0.0/0 cannot be; set mode routed, or use mode policy"}},
		},
		"NoRoutes": {
			reason: "A route-mode tunnel without routes would carry nothing.",
			mod:    func(in *Input) { in.Spec.Tunnels[1].Routes = nil },
			want:   Errors{{"tunnels[b].routes", "a tunnel in mode route needs routes: the remote subnets routed over its XFRM interface"}},
		},
		"RoutesAndMetricInPolicy": {
			reason: "routes and routeMetric mean nothing in mode policy: refused, each named.",
			mod: func(in *Input) {
				in.Spec.Tunnels[1].Mode = v1alpha1.TunnelModePolicy
				in.Spec.Tunnels[1].TrafficSelectors[0] = v1alpha1.TrafficSelector{Local: "10.30.0.0/24", Remote: "192.168.2.0/24"}
				in.Spec.Tunnels[0].Routes = []v1alpha1.CIDR{"172.16.0.0/16"}
			},
			want: Errors{
				{"tunnels[b].routes", "routes are for mode route: a policy-mode tunnel carries the subnets of its traffic selectors; set mode route, or remove routes"},
				{"tunnels[b].routeMetric", "routeMetric is for mode route: set mode route, or remove routeMetric"},
			},
		},
		"RouteOutsideSelectors": {
			reason: "A route outside every remote selector of its tunnel would drop its packets in the interface.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].TrafficSelectors[0].Remote = "172.31.0.0/17"
			},
			want: Errors{{"tunnels[a].routes[0]", "172.31.0.0/16 is in no remote traffic selector of the tunnel: its packets would find no CHILD_SA in the interface and be dropped; widen a remote selector (such as 0.0.0.0/0) or route a subnet inside one"}},
		},
		"NarrowedSelectors": {
			reason: "A route-mode tunnel with narrowed selectors routes a subnet inside its remote one; local inside remote is no overlap in route mode when the remote is 0.0.0.0/0.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].TrafficSelectors[0] = v1alpha1.TrafficSelector{Local: "10.30.0.0/24", Remote: "0.0.0.0/0"}
				in.Spec.Tunnels[1].TrafficSelectors[0] = v1alpha1.TrafficSelector{Local: "0.0.0.0/0", Remote: "172.31.0.0/16"}
			},
		},
		"RouteOverlapsTenantOwnAndPeer": {
			reason: "Routes covering a tenant subnet, the gateway's own network or a peer's address would hijack them: each refused.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].Routes = []v1alpha1.CIDR{"10.244.1.0/24", "10.20.0.0/16", "198.51.100.0/24"}
			},
			want: Errors{
				{"tunnels[a].routes[0]", "10.244.1.0/24 overlaps tenant subnet 10.244.0.0/16"},
				{"tunnels[a].routes[1]", "10.20.0.0/16 overlaps the gateway's own network 10.20.0.0/24"},
				{"tunnels[a].routes[2]", "198.51.100.0/24 holds the address 198.51.100.1 of tunnel a's peer: IKE and ESP to it would enter the tunnel; route the peer's subnets, not its address"},
				{"tunnels[a].routes[2]", "198.51.100.0/24 holds the address 198.51.100.2 of tunnel b's peer: IKE and ESP to it would enter the tunnel; route the peer's subnets, not its address"},
			},
		},
		"RouteOverPolicyTunnel": {
			reason: "A route over a policy-mode tunnel's remote subnet would take its traffic into the XFRM interface.",
			mod: func(in *Input) {
				in.Spec.Tunnels[1] = policy(in.Spec.Tunnels[1])
				in.Spec.Tunnels[1].TrafficSelectors[0] = v1alpha1.TrafficSelector{Local: "10.30.0.0/24", Remote: "172.31.5.0/24"}
			},
			want: Errors{{"tunnels[a].routes[0]", "172.31.0.0/16 overlaps tunnels[b].trafficSelectors[0].remote 172.31.5.0/24 of a tunnel in mode policy: the route would take that tunnel's traffic into the XFRM interface"}},
		},
		"MixedApart": {
			reason: "A route-mode tunnel beside a policy-mode tunnel whose subnets it does not route: its 0.0.0.0/0 selectors overlap nothing that matters.",
			mod: func(in *Input) {
				in.Spec.Tunnels[1] = policy(in.Spec.Tunnels[1])
				in.Spec.Tunnels[1].TrafficSelectors[0] = v1alpha1.TrafficSelector{Local: "10.30.0.0/24", Remote: "192.168.2.0/24"}
			},
		},
		"RouteTwice": {
			reason: "One destination twice in a tunnel's routes is refused.",
			mod:    func(in *Input) { in.Spec.Tunnels[0].Routes = []v1alpha1.CIDR{"172.31.0.0/16", "172.31.0.0/16"} },
			want:   Errors{{"tunnels[a].routes[1]", "172.31.0.0/16 is routed twice"}},
		},
		"UnknownMode": {
			reason: "A mode that is neither policy nor route is refused.",
			mod:    func(in *Input) { in.Spec.Tunnels[0].Mode = "vti" },
			want:   Errors{{"tunnels[a].mode", `"vti" is not policy or route`}, {"tunnels[a].trafficSelectors[0]", "0.0.0.0/0 traffic selectors are for mode route (one XFRM interface per tunnel, routes deciding what enters it): set mode route with routes, or give the subnets the tunnel carries"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := routeBased()
			tc.mod(&in)
			wantErrors(t, tc.reason, in, tc.want)
		})
	}
}

// policy returns tn in mode policy without its route-mode fields.
func policy(tn v1alpha1.Tunnel) v1alpha1.Tunnel {
	tn.Mode, tn.Routes, tn.RouteMetric = v1alpha1.TunnelModePolicy, nil, nil
	return tn
}

// TestXFRMConfOrder proves xfrm.json depends on the set of routes, not on
// the order of the tunnels or of their routes, and that the hash follows
// it: a metric changed alone changes the hash.
func TestXFRMConfOrder(t *testing.T) {
	in := routeBased()
	in.Spec.Tunnels[0].Routes = []v1alpha1.CIDR{"172.31.0.0/16", "172.16.5.0/24"}
	in.Spec.Tunnels[1].Routes = []v1alpha1.CIDR{"172.16.5.0/24", "172.31.0.0/16"}
	a, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(in.Spec.Tunnels)
	slices.Reverse(in.Spec.Tunnels[0].Routes)
	b, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	// The interfaces are listed in tunnel order; routes are sorted.
	ra, rb := routesOf(t, a.XFRMInterfaces), routesOf(t, b.XFRMInterfaces)
	if diff := cmp.Diff(ra, rb); diff != "" {
		t.Errorf("the routes of xfrm.json depend on the order of tunnels and routes: -first, +reordered:\n%s", diff)
	}
	in.Spec.Tunnels[0].RouteMetric = ptr.To(int32(150))
	c, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if c.Hash == b.Hash {
		t.Errorf("a changed route metric left the hash as it was: the pod would not see the change")
	}
}

func routesOf(t *testing.T, b []byte) []xfrmi.Route {
	t.Helper()
	var c xfrmi.Config
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c.Routes
}
