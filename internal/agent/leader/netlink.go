package leader

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// The agent changes its interface over rtnetlink (vishvananda/netlink), not
// with iproute2: it renews an address's lifetime every renewal, where ip
// would start a process per address and second, and on SIGTERM it must go
// quiet at once, one request and no process to start.

// dumpTries is how often addresses lists an interface's addresses when
// the kernel says that they changed during the dump (NLM_F_DUMP_INTR).
const dumpTries = 3

// addresses lists the IPv4 addresses of link. A dump that an address's
// change interrupted is read again, up to dumpTries times; the last one is
// taken as it is.
func addresses(link netlink.Link) ([]netlink.Addr, error) {
	for try := 1; ; try++ {
		all, err := netlink.AddrList(link, netlink.FAMILY_V4)
		if errors.Is(err, netlink.ErrDumpInterrupted) && try < dumpTries {
			continue
		}
		if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
			return nil, err
		}
		return all, nil
	}
}

// renewLifetime gives the address x of link the valid and preferred lifetime secs
// (RTM_NEWADDR with NLM_F_REPLACE: the kernel sets the lifetimes of the
// address that matches, its local address, peer and prefix, and restarts
// them from now). It sends what identifies x and the lifetimes only, as
// Up's `ip address add` would have: an IPv4 address that the kernel
// removed in between would be added again whatever the request's flags
// (the kernel does not check NLM_F_CREATE for IPv4), which refreshable's
// margin guards against.
func renewLifetime(link netlink.Link, x netlink.Addr, secs int) error {
	return netlink.AddrReplace(link, &netlink.Addr{
		IPNet: x.IPNet, Peer: x.Peer, Broadcast: x.Broadcast, Scope: x.Scope,
		ValidLft: secs, PreferedLft: secs,
	})
}

// addrOf returns x's local address, unmapped.
func addrOf(x netlink.Addr) netip.Addr {
	ip, _ := netip.AddrFromSlice(x.IP)
	return ip.Unmap()
}

// ipv4DevconfARPIgnore is IPV4_DEVCONF_ARP_IGNORE of linux/ip.h, the
// attribute type of arp_ignore in IFLA_INET_CONF (neither x/sys/unix nor
// netlink names it).
const ipv4DevconfARPIgnore = 19

// setARPIgnore sets link's arp_ignore to v (RTM_SETLINK with IFLA_AF_SPEC,
// AF_INET, IFLA_INET_CONF): the agent's container cannot write /proc/sys,
// which the container runtime mounts read-only, but NET_ADMIN may change an
// interface's IPv4 settings over rtnetlink. netlink has no call for it;
// its nl package builds the request.
func setARPIgnore(link netlink.Link, v uint32) error {
	req := nl.NewNetlinkRequest(unix.RTM_SETLINK, unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(link.Attrs().Index) //nolint:gosec // G115: an interface index
	req.AddData(msg)
	spec := nl.NewRtAttr(unix.IFLA_AF_SPEC, nil)
	spec.AddRtAttr(unix.AF_INET, nil).AddRtAttr(unix.IFLA_INET_CONF, nil).AddRtAttr(ipv4DevconfARPIgnore, nl.Uint32Attr(v))
	req.AddData(spec)
	_, err := req.Execute(unix.NETLINK_ROUTE, 0)
	return err
}

// linkByName returns the interface name, its error naming it.
func linkByName(name string) (netlink.Link, error) {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return nil, fmt.Errorf("cannot find %s: %w", name, err)
	}
	return l, nil
}
