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
package xfrmlink

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

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

// An Applier applies the rendered xfrm.json through one Handle, the
// gateway agent's in its pod's network namespace.
type Applier struct {
	// Handle is the namespace's rtnetlink handle.
	Handle Handle
	// Parent is the interface the XFRM interfaces are created on: the
	// pod's interface on the tenant network.
	Parent string
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
// applies it (the package's Apply).
func (a *Applier) Apply(file []byte) (Result, error) {
	var conf xfrmi.Config
	if len(bytes.TrimSpace(file)) > 0 {
		if err := json.Unmarshal(file, &conf); err != nil {
			return Result{}, fmt.Errorf("cannot parse %s: %w", xfrmi.File, err)
		}
	}
	return Apply(a.Handle, a.Parent, conf)
}
