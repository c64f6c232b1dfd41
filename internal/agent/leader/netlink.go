package leader

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// The agent talks rtnetlink itself for the one request it repeats every
// renewal (an address's lifetime): iproute2 would start a process per
// address and second, and no netlink library is in the module's graph.
// The standard library's syscall package decodes the messages (x/sys/unix
// has the constants but no decoder).

// An ifAddr is one IPv4 address of an interface, as RTM_GETADDR lists it.
type ifAddr struct {
	msg unix.IfAddrmsg
	// local is IFA_LOCAL, the address itself; peer is IFA_ADDRESS, the
	// same but on a point-to-point link. Both identify the address to the
	// kernel, with the prefix length.
	local, peer netip.Addr
	// valid is the valid lifetime left, in whole seconds; ^uint32(0) for
	// a permanent address.
	valid uint32
}

// rtnl is an rtnetlink socket.
type rtnl struct {
	fd  int
	seq uint32
}

func dialRoute() (*rtnl, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("cannot open an rtnetlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("cannot bind an rtnetlink socket: %w", err)
	}
	return &rtnl{fd: fd}, nil
}

func (r *rtnl) close() { _ = unix.Close(r.fd) }

// addresses lists the IPv4 addresses of the interface with index index.
func (r *rtnl) addresses(index int) ([]ifAddr, error) {
	msgs, err := r.request(unix.RTM_GETADDR, unix.NLM_F_DUMP, ifAddrmsg(unix.IfAddrmsg{Family: unix.AF_INET}))
	if err != nil {
		return nil, err
	}
	var all []ifAddr
	for _, m := range msgs {
		if m.Header.Type != unix.RTM_NEWADDR || len(m.Data) < unix.SizeofIfAddrmsg {
			continue
		}
		x, err := parseAddr(m)
		if err != nil {
			return nil, err
		}
		if int(x.msg.Index) == index && x.msg.Family == unix.AF_INET {
			all = append(all, x)
		}
	}
	return all, nil
}

// parseAddr decodes an RTM_NEWADDR message.
func parseAddr(m syscall.NetlinkMessage) (ifAddr, error) {
	x := ifAddr{valid: ^uint32(0), msg: unix.IfAddrmsg{
		Family: m.Data[0], Prefixlen: m.Data[1], Flags: m.Data[2], Scope: m.Data[3],
		Index: binary.NativeEndian.Uint32(m.Data[4:8]),
	}}
	attrs, err := syscall.ParseNetlinkRouteAttr(&m)
	if err != nil {
		return x, fmt.Errorf("cannot decode an address: %w", err)
	}
	for _, a := range attrs {
		switch a.Attr.Type {
		case unix.IFA_LOCAL:
			x.local, _ = netip.AddrFromSlice(a.Value)
		case unix.IFA_ADDRESS:
			x.peer, _ = netip.AddrFromSlice(a.Value)
		case unix.IFA_CACHEINFO:
			if len(a.Value) >= unix.SizeofIfaCacheinfo {
				x.valid = binary.NativeEndian.Uint32(a.Value[4:8]) // the preferred lifetime, then the valid one
			}
		}
	}
	if !x.local.IsValid() {
		x.local = x.peer
	}
	return x, nil
}

// replace gives the existing address x the valid and preferred lifetime
// secs (RTM_NEWADDR with NLM_F_REPLACE: the kernel sets the lifetimes of
// the address that matches and restarts them from now).
func (r *rtnl) replace(x ifAddr, secs uint32) error {
	b := ifAddrmsg(unix.IfAddrmsg{Family: unix.AF_INET, Prefixlen: x.msg.Prefixlen, Scope: x.msg.Scope, Index: x.msg.Index})
	b = attr(b, unix.IFA_LOCAL, x.local.AsSlice())
	b = attr(b, unix.IFA_ADDRESS, x.peer.AsSlice())
	ci := make([]byte, unix.SizeofIfaCacheinfo)
	binary.NativeEndian.PutUint32(ci[0:], secs) // preferred
	binary.NativeEndian.PutUint32(ci[4:], secs) // valid
	b = attr(b, unix.IFA_CACHEINFO, ci)
	_, err := r.request(unix.RTM_NEWADDR, unix.NLM_F_REPLACE|unix.NLM_F_ACK, b)
	return err
}

// ipv4DevconfARPIgnore is IPV4_DEVCONF_ARP_IGNORE of linux/ip.h, the
// attribute type of arp_ignore in IFLA_INET_CONF (x/sys/unix lacks it).
const ipv4DevconfARPIgnore = 19

// setARPIgnore sets the interface name's arp_ignore to v (RTM_SETLINK
// with IFLA_AF_SPEC, AF_INET, IFLA_INET_CONF): the agent's container
// cannot write /proc/sys, which the container runtime mounts read-only,
// but NET_ADMIN may change an interface's IPv4 settings over rtnetlink.
func setARPIgnore(name string, v uint32) error {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return err
	}
	r, err := dialRoute()
	if err != nil {
		return err
	}
	defer r.close()
	b := make([]byte, unix.SizeofIfInfomsg)
	binary.NativeEndian.PutUint32(b[4:], uint32(ifi.Index)) //nolint:gosec // G115: an interface index
	b = attr(b, unix.IFLA_AF_SPEC, attr(nil, unix.AF_INET, attr(nil, unix.IFLA_INET_CONF,
		attr(nil, ipv4DevconfARPIgnore, binary.NativeEndian.AppendUint32(nil, v)))))
	_, err = r.request(unix.RTM_SETLINK, unix.NLM_F_ACK, b)
	return err
}

// request sends one request and returns the messages of its answer: a
// dump's parts up to NLMSG_DONE, nothing for an acknowledged request.
func (r *rtnl) request(typ, flags uint16, payload []byte) ([]syscall.NetlinkMessage, error) {
	r.seq++
	b := make([]byte, unix.SizeofNlMsghdr, unix.SizeofNlMsghdr+len(payload))
	binary.NativeEndian.PutUint32(b[0:], uint32(unix.SizeofNlMsghdr+len(payload))) //nolint:gosec // G115: one small message
	binary.NativeEndian.PutUint16(b[4:], typ)
	binary.NativeEndian.PutUint16(b[6:], flags|unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(b[8:], r.seq)
	b = append(b, payload...)
	if err := unix.Sendto(r.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	var out []syscall.NetlinkMessage
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(r.fd, buf, 0)
		if err != nil {
			return nil, err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			if m.Header.Seq != r.seq {
				continue
			}
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return out, nil
			case unix.NLMSG_ERROR:
				if len(m.Data) < 4 {
					return nil, errors.New("short netlink error")
				}
				if errno := int32(binary.NativeEndian.Uint32(m.Data)); errno < 0 { //nolint:gosec // G115: the kernel's negative errno
					return nil, unix.Errno(uint32(-errno))
				}
				return out, nil
			default:
				out = append(out, m)
			}
		}
	}
}

// ifAddrmsg encodes m (struct ifaddrmsg).
func ifAddrmsg(m unix.IfAddrmsg) []byte {
	b := []byte{m.Family, m.Prefixlen, m.Flags, m.Scope, 0, 0, 0, 0}
	binary.NativeEndian.PutUint32(b[4:], m.Index)
	return b
}

// attr appends the route attribute typ with value v to b, padded to 4
// bytes.
func attr(b []byte, typ uint16, v []byte) []byte {
	n := unix.SizeofRtAttr + len(v)
	b = binary.NativeEndian.AppendUint16(b, uint16(n)) //nolint:gosec // G115: a few bytes
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, v...)
	for range (4 - n%4) % 4 {
		b = append(b, 0)
	}
	return b
}
