package xfrmlink

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/vishvananda/netlink"

	"github.com/ipsecgw/provider-ipsec/internal/xfrmi"
)

// fakeNS is a network namespace as rtnetlink shows it, enough for Apply:
// links by index and the main table's routes, which it changes as the
// kernel would (a deleted link takes its routes; a replaced route is found
// by destination and priority). It records every call that changes
// something, in a form close to iproute2's.
type fakeNS struct {
	links  map[int]netlink.Link
	routes []netlink.Route
	next   int
	calls  []string
	// fail makes the call whose record starts with it fail.
	fail string
}

func newNS(links ...netlink.Link) *fakeNS {
	ns := &fakeNS{links: map[int]netlink.Link{}, next: 1}
	for _, l := range links {
		ns.next++
		l.Attrs().Index = ns.next
		ns.links[ns.next] = l
	}
	return ns
}

func (ns *fakeNS) record(c string) error {
	ns.calls = append(ns.calls, c)
	if ns.fail != "" && strings.HasPrefix(c, ns.fail) {
		return errors.New("operation not permitted")
	}
	return nil
}

func (ns *fakeNS) byName(name string) netlink.Link {
	for _, l := range ns.links {
		if l.Attrs().Name == name {
			return l
		}
	}
	return nil
}

func (ns *fakeNS) name(index int) string {
	if l, ok := ns.links[index]; ok {
		return l.Attrs().Name
	}
	return fmt.Sprintf("if%d", index)
}

func (ns *fakeNS) LinkByName(name string) (netlink.Link, error) {
	if l := ns.byName(name); l != nil {
		return l, nil
	}
	return nil, errors.New("Link not found")
}

func (ns *fakeNS) LinkList() ([]netlink.Link, error) {
	var out []netlink.Link
	for i := range ns.next + 1 {
		if l, ok := ns.links[i]; ok {
			out = append(out, l)
		}
	}
	return out, nil
}

func (ns *fakeNS) LinkAdd(l netlink.Link) error {
	x := l.(*netlink.Xfrmi)
	if err := ns.record(fmt.Sprintf("link add %s type xfrm dev %s if_id %d", x.Name, ns.name(x.ParentIndex), x.Ifid)); err != nil {
		return err
	}
	if ns.byName(x.Name) != nil {
		return errors.New("file exists")
	}
	ns.next++
	c := *x
	c.Index = ns.next
	ns.links[ns.next] = &c
	return nil
}

func (ns *fakeNS) LinkDel(l netlink.Link) error {
	if err := ns.record("link del " + l.Attrs().Name); err != nil {
		return err
	}
	i := l.Attrs().Index
	delete(ns.links, i)
	ns.routes = slices.DeleteFunc(ns.routes, func(r netlink.Route) bool { return slices.Contains(hops(r), i) })
	return nil
}

func (ns *fakeNS) LinkSetUp(l netlink.Link) error {
	if err := ns.record("link set " + l.Attrs().Name + " up"); err != nil {
		return err
	}
	ns.links[l.Attrs().Index].Attrs().Flags |= net.FlagUp
	return nil
}

func (ns *fakeNS) RouteListFiltered(family int, filter *netlink.Route, mask uint64) ([]netlink.Route, error) {
	if family != netlink.FAMILY_V4 || mask != netlink.RT_FILTER_TABLE || filter.Table != 254 {
		return nil, fmt.Errorf("unexpected filter family %d mask %d table %d", family, mask, filter.Table)
	}
	return slices.Clone(ns.routes), nil
}

func (ns *fakeNS) describe(r *netlink.Route) string {
	var via []string
	for _, i := range hops(*r) {
		via = append(via, ns.name(i))
	}
	slices.Sort(via)
	return key(r) + " dev " + strings.Join(via, ",")
}

func (ns *fakeNS) RouteReplace(r *netlink.Route) error {
	if err := ns.record("route replace " + ns.describe(r)); err != nil {
		return err
	}
	for _, i := range hops(*r) {
		if _, ok := ns.links[i]; !ok {
			return errors.New("no such device")
		}
	}
	ns.routes = slices.DeleteFunc(ns.routes, func(x netlink.Route) bool { return key(&x) == key(r) })
	ns.routes = append(ns.routes, *r)
	return nil
}

func (ns *fakeNS) RouteDel(r *netlink.Route) error {
	if err := ns.record("route del " + ns.describe(r)); err != nil {
		return err
	}
	ns.routes = slices.DeleteFunc(ns.routes, func(x netlink.Route) bool { return key(&x) == key(r) })
	return nil
}

// state is the namespace as "ip link" and "ip route" would summarise it:
// the XFRM interfaces with ID, parent and state, then the routes.
func (ns *fakeNS) state() []string {
	var out []string
	links, _ := ns.LinkList()
	for _, l := range links {
		if x, ok := l.(*netlink.Xfrmi); ok {
			up := "down"
			if x.Flags&net.FlagUp != 0 {
				up = "up"
			}
			out = append(out, fmt.Sprintf("%s if_id %d dev %s %s", x.Name, x.Ifid, ns.name(x.ParentIndex), up))
		}
	}
	for _, r := range ns.routes {
		out = append(out, ns.describe(&r))
	}
	slices.Sort(out)
	return out
}

var (
	id1, id2 = xfrmi.IfID("cloud-vpn-1"), xfrmi.IfID("cloud-vpn-2")
	if1, if2 = xfrmi.InterfaceName(id1), xfrmi.InterfaceName(id2)
)

func ifaces() []xfrmi.Interface {
	return []xfrmi.Interface{{Name: if1, IfID: id1, Tunnel: "cloud-vpn-1"}, {Name: if2, IfID: id2, Tunnel: "cloud-vpn-2"}}
}

// activeBackup is route-active-backup's xfrm.json.
func activeBackup() xfrmi.Config {
	return xfrmi.Config{Interfaces: ifaces(), Routes: []xfrmi.Route{
		{Destination: "172.31.0.0/16", Metric: 100, Interfaces: []string{if1}},
		{Destination: "172.31.0.0/16", Metric: 200, Interfaces: []string{if2}},
	}}
}

// ecmp is route-ecmp's xfrm.json.
func ecmp() xfrmi.Config {
	return xfrmi.Config{Interfaces: ifaces(), Routes: []xfrmi.Route{
		{Destination: "172.31.0.0/16", Metric: 100, Interfaces: []string{if2, if1}},
	}}
}

// pod is a gateway pod's namespace before Apply: lo, eth0 (pod network),
// net1 (tenant network), and an XFRM interface Apply does not own.
func pod() []netlink.Link {
	return []netlink.Link{
		&netlink.Device{LinkAttrs: netlink.LinkAttrs{Name: "lo"}},
		&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}},
		&netlink.Macvlan{LinkAttrs: netlink.LinkAttrs{Name: "net1"}},
		&netlink.Xfrmi{LinkAttrs: netlink.LinkAttrs{Name: "xfrm0"}, Ifid: 7},
	}
}

// applied returns pod() after Apply(conf).
func applied(t *testing.T, conf xfrmi.Config) *fakeNS {
	t.Helper()
	ns := newNS(pod()...)
	ns.routes = append(ns.routes, netlink.Route{Dst: mustCIDR("10.20.0.0/24"), LinkIndex: 4, Table: 254})
	if _, err := Apply(ns, "net1", conf); err != nil {
		t.Fatal(err)
	}
	ns.calls = nil
	return ns
}

func mustCIDR(s string) *net.IPNet {
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	return n
}

func TestApply(t *testing.T) {
	type want struct {
		calls []string
		state []string
		res   Result
		err   string
	}
	net1Route := "10.20.0.0/24 metric 0 dev net1"
	up := func(name string, id uint32) string { return fmt.Sprintf("%s if_id %d dev net1 up", name, id) }
	cases := map[string]struct {
		reason string
		ns     func(t *testing.T) *fakeNS
		conf   xfrmi.Config
		want   want
	}{
		"ActiveBackupFromNothing": {
			reason: "Two route-mode tunnels in a fresh pod: an XFRM interface each on net1, set up, and one plain route per tunnel and metric; net1's route and the unowned xfrm0 stay.",
			ns:     func(*testing.T) *fakeNS { return applied(t, xfrmi.Config{}) },
			conf:   activeBackup(),
			want: want{
				calls: []string{
					fmt.Sprintf("link add %s type xfrm dev net1 if_id %d", if1, id1), "link set " + if1 + " up",
					fmt.Sprintf("link add %s type xfrm dev net1 if_id %d", if2, id2), "link set " + if2 + " up",
					"route replace 172.31.0.0/16 metric 100 dev " + if1,
					"route replace 172.31.0.0/16 metric 200 dev " + if2,
				},
				state: []string{net1Route, "172.31.0.0/16 metric 100 dev " + if1, "172.31.0.0/16 metric 200 dev " + if2, up(if1, id1), up(if2, id2), "xfrm0 if_id 7 dev if0 down"},
				res:   Result{Created: []string{if1, if2}, Routed: []string{"172.31.0.0/16 metric 100", "172.31.0.0/16 metric 200"}},
			},
		},
		"ECMPFromNothing": {
			reason: "Equal metrics: one multipath route with a next hop per interface.",
			ns:     func(*testing.T) *fakeNS { return applied(t, xfrmi.Config{}) },
			conf:   ecmp(),
			want: want{
				calls: []string{
					fmt.Sprintf("link add %s type xfrm dev net1 if_id %d", if1, id1), "link set " + if1 + " up",
					fmt.Sprintf("link add %s type xfrm dev net1 if_id %d", if2, id2), "link set " + if2 + " up",
					fmt.Sprintf("route replace 172.31.0.0/16 metric 100 dev %s,%s", if2, if1),
				},
				state: []string{net1Route, fmt.Sprintf("172.31.0.0/16 metric 100 dev %s,%s", if2, if1), up(if1, id1), up(if2, id2), "xfrm0 if_id 7 dev if0 down"},
				res:   Result{Created: []string{if1, if2}, Routed: []string{"172.31.0.0/16 metric 100"}},
			},
		},
		"Idempotent": {
			reason: "Applying the same configuration again changes nothing: no call that writes.",
			ns:     func(t *testing.T) *fakeNS { return applied(t, ecmp()) },
			conf:   ecmp(),
			want: want{
				state: []string{net1Route, fmt.Sprintf("172.31.0.0/16 metric 100 dev %s,%s", if2, if1), up(if1, id1), up(if2, id2), "xfrm0 if_id 7 dev if0 down"},
			},
		},
		"ECMPToActiveBackup": {
			reason: "Changing the second tunnel's metric replaces the multipath route by the active one first, then adds the backup's: the destination is never unrouted.",
			ns:     func(t *testing.T) *fakeNS { return applied(t, ecmp()) },
			conf:   activeBackup(),
			want: want{
				calls: []string{"route replace 172.31.0.0/16 metric 100 dev " + if1, "route replace 172.31.0.0/16 metric 200 dev " + if2},
				state: []string{net1Route, "172.31.0.0/16 metric 100 dev " + if1, "172.31.0.0/16 metric 200 dev " + if2, up(if1, id1), up(if2, id2), "xfrm0 if_id 7 dev if0 down"},
				res:   Result{Routed: []string{"172.31.0.0/16 metric 100", "172.31.0.0/16 metric 200"}},
			},
		},
		"RouteRemoved": {
			reason: "A route no longer configured is deleted after the others are in place.",
			ns: func(t *testing.T) *fakeNS {
				c := activeBackup()
				c.Routes = append(c.Routes, xfrmi.Route{Destination: "172.16.5.0/24", Metric: 100, Interfaces: []string{if1}})
				return applied(t, c)
			},
			conf: activeBackup(),
			want: want{
				calls: []string{"route del 172.16.5.0/24 metric 100 dev " + if1},
				state: []string{net1Route, "172.31.0.0/16 metric 100 dev " + if1, "172.31.0.0/16 metric 200 dev " + if2, up(if1, id1), up(if2, id2), "xfrm0 if_id 7 dev if0 down"},
				res:   Result{Unrouted: []string{"172.16.5.0/24 metric 100"}},
			},
		},
		"TunnelRemoved": {
			reason: "A tunnel gone from the configuration: its interface is deleted (its routes with it); the other tunnel's stay.",
			ns:     func(t *testing.T) *fakeNS { return applied(t, activeBackup()) },
			conf: xfrmi.Config{Interfaces: ifaces()[:1], Routes: []xfrmi.Route{
				{Destination: "172.31.0.0/16", Metric: 100, Interfaces: []string{if1}},
			}},
			want: want{
				calls: []string{"link del " + if2},
				state: []string{net1Route, "172.31.0.0/16 metric 100 dev " + if1, up(if1, id1), "xfrm0 if_id 7 dev if0 down"},
				res:   Result{Deleted: []string{if2}},
			},
		},
		"AllRemoved": {
			reason: "No route-mode tunnel left (no xfrm.json): every owned interface goes; xfrm0, not named as Apply names them, stays.",
			ns:     func(t *testing.T) *fakeNS { return applied(t, ecmp()) },
			conf:   xfrmi.Config{},
			want: want{
				calls: []string{"link del " + if1, "link del " + if2},
				state: []string{net1Route, "xfrm0 if_id 7 dev if0 down"},
				res:   Result{Deleted: []string{if1, if2}},
			},
		},
		"WrongIfID": {
			reason: "An owned interface with another ID (left by an older configuration) is replaced, and its routes added again.",
			ns: func(t *testing.T) *fakeNS {
				ns := applied(t, ecmp())
				ns.byName(if1).(*netlink.Xfrmi).Ifid = 99
				return ns
			},
			conf: ecmp(),
			want: want{
				calls: []string{
					"link del " + if1,
					fmt.Sprintf("link add %s type xfrm dev net1 if_id %d", if1, id1), "link set " + if1 + " up",
					fmt.Sprintf("route replace 172.31.0.0/16 metric 100 dev %s,%s", if2, if1),
				},
				state: []string{net1Route, fmt.Sprintf("172.31.0.0/16 metric 100 dev %s,%s", if2, if1), up(if1, id1), up(if2, id2), "xfrm0 if_id 7 dev if0 down"},
				res:   Result{Created: []string{if1}, Routed: []string{"172.31.0.0/16 metric 100"}},
			},
		},
		"Down": {
			reason: "An owned interface someone set down is set up again.",
			ns: func(t *testing.T) *fakeNS {
				ns := applied(t, ecmp())
				ns.byName(if2).Attrs().Flags &^= net.FlagUp
				return ns
			},
			conf: ecmp(),
			want: want{
				calls: []string{"link set " + if2 + " up"},
				state: []string{net1Route, fmt.Sprintf("172.31.0.0/16 metric 100 dev %s,%s", if2, if1), up(if1, id1), up(if2, id2), "xfrm0 if_id 7 dev if0 down"},
			},
		},
		"AddFails": {
			reason: "The first interface cannot be created: the error names it, the second tunnel's interface and route are still made, the route over the missing one is reported.",
			ns: func(t *testing.T) *fakeNS {
				ns := applied(t, xfrmi.Config{})
				ns.fail = "link add " + if1
				return ns
			},
			conf: activeBackup(),
			want: want{
				calls: []string{
					fmt.Sprintf("link add %s type xfrm dev net1 if_id %d", if1, id1),
					fmt.Sprintf("link add %s type xfrm dev net1 if_id %d", if2, id2), "link set " + if2 + " up",
					"route replace 172.31.0.0/16 metric 200 dev " + if2,
				},
				state: []string{net1Route, "172.31.0.0/16 metric 200 dev " + if2, up(if2, id2), "xfrm0 if_id 7 dev if0 down"},
				res:   Result{Created: []string{if2}, Routed: []string{"172.31.0.0/16 metric 200"}},
				err:   fmt.Sprintf("cannot create XFRM interface %s (if_id %d): operation not permitted\ncannot route 172.31.0.0/16 metric 100: invalid route: interface %s is not there", if1, id1, if1),
			},
		},
		"NoParent": {
			reason: "Without the tenant interface nothing is created: the error names it.",
			ns: func(t *testing.T) *fakeNS {
				ns := applied(t, xfrmi.Config{})
				delete(ns.links, ns.byName("net1").Attrs().Index)
				return ns
			},
			conf: ecmp(),
			want: want{
				state: []string{"xfrm0 if_id 7 dev if0 down", "10.20.0.0/24 metric 0 dev if4"},
				err:   "cannot find the XFRM interfaces' parent interface net1: Link not found",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns := tc.ns(t)
			res, err := Apply(ns, "net1", tc.conf)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.want.err, gotErr); diff != "" {
				t.Errorf("%s\nApply(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.res, res, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nApply(...): -want result, +got result:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.calls, ns.calls, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nnetlink calls: -want, +got:\n%s", tc.reason, diff)
			}
			want := slices.Clone(tc.want.state)
			slices.Sort(want)
			if diff := cmp.Diff(want, ns.state(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nthe namespace after Apply: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestUsable(t *testing.T) {
	mixed := activeBackup()
	mixed.Routes = append(mixed.Routes, xfrmi.Route{Destination: "172.16.5.0/24", Metric: 100, Interfaces: []string{if1}})
	cases := map[string]struct {
		reason string
		conf   xfrmi.Config
		down   map[string]bool
		want   xfrmi.Config
	}{
		"NoneDown": {
			reason: "With every tunnel up the configuration is used as it is.",
			conf:   activeBackup(),
			want:   activeBackup(),
		},
		"ActiveDown": {
			reason: "The active tunnel down: its route is withdrawn, so that the backup's (metric 200) carries the destination.",
			conf:   activeBackup(),
			down:   map[string]bool{"cloud-vpn-1": true},
			want: xfrmi.Config{Interfaces: ifaces(), Routes: []xfrmi.Route{
				{Destination: "172.31.0.0/16", Metric: 200, Interfaces: []string{if2}},
			}},
		},
		"BackupDown": {
			reason: "The backup tunnel down: its route is withdrawn, the active's stays.",
			conf:   activeBackup(),
			down:   map[string]bool{"cloud-vpn-2": true},
			want: xfrmi.Config{Interfaces: ifaces(), Routes: []xfrmi.Route{
				{Destination: "172.31.0.0/16", Metric: 100, Interfaces: []string{if1}},
			}},
		},
		"BothDown": {
			reason: "No tunnel up for the destination: every route stays, so that its packets are dropped in the interfaces rather than sent by the default route in the clear.",
			conf:   activeBackup(),
			down:   map[string]bool{"cloud-vpn-1": true, "cloud-vpn-2": true},
			want:   activeBackup(),
		},
		"ECMPOneDown": {
			reason: "ECMP with one tunnel down: the multipath route keeps only the next hop that is up.",
			conf:   ecmp(),
			down:   map[string]bool{"cloud-vpn-2": true},
			want: xfrmi.Config{Interfaces: ifaces(), Routes: []xfrmi.Route{
				{Destination: "172.31.0.0/16", Metric: 100, Interfaces: []string{if1}},
			}},
		},
		"ECMPBothDown": {
			reason: "ECMP with both down: the route stays as configured.",
			conf:   ecmp(),
			down:   map[string]bool{"cloud-vpn-1": true, "cloud-vpn-2": true},
			want:   ecmp(),
		},
		"PerDestination": {
			reason: "A destination only the down tunnel routes keeps its route; the shared one moves to the backup.",
			conf:   mixed,
			down:   map[string]bool{"cloud-vpn-1": true},
			want: xfrmi.Config{Interfaces: ifaces(), Routes: []xfrmi.Route{
				{Destination: "172.31.0.0/16", Metric: 200, Interfaces: []string{if2}},
				{Destination: "172.16.5.0/24", Metric: 100, Interfaces: []string{if1}},
			}},
		},
		"OtherTunnelDown": {
			reason: "A tunnel that has no interface (a policy-mode tunnel) changes nothing.",
			conf:   activeBackup(),
			down:   map[string]bool{"site": true},
			want:   activeBackup(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			conf := tc.conf
			want := tc.conf
			want.Routes = slices.Clone(tc.conf.Routes)
			got := Usable(conf, tc.down)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nUsable(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(want, conf, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nUsable changed its input: -before, +after:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestApplierFollowsTunnels(t *testing.T) {
	file, err := json.Marshal(activeBackup())
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		reason string
		down   []string
		apply  bool // Apply(file) instead of SetDown(down)
		calls  []string
		res    Result
		routes []string
	}
	both := []string{"172.31.0.0/16 metric 100 dev " + if1, "172.31.0.0/16 metric 200 dev " + if2}
	steps := []step{
		{
			reason: "Down before the first Apply: only remembered, nothing is touched.",
			down:   []string{"cloud-vpn-1"},
		},
		{
			reason: "The first Apply already leaves out the route of the tunnel that is down.",
			apply:  true,
			calls: []string{
				fmt.Sprintf("link add %s type xfrm dev net1 if_id %d", if1, id1), "link set " + if1 + " up",
				fmt.Sprintf("link add %s type xfrm dev net1 if_id %d", if2, id2), "link set " + if2 + " up",
				"route replace 172.31.0.0/16 metric 200 dev " + if2,
			},
			res:    Result{Created: []string{if1, if2}, Routed: []string{"172.31.0.0/16 metric 200"}},
			routes: both[1:],
		},
		{
			reason: "The active tunnel up: its route comes back.",
			calls:  []string{"route replace 172.31.0.0/16 metric 100 dev " + if1},
			res:    Result{Routed: []string{"172.31.0.0/16 metric 100"}},
			routes: both,
		},
		{
			reason: "The same state again: nothing is touched.",
			routes: both,
		},
		{
			reason: "The active tunnel down: its route is withdrawn, the backup's carries the destination.",
			down:   []string{"cloud-vpn-1"},
			calls:  []string{"route del 172.31.0.0/16 metric 100 dev " + if1},
			res:    Result{Unrouted: []string{"172.31.0.0/16 metric 100"}},
			routes: both[1:],
		},
		{
			reason: "Both down: the routes are as configured again (dropped in the interfaces, never sent in the clear).",
			down:   []string{"cloud-vpn-1", "cloud-vpn-2"},
			calls:  []string{"route replace 172.31.0.0/16 metric 100 dev " + if1},
			res:    Result{Routed: []string{"172.31.0.0/16 metric 100"}},
			routes: both,
		},
		{
			reason: "The backup up again first: the active tunnel's route goes again until it is up too.",
			down:   []string{"cloud-vpn-1"},
			calls:  []string{"route del 172.31.0.0/16 metric 100 dev " + if1},
			res:    Result{Unrouted: []string{"172.31.0.0/16 metric 100"}},
			routes: both[1:],
		},
	}
	ns := newNS(pod()...)
	a := &Applier{Handle: ns, Parent: "net1"}
	for i, s := range steps {
		ns.calls = nil
		var res Result
		var err error
		if s.apply {
			res, err = a.Apply(file)
		} else {
			res, err = a.SetDown(s.down)
		}
		if err != nil {
			t.Fatalf("step %d (%s): %v", i, s.reason, err)
		}
		if diff := cmp.Diff(s.res, res, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("step %d (%s): result -want, +got:\n%s", i, s.reason, diff)
		}
		if diff := cmp.Diff(s.calls, ns.calls, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("step %d (%s): netlink calls -want, +got:\n%s", i, s.reason, diff)
		}
		var routes []string
		for _, r := range ns.routes {
			routes = append(routes, ns.describe(&r))
		}
		slices.Sort(routes)
		if diff := cmp.Diff(s.routes, routes, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("step %d (%s): routes -want, +got:\n%s", i, s.reason, diff)
		}
	}
}
