// Package xfrmlink makes the XFRM interfaces and routes of a gateway's
// route-mode tunnels (an xfrmi.Config, the rendered xfrm.json) true in the
// gateway pod's network namespace over rtnetlink, as the gateway agent does
// whenever the mounted configuration changes.
//
// Apply is idempotent and converges: it creates the interfaces that are
// missing (an interface of the wrong ID or parent is replaced), sets them
// up, replaces the routes whose next hops differ and adds the missing ones
// before it deletes what is no longer configured, so that a changed route
// is never absent. It owns the XFRM interfaces named as xfrmi.InterfaceName
// names them (xfrm and eight hex digits) and the main table's routes
// through them; it leaves every other link and route alone. Removing an
// interface removes its routes with it (the kernel's doing).
//
// Routes follow the tunnels' state (Applier.SetDown, Usable): a route over
// a tunnel that is down is withdrawn while another tunnel routes the same
// destination, so that the backup of an active/backup pair takes the
// traffic and ECMP leaves the dead next hop out.
package xfrmlink

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"reflect"
	"regexp"
	"slices"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/xfrmi"
)

// A Handle is the part of a *netlink.Handle that Apply uses, so that tests
// can record the calls.
type Handle interface {
	LinkByName(name string) (netlink.Link, error)
	LinkList() ([]netlink.Link, error)
	LinkAdd(link netlink.Link) error
	LinkDel(link netlink.Link) error
	LinkSetUp(link netlink.Link) error
	RouteListFiltered(family int, filter *netlink.Route, filterMask uint64) ([]netlink.Route, error)
	RouteReplace(route *netlink.Route) error
	RouteDel(route *netlink.Route) error
}

// owned matches the names of the interfaces Apply owns.
var owned = regexp.MustCompile(`^xfrm[0-9a-f]{8}$`)

// Errors of Apply.
const (
	errParent     = "cannot find the XFRM interfaces' parent interface"
	errListLinks  = "cannot list the links"
	errAdd        = "cannot create XFRM interface"
	errDel        = "cannot delete XFRM interface"
	errUp         = "cannot set XFRM interface up"
	errListRoutes = "cannot list the routes"
	errRoute      = "cannot route"
	errDelRoute   = "cannot delete the route"
	errBadConfig  = "invalid route"
)

// A Result says what an Apply changed. Names are interface names,
// routes "<destination> metric <metric>".
type Result struct {
	Created, Deleted []string
	Routed, Unrouted []string
}

// Changed says whether Apply changed anything.
func (r Result) Changed() bool {
	return len(r.Created)+len(r.Deleted)+len(r.Routed)+len(r.Unrouted) > 0
}

// Apply brings the namespace of h to conf: an XFRM interface per
// conf.Interfaces entry on the parent interface named parent (the tenant
// network's, where the ESP packets leave), up, and conf.Routes over them in
// the main table; owned interfaces and their routes that conf does not name
// are deleted. An empty conf removes everything Apply owns. Errors name the
// interface or route; every step that can be done is, and the errors are
// joined.
func Apply(h Handle, parent string, conf xfrmi.Config) (Result, error) {
	var res Result
	links, err := h.LinkList()
	if err != nil {
		return res, fmt.Errorf("%s: %w", errListLinks, err)
	}
	var errs []error
	index := map[string]int{}
	want := map[string]bool{}
	if len(conf.Interfaces) > 0 {
		p, err := h.LinkByName(parent)
		if err != nil {
			return res, fmt.Errorf("%s %s: %w", errParent, parent, err)
		}
		for _, i := range conf.Interfaces {
			want[i.Name] = true
			idx, created, err := ensure(h, links, i, p.Attrs().Index)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if created {
				res.Created = append(res.Created, i.Name)
			}
			index[i.Name] = idx
		}
	}
	for _, l := range links {
		if n := l.Attrs().Name; l.Type() == "xfrm" && owned.MatchString(n) && !want[n] {
			if err := h.LinkDel(l); err != nil {
				errs = append(errs, fmt.Errorf("%s %s: %w", errDel, n, err))
				continue
			}
			res.Deleted = append(res.Deleted, n)
		}
	}
	errs = append(errs, routes(h, conf, index, &res))
	return res, errors.Join(errs...)
}

// ensure makes interface i exist with its ID on parent and up, and returns
// its index and whether it was created.
func ensure(h Handle, links []netlink.Link, i xfrmi.Interface, parent int) (int, bool, error) {
	var have netlink.Link
	for _, l := range links {
		if l.Attrs().Name == i.Name {
			have = l
		}
	}
	if x, ok := have.(*netlink.Xfrmi); ok && x.Ifid == i.IfID && x.ParentIndex == parent {
		if x.Flags&net.FlagUp == 0 {
			if err := h.LinkSetUp(x); err != nil {
				return 0, false, fmt.Errorf("%s %s: %w", errUp, i.Name, err)
			}
		}
		return x.Index, false, nil
	}
	if have != nil {
		// Same name, another ID, parent or kind: replaced.
		if err := h.LinkDel(have); err != nil {
			return 0, false, fmt.Errorf("%s %s: %w", errDel, i.Name, err)
		}
	}
	l := &netlink.Xfrmi{LinkAttrs: netlink.LinkAttrs{Name: i.Name, ParentIndex: parent}, Ifid: i.IfID}
	if err := h.LinkAdd(l); err != nil {
		return 0, false, fmt.Errorf("%s %s (if_id %d): %w", errAdd, i.Name, i.IfID, err)
	}
	// LinkAdd leaves the index unset: read the link back.
	got, err := h.LinkByName(i.Name)
	if err != nil {
		return 0, false, fmt.Errorf("%s %s: %w", errAdd, i.Name, err)
	}
	if err := h.LinkSetUp(got); err != nil {
		return 0, false, fmt.Errorf("%s %s: %w", errUp, i.Name, err)
	}
	return got.Attrs().Index, true, nil
}

// routes brings the main table's routes through the owned interfaces
// (index: their indexes by name) to conf.Routes.
func routes(h Handle, conf xfrmi.Config, index map[string]int, res *Result) error {
	ours := map[int]bool{}
	for _, i := range index {
		ours[i] = true
	}
	have, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return fmt.Errorf("%s: %w", errListRoutes, err)
	}
	var errs []error
	wanted := map[string]bool{}
	for _, r := range conf.Routes {
		k := fmt.Sprintf("%s metric %d", r.Destination, r.Metric)
		want, err := toNetlink(r, index)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", errRoute, k, err))
			continue
		}
		wanted[key(want)] = true
		if slices.ContainsFunc(have, func(x netlink.Route) bool { return key(&x) == key(want) && slices.Equal(hops(x), hops(*want)) }) {
			continue
		}
		if err := h.RouteReplace(want); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", errRoute, k, err))
			continue
		}
		res.Routed = append(res.Routed, k)
	}
	for _, r := range have {
		hs := hops(r)
		if len(hs) == 0 || !slices.ContainsFunc(hs, func(i int) bool { return ours[i] }) || wanted[key(&r)] {
			continue
		}
		if err := h.RouteDel(&r); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", errDelRoute, key(&r), err))
			continue
		}
		res.Unrouted = append(res.Unrouted, key(&r))
	}
	return errors.Join(errs...)
}

// toNetlink is r as a netlink route over the interfaces of index: one next
// hop a plain route, several a multipath route.
func toNetlink(r xfrmi.Route, index map[string]int) (*netlink.Route, error) {
	_, dst, err := net.ParseCIDR(r.Destination)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", errBadConfig, err)
	}
	out := &netlink.Route{Dst: dst, Priority: int(r.Metric), Table: unix.RT_TABLE_MAIN, Protocol: unix.RTPROT_STATIC}
	var idx []int
	for _, n := range r.Interfaces {
		i, ok := index[n]
		if !ok {
			return nil, fmt.Errorf("%s: interface %s is not there", errBadConfig, n)
		}
		idx = append(idx, i)
	}
	switch len(idx) {
	case 0:
		return nil, fmt.Errorf("%s: no interface", errBadConfig)
	case 1:
		out.LinkIndex, out.Scope = idx[0], netlink.SCOPE_LINK
	default:
		for _, i := range idx {
			out.MultiPath = append(out.MultiPath, &netlink.NexthopInfo{LinkIndex: i})
		}
	}
	return out, nil
}

// key identifies a route in the main table as the kernel does for IPv4
// (destination and priority; the TOS is always 0 here).
func key(r *netlink.Route) string {
	dst := "0.0.0.0/0"
	if r.Dst != nil {
		dst = r.Dst.String()
	}
	return fmt.Sprintf("%s metric %d", dst, r.Priority)
}

// hops are the sorted interface indexes of r's next hops.
func hops(r netlink.Route) []int {
	var out []int
	if r.LinkIndex != 0 {
		out = append(out, r.LinkIndex)
	}
	for _, h := range r.MultiPath {
		out = append(out, h.LinkIndex)
	}
	slices.Sort(out)
	return out
}

// Usable returns conf with the routes that the tunnels named in down
// cannot carry left out, as far as another tunnel carries them: of the
// routes to one destination, each drops the next hops over down tunnels'
// interfaces, and a route left with none is withdrawn, unless no route to
// that destination has a next hop over a tunnel that is up; then they all
// stay as configured, so that the destination's packets still enter a
// tunnel interface and are dropped there (no SA) rather than leave by
// the default route in the clear. The interfaces stay as they are. A route
// that names an interface conf does not have is kept as it is (Apply
// refuses it). conf is not changed.
func Usable(conf xfrmi.Config, down map[string]bool) xfrmi.Config {
	if len(down) == 0 {
		return conf
	}
	dead := map[string]bool{}
	for _, i := range conf.Interfaces {
		dead[i.Name] = down[i.Tunnel]
	}
	live := map[string]bool{}
	for _, r := range conf.Routes {
		for _, n := range r.Interfaces {
			live[r.Destination] = live[r.Destination] || !dead[n]
		}
	}
	out := xfrmi.Config{Interfaces: conf.Interfaces}
	for _, r := range conf.Routes {
		if !live[r.Destination] {
			out.Routes = append(out.Routes, r)
			continue
		}
		keep := slices.DeleteFunc(slices.Clone(r.Interfaces), func(n string) bool { return dead[n] })
		if len(keep) > 0 {
			r.Interfaces = keep
			out.Routes = append(out.Routes, r)
		}
	}
	return out
}

// An Applier applies the rendered xfrm.json through one Handle, the
// gateway agent's in its pod's network namespace, with the routes that
// tunnels down cannot carry withdrawn (Usable). Safe for concurrent use:
// the agent applies configurations and tunnel states from two goroutines.
type Applier struct {
	// Handle is the namespace's rtnetlink handle.
	Handle Handle
	// Parent is the interface the XFRM interfaces are created on: the
	// pod's interface on the tenant network.
	Parent string

	mu sync.Mutex
	// conf is the configuration last parsed, applied once applied is set.
	conf    xfrmi.Config
	applied bool
	// down are the tunnels last said to be down.
	down map[string]bool
}

// New returns an Applier for the agent's own network namespace, with
// XFRM interfaces on parent.
func New(parent string) (*Applier, error) {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("cannot open an rtnetlink handle: %w", err)
	}
	return &Applier{Handle: h, Parent: parent}, nil
}

// Apply parses file, the rendered xfrm.json (empty or nil when no tunnel
// is in mode route, which removes every interface the Applier owns), and
// applies it (the package's Apply) with the routes of the tunnels last
// given to SetDown withdrawn as Usable says.
func (a *Applier) Apply(file []byte) (Result, error) {
	var conf xfrmi.Config
	if len(bytes.TrimSpace(file)) > 0 {
		if err := json.Unmarshal(file, &conf); err != nil {
			return Result{}, fmt.Errorf("cannot parse %s: %w", contract.KeyXFRMInterfaces, err)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.conf, a.applied = conf, true
	return Apply(a.Handle, a.Parent, Usable(conf, a.down))
}

// SetDown says which tunnels are down (tunnels: their names; the others
// are up) and, when that changes which routes are usable, applies the
// configuration last given to Apply again, as Usable says. Before the
// first Apply it only remembers them.
func (a *Applier) SetDown(tunnels []string) (Result, error) {
	down := map[string]bool{}
	for _, n := range tunnels {
		down[n] = true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	before := Usable(a.conf, a.down)
	a.down = down
	if !a.applied || reflect.DeepEqual(before, Usable(a.conf, down)) {
		return Result{}, nil
	}
	return Apply(a.Handle, a.Parent, Usable(a.conf, down))
}
