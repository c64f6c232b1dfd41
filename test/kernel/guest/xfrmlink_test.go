//go:build kernel

package guest

import (
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"

	"github.com/ipsecgw/provider-ipsec/internal/agent/xfrmlink"
	"github.com/ipsecgw/provider-ipsec/internal/xfrmi"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// TestXFRMLinkKernel applies a cloud VPN connection's XFRM interfaces and
// routes (internal/agent/xfrmlink, as the agent does on each configuration
// change) in a gateway namespace of the real kernel, step after step, each
// by a new Applier (it keeps no state: a restarted agent's is the same), and
// compares what the kernel then holds (its XFRM interfaces with their IDs
// and parents, up, and the main table's routes through them) and what
// Apply says it changed with what each step wants.
func TestXFRMLinkKernel(t *testing.T) {
	tp := topology.StartBare(t, topology.Options{})
	ns, err := tp.AddHost("gw", topology.PrivateAddress, "net1", topology.MACAddress)
	if err != nil {
		t.Fatal(err)
	}
	const dst = "172.31.0.0/16"
	one, two := tunnelLink("cloud-vpn-1"), tunnelLink("cloud-vpn-2")
	both := []xfrmi.Interface{one, two}
	route := func(metric uint32, links ...xfrmi.Interface) xfrmi.Route {
		r := xfrmi.Route{Destination: dst, Metric: metric}
		for _, l := range links {
			r.Interfaces = append(r.Interfaces, l.Name)
		}
		slices.Sort(r.Interfaces)
		return r
	}
	backup := xfrmi.Config{Interfaces: both, Routes: []xfrmi.Route{route(100, one), route(200, two)}}
	ecmp := xfrmi.Config{Interfaces: both, Routes: []xfrmi.Route{route(100, one, two)}}
	linkState := func(links ...xfrmi.Interface) []string {
		var out []string
		for _, l := range links {
			out = append(out, fmt.Sprintf("%s if_id %#x on net1 up", l.Name, l.IfID))
		}
		slices.Sort(out)
		return out
	}
	key := func(metric uint32) string { return fmt.Sprintf("%s metric %d", dst, metric) }
	steps := []struct {
		reason string
		conf   xfrmi.Config
		want   xfrmlink.Result
		links  []string
		routes []string
	}{
		{
			reason: "From nothing: both interfaces created and up, the active tunnel's route at metric 100, the backup's at 200.",
			conf:   backup, want: xfrmlink.Result{Created: []string{one.Name, two.Name}, Routed: []string{key(100), key(200)}},
			links: linkState(one, two), routes: []string{key(100) + " via " + one.Name, key(200) + " via " + two.Name},
		},
		{
			reason: "The same configuration again, by a new Applier as a restarted agent makes one: nothing changes.",
			conf:   backup, links: linkState(one, two), routes: []string{key(100) + " via " + one.Name, key(200) + " via " + two.Name},
		},
		{
			reason: "Equal metrics: one multipath route over both interfaces replaces the two routes.",
			conf:   ecmp, want: xfrmlink.Result{Routed: []string{key(100)}, Unrouted: []string{key(200)}},
			links: linkState(one, two), routes: []string{key(100) + " via " + strings.Join(route(100, one, two).Interfaces, ",")},
		},
		{
			reason: "Back to active/backup.",
			conf:   backup, want: xfrmlink.Result{Routed: []string{key(100), key(200)}},
			links: linkState(one, two), routes: []string{key(100) + " via " + one.Name, key(200) + " via " + two.Name},
		},
		{
			reason: "The backup tunnel removed: its interface deleted, and with it its route.",
			conf:   xfrmi.Config{Interfaces: []xfrmi.Interface{one}, Routes: []xfrmi.Route{route(100, one)}},
			want:   xfrmlink.Result{Deleted: []string{two.Name}},
			links:  linkState(one), routes: []string{key(100) + " via " + one.Name},
		},
		{
			reason: "No route-mode tunnel left: every owned interface and route is gone.",
			conf:   xfrmi.Config{}, want: xfrmlink.Result{Deleted: []string{one.Name}},
		},
	}
	for i, s := range steps {
		file, err := json.Marshal(s.conf)
		if err != nil {
			t.Fatal(err)
		}
		var res xfrmlink.Result
		var links, routes []string
		err = topology.Do(ns, func() error {
			a, err := xfrmlink.New("net1")
			if err != nil {
				return err
			}
			if res, err = a.Apply(file); err != nil {
				return err
			}
			links, routes, err = xfrmState()
			return err
		})
		if err != nil {
			t.Fatalf("step %d (%s): %v", i, s.reason, err)
		}
		if diff := cmp.Diff(s.want, res, sortedResult()); diff != "" {
			t.Errorf("step %d (%s): Apply's result -want, +got:\n%s", i, s.reason, diff)
		}
		if diff := cmp.Diff(s.links, links); diff != "" {
			t.Errorf("step %d (%s): the kernel's XFRM interfaces -want, +got:\n%s", i, s.reason, diff)
		}
		if diff := cmp.Diff(s.routes, routes); diff != "" {
			t.Errorf("step %d (%s): the kernel's routes through them -want, +got:\n%s", i, s.reason, diff)
		}
	}
}

// tunnelLink is the XFRM interface of the route-mode tunnel named name.
func tunnelLink(name string) xfrmi.Interface {
	id := xfrmi.IfID(name)
	return xfrmi.Interface{Name: xfrmi.InterfaceName(id), IfID: id, Tunnel: name}
}

// sortedResult compares Results' lists as sets.
func sortedResult() cmp.Option {
	return cmp.Transformer("sorted", func(in []string) []string {
		out := slices.Clone(in)
		slices.Sort(out)
		return out
	})
}

// xfrmState reads the calling thread's namespace: its XFRM interfaces
// ("<name> if_id <id> on <parent> up|down") and the main table's routes
// through one ("<destination> metric <metric> via <interfaces, sorted,
// comma-separated>"), each sorted.
func xfrmState() (links, routes []string, err error) {
	all, err := netlink.LinkList()
	if err != nil {
		return nil, nil, err
	}
	names := map[int]string{}
	for _, l := range all {
		names[l.Attrs().Index] = l.Attrs().Name
	}
	xfrm := map[int]bool{}
	for _, l := range all {
		x, ok := l.(*netlink.Xfrmi)
		if !ok {
			continue
		}
		xfrm[x.Index] = true
		state := "down"
		if x.Flags&net.FlagUp != 0 {
			state = "up"
		}
		links = append(links, fmt.Sprintf("%s if_id %#x on %s %s", x.Name, x.Ifid, names[x.ParentIndex], state))
	}
	rs, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: 254}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range rs {
		var via []string
		if r.LinkIndex != 0 && xfrm[r.LinkIndex] {
			via = append(via, names[r.LinkIndex])
		}
		for _, h := range r.MultiPath {
			if xfrm[h.LinkIndex] {
				via = append(via, names[h.LinkIndex])
			}
		}
		if len(via) == 0 || r.Dst == nil {
			continue
		}
		slices.Sort(via)
		routes = append(routes, fmt.Sprintf("%s metric %d via %s", r.Dst, r.Priority, strings.Join(via, ",")))
	}
	slices.Sort(links)
	slices.Sort(routes)
	return links, routes, nil
}
