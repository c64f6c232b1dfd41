package leader

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// An Address is the gateway's address on the tenant network as the active
// pod holds it: Up and Down are shell scripts (rendered by the provider,
// run with /bin/sh -euc) that bring Interface up with the address and its
// routes, and take them away. Up gives the addresses a finite lifetime,
// which Refresh renews while the Lease is: when the agent stops (SIGKILL,
// a frozen or crash-looping container), the kernel removes the addresses
// and their routes itself, before the Lease can pass to the other pod.
type Address struct {
	Interface string
	// IP is the gateway's fixed IP, announced with gratuitous ARP.
	IP       netip.Addr
	Up, Down string
	// Announcements are the gratuitous ARP requests sent after Up, at
	// these delays after it (default: at once, 0.5 s and 2 s), so that
	// the router and the peers on the tenant network learn the MAC even
	// if one is lost.
	Announcements []time.Duration
}

// Take runs Up and announces IP from Interface's MAC.
func (a *Address) Take(ctx context.Context) error {
	if err := sh(ctx, a.Up); err != nil {
		return fmt.Errorf("cannot bring %s up with %s: %w", a.Interface, a.IP, err)
	}
	ifi, err := net.InterfaceByName(a.Interface)
	if err != nil {
		return fmt.Errorf("cannot find %s: %w", a.Interface, err)
	}
	delays := a.Announcements
	if delays == nil {
		delays = []time.Duration{0, 500 * time.Millisecond, 2 * time.Second}
	}
	if err := announce(ifi, a.IP); err != nil {
		return fmt.Errorf("cannot announce %s on %s: %w", a.IP, a.Interface, err)
	}
	go func() {
		start := time.Now()
		for _, d := range delays[1:] {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(start.Add(d))):
			}
			_ = announce(ifi, a.IP) // the first one went; these are for a lost one
		}
	}()
	return nil
}

// Release sets Interface down first, over rtnetlink with no process to
// start, so that it answers no ARP at once, then runs Down.
func (a *Address) Release(ctx context.Context) error {
	errDown := linkDown(a.Interface)
	if err := sh(ctx, a.Down); err != nil {
		return errors.Join(errDown, fmt.Errorf("cannot take %s down: %w", a.Interface, err))
	}
	return errDown
}

// refreshMargin is the least valid lifetime IP must have left for Refresh
// to renew it: the kernel reports it in whole seconds, rounded up, and
// removes an address about when its lifetime ends, so an address with less
// left may be gone by the time the renewal reaches the kernel, which would
// then add it again without the routes that went with it.
const refreshMargin = 2 // seconds

// Errors of Refresh.
const (
	errNoAddress = "the address is gone"
	errExpiring  = "the address expires in less than 2 s"
)

// Refresh gives every IPv4 address of Interface (IP and the others Up
// gave it) the lifetime d again, valid and preferred, in whole seconds (at
// least 1), so that the kernel removes them d after the last refresh. It
// renews only addresses that are there, and fails without touching any
// when IP is gone or has less than 2 s left: the kernel removed it, or is
// about to, with the routes through it, which only Up brings back.
func (a *Address) Refresh(_ context.Context, d time.Duration) error {
	link, err := linkByName(a.Interface)
	if err != nil {
		return fmt.Errorf("cannot refresh the address: %w", err)
	}
	all, err := addresses(link)
	if err != nil {
		return fmt.Errorf("cannot refresh the address: cannot list the addresses of %s: %w", a.Interface, err)
	}
	if err := refreshable(all, a.IP); err != nil {
		return fmt.Errorf("cannot refresh %s on %s: %w", a.IP, a.Interface, err)
	}
	secs := int(max(d/time.Second, 1))
	for _, x := range all {
		if err := renewLifetime(link, x, secs); err != nil {
			return fmt.Errorf("cannot refresh %s on %s: %w", addrOf(x), a.Interface, err)
		}
	}
	return nil
}

// refreshable says whether the addresses all of an interface may be
// renewed for the gateway's address ip: nil when ip is among them with at
// least refreshMargin left (a permanent address has the most).
func refreshable(all []netlink.Addr, ip netip.Addr) error {
	for _, x := range all {
		if addrOf(x) == ip {
			if x.ValidLft < refreshMargin {
				return errors.New(errExpiring)
			}
			return nil
		}
	}
	return errors.New(errNoAddress)
}

func sh(ctx context.Context, script string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/bin/sh", "-euc", script).CombinedOutput() //nolint:gosec // G204: the provider's rendered script, as the init container's
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

// linkDown sets the interface name down.
func linkDown(name string) error {
	link, err := linkByName(name)
	if err == nil {
		err = netlink.LinkSetDown(link)
	}
	if err != nil {
		return fmt.Errorf("cannot set %s down: %w", name, err)
	}
	return nil
}

// Silence stops (on false: lets again) the interface name answering ARP,
// by setting (clearing) its NOARP flag, over rtnetlink with no process to
// start. Unlike a link set down it keeps the interface's addresses and
// routes, so that Silence(name, false) alone undoes it.
//
// It is how the single pod of a gateway with replicas 1 goes quiet on
// SIGTERM: its address comes from the CNI's static IPAM, which its
// replacement gets too, and until the old pod's network namespace is gone
// both would answer ARP for it, one MAC on two nodes. The agent of the
// pod's next container lets it answer again, in case only the container
// was restarted. Letting it answer also sets its arp_ignore to 0: the
// network attachment has the CNI create it with arp_ignore 8 (answer for
// no address), so that a replacement answers only once it is let
// (Handover).
func Silence(name string, silent bool) error {
	link, err := linkByName(name)
	if err != nil {
		return err
	}
	if silent {
		if err := netlink.LinkSetARPOff(link); err != nil {
			return fmt.Errorf("cannot set ARP off on %s: %w", name, err)
		}
		return nil
	}
	if err := setARPIgnore(link, 0); err != nil {
		return fmt.Errorf("cannot set arp_ignore 0 on %s: %w", name, err)
	}
	if err := netlink.LinkSetARPOn(link); err != nil {
		return fmt.Errorf("cannot set ARP on on %s: %w", name, err)
	}
	return nil
}

// announce broadcasts one gratuitous ARP request for ip from ifi's MAC
// (sender and target address ip, RFC 5227's ARP announcement), which
// updates the ARP caches and bridges' forwarding tables that know ip.
func announce(ifi *net.Interface, ip netip.Addr) error {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ARP)))
	if err != nil {
		return err
	}
	defer unix.Close(fd) //nolint:errcheck // nothing buffered to lose
	to := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ARP), Ifindex: ifi.Index, Halen: 6}
	copy(to.Addr[:], broadcast)
	return unix.Sendto(fd, garp(ifi.HardwareAddr, ip), 0, to)
}

var broadcast = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// garp returns the Ethernet frame of a gratuitous ARP request for ip from
// mac.
func garp(mac net.HardwareAddr, ip netip.Addr) []byte {
	f := make([]byte, 0, 42)
	f = append(f, broadcast...)
	f = append(f, mac...)
	f = binary.BigEndian.AppendUint16(f, unix.ETH_P_ARP)
	f = binary.BigEndian.AppendUint16(f, 1)      // hardware: Ethernet
	f = binary.BigEndian.AppendUint16(f, 0x0800) // protocol: IPv4
	f = append(f, 6, 4)
	f = binary.BigEndian.AppendUint16(f, 1) // request
	a := ip.As4()
	f = append(f, mac...)
	f = append(f, a[:]...)
	f = append(f, 0, 0, 0, 0, 0, 0)
	return append(f, a[:]...)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
