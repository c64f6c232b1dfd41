package routerroutes

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
)

// desiredRoutes returns the routes p asks for, each with its own nexthop
// or else p.Nexthop (set by hand or resolved from nexthopPortRef), without
// duplicates, in spec order. It returns an error naming the route when
// neither gives a nexthop, which admission prevents unless the nexthop
// reference has not been resolved.
func desiredRoutes(p v1alpha1.RouterRoutesParameters) ([]routers.Route, error) {
	out := make([]routers.Route, 0, len(p.Routes))
	seen := map[string]bool{}
	for i, r := range p.Routes {
		var nh string
		switch {
		case r.Nexthop != nil:
			nh = string(*r.Nexthop)
		case p.Nexthop != nil && *p.Nexthop != "":
			nh = *p.Nexthop
		default:
			return nil, fmt.Errorf(errNoNexthop, i, r.Destination)
		}
		rt := routers.Route{DestinationCIDR: string(r.Destination), NextHop: nh}
		if k := key(rt); !seen[k] {
			seen[k] = true
			out = append(out, rt)
		}
	}
	return out, nil
}

// key identifies a route by its destination and nexthop in canonical form,
// so that "2001:DB8::/64" and "2001:db8::/64" are the same route whichever
// way Neutron spells it. Strings that do not parse are compared as they
// are.
func key(r routers.Route) string {
	d, n := r.DestinationCIDR, r.NextHop
	if p, err := netip.ParsePrefix(d); err == nil {
		d = p.Masked().String()
	}
	if a, err := netip.ParseAddr(n); err == nil {
		n = a.String()
	}
	return d + " via " + n
}

// classify sorts the routes a router has (present) against the routes the
// spec asks for (desired) and the routes this resource owned at its last
// observation (owned, from status.atProvider.routes):
//   - ours are the present routes that are desired or owned, in Neutron's
//     spelling, sorted: the routes this resource may remove;
//   - missing are the desired routes not present: to add;
//   - stale are ours that are no longer desired (dropped from the spec or
//     given another nexthop): to remove.
//
// Present routes that are neither desired nor owned belong to someone else
// and appear in no list. A route another tool added that is equal to a
// desired one (same destination and nexthop) cannot be told apart and
// counts as ours.
func classify(desired, owned, present []routers.Route) (ours, missing, stale []routers.Route) {
	want := map[string]bool{}
	for _, r := range desired {
		want[key(r)] = true
	}
	mine := map[string]bool{}
	for _, r := range owned {
		mine[key(r)] = true
	}
	have := map[string]bool{}
	for _, r := range present {
		k := key(r)
		have[k] = true
		if want[k] || mine[k] {
			ours = append(ours, r)
			if !want[k] {
				stale = append(stale, r)
			}
		}
	}
	for _, r := range desired {
		if !have[key(r)] {
			missing = append(missing, r)
		}
	}
	slices.SortFunc(ours, func(a, b routers.Route) int { return strings.Compare(key(a), key(b)) })
	slices.SortFunc(stale, func(a, b routers.Route) int { return strings.Compare(key(a), key(b)) })
	return ours, missing, stale
}

// observed converts routes to status.atProvider.routes.
func observed(rs []routers.Route) []v1alpha1.ObservedRoute {
	if len(rs) == 0 {
		return nil
	}
	out := make([]v1alpha1.ObservedRoute, len(rs))
	for i, r := range rs {
		out[i] = v1alpha1.ObservedRoute{Destination: r.DestinationCIDR, Nexthop: r.NextHop}
	}
	return out
}

// owned converts status.atProvider.routes back to routes.
func owned(os []v1alpha1.ObservedRoute) []routers.Route {
	out := make([]routers.Route, len(os))
	for i, o := range os {
		out[i] = routers.Route{DestinationCIDR: o.Destination, NextHop: o.Nexthop}
	}
	return out
}

// describe lists routes for messages: "10.30.0.0/24 via 10.20.0.50, …".
func describe(rs []routers.Route) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.DestinationCIDR + " via " + r.NextHop
	}
	return strings.Join(s, ", ")
}
