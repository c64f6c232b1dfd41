package topology

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A FragNeeded is an ICMP "fragmentation needed" (destination unreachable,
// code 4) that came back for a PingDF.
type FragNeeded struct {
	// From is the router that sent it.
	From netip.Addr
	// MTU is the next-hop MTU it names, in bytes.
	MTU int
}

// PingDF sends an ICMP echo request of size bytes, its IPv4 header
// included, with Don't Fragment set from namespace ns to dst, up to three
// times, each waiting up to timeout, and returns the "fragmentation
// needed" a router on the way sent back for it, as a router must when a
// packet with DF does not fit its next hop (RFC 1191). It returns an error
// when the echo was answered (the packet fit), when nothing came back, or
// when the kernel of ns refused to send it (EMSGSIZE: it already knows a
// path MTU below size).
func (tp *Topology) PingDF(ns string, dst netip.Addr, size int, timeout time.Duration) (FragNeeded, error) {
	conn, err := tp.dfSocket(ns)
	if err != nil {
		return FragNeeded{}, err
	}
	defer conn.Close()                                 //nolint:errcheck // the exchange is over: nothing to report
	id := uint16(os.Getpid()) ^ uint16(pingSeq.Add(1)) //nolint:gosec // G115: the ICMP identifier is the pid's low 16 bits
	to := &net.IPAddr{IP: dst.AsSlice()}
	for seq := range uint16(3) {
		if _, err := conn.WriteTo(echo(8, id, seq, make([]byte, size-28)), to); err != nil {
			if errors.Is(err, syscall.EMSGSIZE) {
				return FragNeeded{}, fmt.Errorf("the kernel of %s refused to send %d bytes with DF to %s: it knows a smaller path MTU: %w", ns, size, dst, err)
			}
			return FragNeeded{}, fmt.Errorf("cannot send to %s from %s: %w", dst, ns, err)
		}
		if err := conn.SetReadDeadline(time.Now().Add(timeout)); err != nil {
			return FragNeeded{}, err
		}
		fn, answered, err := awaitFragNeeded(conn, to, id)
		switch {
		case err != nil:
			return FragNeeded{}, err
		case answered:
			return FragNeeded{}, fmt.Errorf("%s answered %d bytes with DF from %s: the packet fit the path", dst, size, ns)
		case fn.MTU != 0:
			return fn, nil
		}
	}
	return FragNeeded{}, fmt.Errorf("no answer to %d bytes with DF from %s to %s, neither an echo reply nor a fragmentation needed", size, ns, dst)
}

// dfSocket opens a raw ICMP socket in namespace ns whose packets carry
// Don't Fragment.
func (tp *Topology) dfSocket(ns string) (*net.IPConn, error) {
	ip, err := tp.icmpSocket(ns)
	if err != nil {
		return nil, err
	}
	raw, err := ip.SyscallConn()
	var serr error
	if err == nil {
		err = raw.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO)
		})
	}
	if err := errors.Join(err, serr); err != nil {
		_ = ip.Close()
		return nil, fmt.Errorf("cannot set Don't Fragment on the ICMP socket in %s: %w", ns, err)
	}
	return ip, nil
}

// awaitFragNeeded reads conn until its deadline for the echo reply from
// to with identifier id (answered) or a "fragmentation needed" about our
// echo request with that identifier (fn.MTU > 0); neither by the deadline
// is no error.
func awaitFragNeeded(conn *net.IPConn, to *net.IPAddr, id uint16) (fn FragNeeded, answered bool, err error) {
	buf := make([]byte, 1500)
	for {
		n, from, err := conn.ReadFrom(buf)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return FragNeeded{}, false, nil
		}
		if err != nil {
			return FragNeeded{}, false, err
		}
		// A raw IPv4 socket returns the ICMP message without the IP
		// header. An error message quotes the IP header and the first 8
		// bytes of the packet it is about: our echo request's.
		m, src := buf[:n], from.(*net.IPAddr)
		switch {
		case len(m) >= 8 && m[0] == 0 && src.IP.Equal(to.IP) && binary.BigEndian.Uint16(m[4:]) == id:
			return FragNeeded{}, true, nil
		case len(m) >= 8+20 && m[0] == 3 && m[1] == 4:
			quoted := 8 + int(m[8]&0x0f)*4
			if len(m) >= quoted+8 && m[quoted] == 8 && binary.BigEndian.Uint16(m[quoted+4:]) == id {
				addr, _ := netip.AddrFromSlice(src.IP.To4())
				return FragNeeded{From: addr, MTU: int(binary.BigEndian.Uint16(m[6:]))}, false, nil
			}
		}
	}
}
