package render

import (
	"cmp"
	"encoding/json"
	"net/netip"
	"slices"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/xfrmi"
)

// xfrmConf renders the XFRM interfaces and routes of the route-mode
// tunnels (Files.XFRMInterfaces), nil when there is none. The routes of one
// destination and metric across tunnels become one multipath route (ECMP);
// routes are sorted by destination, then metric, so that the file depends
// on the set of routes, not on the order of the tunnels or of their routes.
func xfrmConf(in Input, c *checked) []byte {
	var conf xfrmi.Config
	for _, t := range in.Spec.Tunnels {
		if t.Mode != v1alpha1.TunnelModeRoute {
			continue
		}
		id := xfrmi.IfID(t.Name)
		conf.Interfaces = append(conf.Interfaces, xfrmi.Interface{Name: xfrmi.InterfaceName(id), IfID: id, Tunnel: t.Name})
	}
	if len(conf.Interfaces) == 0 {
		return nil
	}
	type key struct {
		dst    netip.Prefix
		metric uint32
	}
	hops := map[key][]string{}
	for _, r := range c.routes {
		k := key{r.dst, r.metric}
		hops[k] = append(hops[k], xfrmi.InterfaceName(xfrmi.IfID(r.tunnel)))
	}
	keys := make([]key, 0, len(hops))
	for k := range hops {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(a.dst.Addr().Compare(b.dst.Addr()), cmp.Compare(a.dst.Bits(), b.dst.Bits()), cmp.Compare(a.metric, b.metric))
	})
	conf.Routes = make([]xfrmi.Route, 0, len(keys))
	for _, k := range keys {
		ifs := hops[k]
		slices.Sort(ifs)
		conf.Routes = append(conf.Routes, xfrmi.Route{Destination: k.dst.String(), Metric: k.metric, Interfaces: ifs})
	}
	b, _ := json.MarshalIndent(conf, "", "  ") // strings and numbers only
	return append(b, '\n')
}
