package topology

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ARPInterval is how often an ARPWatch asks; answers to a request are
// counted until the next one.
const ARPInterval = 100 * time.Millisecond

// An ARPRound is one request of an ARPWatch and the MACs that answered it.
type ARPRound struct {
	At   time.Time
	MACs []string
}

// An ARPWatch asks, from an interface of a network namespace, every
// ARPInterval who has an address, and records who answered each request:
// two MACs answering one request are two hosts holding the address.
type ARPWatch struct {
	mu      sync.Mutex
	rounds  []ARPRound
	done    chan struct{}
	stopped chan struct{}
}

// WatchARP starts an ARPWatch for ip on interface link of the network
// namespace ns (a name under /run/netns), asking from link's first IPv4
// address. The caller stops it.
func WatchARP(ns, link string, ip netip.Addr) (*ARPWatch, error) {
	a := &ARPWatch{done: make(chan struct{}), stopped: make(chan struct{})}
	ready := make(chan error, 1)
	go a.run(nsPath(ns), link, ip, ready)
	if err := <-ready; err != nil {
		return nil, fmt.Errorf("cannot watch ARP for %s in %s: %w", ip, ns, err)
	}
	return a, nil
}

// Rounds returns the requests so far.
func (a *ARPWatch) Rounds() []ARPRound {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]ARPRound(nil), a.rounds...)
}

// Counts returns the watch's counts so far: requests sent, the requests
// answered more than once (when, by which MACs) and those unanswered.
func (a *ARPWatch) Counts() (requests int, twice []string, unanswered int) {
	rounds := a.Rounds()
	for _, r := range rounds {
		switch {
		case len(r.MACs) == 0:
			unanswered++
		case len(r.MACs) > 1:
			twice = append(twice, r.At.Format("15:04:05.000")+" "+strings.Join(r.MACs, ","))
		}
	}
	return len(rounds), twice, unanswered
}

// Stop ends the watch (again: nothing) and returns its Counts.
func (a *ARPWatch) Stop() (requests int, twice []string, unanswered int) {
	select {
	case <-a.done:
	default:
		close(a.done)
	}
	<-a.stopped
	return a.Counts()
}

// run runs the watch on a thread of its own in the namespace at path ns,
// and returns the thread to the caller's namespace at the end.
func (a *ARPWatch) run(ns, link string, ip netip.Addr, ready chan<- error) {
	defer close(a.stopped)
	runtime.LockOSThread()
	// Back to the caller's namespace before the thread is unlocked: a
	// thread left in the watched namespace (the runtime keeps the main
	// thread) puts the caller's pid among the namespace's, which a
	// teardown that kills them would kill.
	home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		ready <- err
		return
	}
	defer func() {
		if unix.Setns(home, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		_ = unix.Close(home)
	}()
	sock, ifi, src, err := arpSocket(ns, link)
	ready <- err
	if err != nil {
		return
	}
	defer unix.Close(sock) //nolint:errcheck // a raw socket
	to := &unix.SockaddrLinklayer{Protocol: 0x0608, Ifindex: ifi.Index, Halen: 6}
	copy(to.Addr[:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	buf := make([]byte, 128)
	for {
		select {
		case <-a.done:
			return
		default:
		}
		sent := time.Now()
		if err := unix.Sendto(sock, arpRequest(ifi.HardwareAddr, src, ip), 0, to); err != nil {
			continue
		}
		var macs []string
		for time.Since(sent) < ARPInterval {
			n, _, err := unix.Recvfrom(sock, buf, 0)
			if err != nil || n < 42 {
				continue
			}
			f := buf[:n]
			if binary.BigEndian.Uint16(f[12:]) == 0x0806 && binary.BigEndian.Uint16(f[20:]) == 2 && netip.AddrFrom4([4]byte(f[28:32])) == ip {
				macs = append(macs, net.HardwareAddr(f[22:28]).String())
			}
		}
		a.mu.Lock()
		a.rounds = append(a.rounds, ARPRound{At: sent, MACs: macs})
		a.mu.Unlock()
	}
}

// arpSocket enters the namespace at path ns (this thread) and opens a raw
// ARP socket on link, whose interface and first IPv4 address it returns.
func arpSocket(ns, link string) (int, *net.Interface, netip.Addr, error) {
	fd, err := unix.Open(ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, nil, netip.Addr{}, err
	}
	defer unix.Close(fd) //nolint:errcheck // a namespace file
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return 0, nil, netip.Addr{}, err
	}
	ifi, err := net.InterfaceByName(link)
	if err != nil {
		return 0, nil, netip.Addr{}, err
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return 0, nil, netip.Addr{}, err
	}
	var src netip.Addr
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() {
			src = p.Addr()
			break
		}
	}
	if !src.IsValid() {
		return 0, nil, netip.Addr{}, fmt.Errorf("no IPv4 address on %s", link)
	}
	sock, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0x0608) // htons(ETH_P_ARP)
	if err != nil {
		return 0, nil, netip.Addr{}, err
	}
	if err := unix.Bind(sock, &unix.SockaddrLinklayer{Protocol: 0x0608, Ifindex: ifi.Index}); err != nil {
		_ = unix.Close(sock)
		return 0, nil, netip.Addr{}, err
	}
	tv := unix.NsecToTimeval((20 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(sock, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		_ = unix.Close(sock)
		return 0, nil, netip.Addr{}, err
	}
	return sock, ifi, src, nil
}

// arpRequest is the Ethernet frame of an ARP request from mac and src for
// ip.
func arpRequest(mac net.HardwareAddr, src, ip netip.Addr) []byte {
	f := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	f = append(f, mac...)
	f = append(f, 0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1)
	s, d := src.As4(), ip.As4()
	f = append(f, mac...)
	f = append(f, s[:]...)
	f = append(f, 0, 0, 0, 0, 0, 0)
	return append(f, d[:]...)
}
