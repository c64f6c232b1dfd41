package topology

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Do runs f on an OS thread switched into the network namespace ns, so
// that sockets f opens (net.Dial, net.Listen, net.ListenPacket) belong to
// ns; they stay there when f returns and may be used from any goroutine.
// f must open its sockets itself, not in goroutines it starts. The thread
// is switched back afterwards; if that fails, the thread is discarded.
func (tp *Topology) Do(ns string, f func() error) error { return Do(ns, f) }

// Do is Topology.Do for any named network namespace ns (/run/netns/ns).
func Do(ns string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer orig.Close() //nolint:errcheck // only read: closing loses nothing
		target, err := os.Open(nsPath(ns))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer target.Close() //nolint:errcheck // only read: closing loses nothing
		if err := setns(target); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("cannot enter namespace %s: %w", ns, err)
			return
		}
		ferr := f()
		if err := setns(orig); err != nil {
			// Stay locked: Go ends the thread with this goroutine.
			errc <- errors.Join(ferr, fmt.Errorf("cannot leave namespace %s: %w", ns, err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// setns moves the calling thread into the network namespace f refers to.
func setns(f *os.File) error {
	return unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
}

// pingSeq tells the echo identifiers of concurrent Pings apart.
var pingSeq atomic.Uint32

// A PingResult is what Ping saw.
type PingResult struct {
	// Sent and Received count echo requests and their replies.
	Sent, Received int
	// RTTs of the replies received.
	RTTs []time.Duration
}

// Ping sends count ICMP echo requests from namespace ns to dst, one at a
// time, each waiting up to timeout for its reply, and reports the replies.
// It stands in for ping(8), which is not installed here: a raw ICMP socket
// opened in ns. An error means the socket could not be used, not that
// replies were missing.
func (tp *Topology) Ping(ns string, dst netip.Addr, count int, timeout time.Duration) (PingResult, error) {
	var res PingResult
	conn, err := tp.icmpSocket(ns)
	if err != nil {
		return res, err
	}
	defer conn.Close()                                 //nolint:errcheck // the exchange is over: nothing to report
	id := uint16(os.Getpid()) ^ uint16(pingSeq.Add(1)) //nolint:gosec // G115: the ICMP identifier is the pid's low 16 bits
	to := &net.IPAddr{IP: dst.AsSlice()}
	buf := make([]byte, 1500)
	for seq := range count {
		req := echo(8, id, uint16(seq), []byte("provider-ipsec tunnel test"))
		sent := time.Now()
		if _, err := conn.WriteTo(req, to); err != nil {
			return res, fmt.Errorf("cannot send to %s from %s: %w", dst, ns, err)
		}
		res.Sent++
		deadline := sent.Add(timeout)
		if err := conn.SetReadDeadline(deadline); err != nil {
			return res, err
		}
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					break
				}
				return res, err
			}
			// A raw IPv4 socket returns the ICMP message without the IP
			// header; take only our echo reply from dst.
			ip, _ := from.(*net.IPAddr)
			m := buf[:n]
			if ip == nil || !ip.IP.Equal(to.IP) || len(m) < 8 || m[0] != 0 ||
				binary.BigEndian.Uint16(m[4:]) != id || binary.BigEndian.Uint16(m[6:]) != uint16(seq) {
				continue
			}
			res.Received++
			res.RTTs = append(res.RTTs, time.Since(sent))
			break
		}
	}
	return res, nil
}

// echo builds an ICMP echo message of type typ (8 request, 0 reply).
func echo(typ byte, id, seq uint16, payload []byte) []byte {
	m := make([]byte, 8+len(payload))
	m[0] = typ
	binary.BigEndian.PutUint16(m[4:], id)
	binary.BigEndian.PutUint16(m[6:], seq)
	copy(m[8:], payload)
	binary.BigEndian.PutUint16(m[2:], checksum(m))
	return m
}

// checksum is the Internet checksum of RFC 1071.
func checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// icmpSocket opens a raw ICMP socket in namespace ns.
func (tp *Topology) icmpSocket(ns string) (*net.IPConn, error) {
	var conn net.PacketConn
	err := tp.Do(ns, func() error {
		var err error
		conn, err = net.ListenPacket("ip4:icmp", "0.0.0.0")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cannot open an ICMP socket in %s: %w", ns, err)
	}
	return conn.(*net.IPConn), nil
}
