//go:build kernel

package guest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// Sizes of TestTunnelMSSClamped: a transfer of several MB, and a packet
// of a 1500-byte Ethernet's full size.
const (
	transferBytes = 4 << 20
	fullPacket    = 1500
)

// TestTunnelMSSClamped proves the gateway's TCP MSS clamping through the
// kernel's tunnels of a mode routed gateway: a policy-mode tunnel to one
// client site, whose MSS is computed from its ESP proposal (aes256gcm16:
// 1398), and a route-mode tunnel to another with tcpMSS 1300. For each
// tunnel the SYN from a client host (MSS 1460, its 1500-byte link's) reaches
// the tenant service, and the tenant service's SYN (1460) the client host,
// with the tunnel's MSS, as the listening socket saved it (TCP_SAVED_SYN);
// 4 MiB from the client host reach the tenant service; and a 1500-byte ping
// with DF gets "fragmentation needed" back, from the client site to the
// client host and from the gateway to the tenant service, naming an MTU
// into which a segment of the tunnel's MSS fits (the MTU of the kernel's
// ESP in UDP: the computed MSS is the largest that fits it). The pings come
// last: the hosts' kernels keep the MTU they learn, and their next SYNs
// would announce an MSS of it whether the gateway clamps or not.
func TestTunnelMSSClamped(t *testing.T) {
	tp := start(t, 2)
	p0, p1 := tp.Peers[0], tp.Peers[1]
	psks := map[string][]byte{"mss-policy": []byte("kernel-mss-policy-psk-0123456789"), "mss-route": []byte("kernel-mss-route-psk-0123456789")}
	for _, p := range []struct {
		peer   *topology.Peer
		tunnel string
	}{{p0, "mss-policy"}, {p1, "mss-route"}} {
		loadSheet(t, p.peer, clientSheet(p.peer, psks[p.tunnel], topology.ClientChild{Name: "tenant", LocalTS: []string{p.peer.Subnet.String()}, RemoteTS: []string{topology.TenantSubnet.String()}}))
	}

	policy := siteTunnel("mss-policy", p0, [2]netip.Prefix{topology.TenantSubnet, p0.Subnet})
	any := netip.MustParsePrefix("0.0.0.0/0")
	route := siteTunnel("mss-route", p1, [2]netip.Prefix{any, any})
	route.Mode, route.Routes, route.TCPMSS = v1alpha1.TunnelModeRoute, []v1alpha1.CIDR{v1alpha1.CIDR(p1.Subnet.String())}, ptr.To[int32](1300)
	spec := gatewaySpec(v1alpha1.ModeRouted, policy, route)
	spec.TenantSubnets = []v1alpha1.CIDR{v1alpha1.CIDR(topology.TenantSubnet.String())}

	const port = 5001
	service := fmt.Sprintf("%s:%d", topology.Service, port)
	serveSYN(t, tp, tp.Gateway.ServiceNS, service)
	for _, p := range []*topology.Peer{p0, p1} {
		serveSYN(t, tp, p.HostNS, fmt.Sprintf("%s:%d", p.Host, port))
	}

	began := time.Now()
	startAgent(t, tp, spec, psks)
	tp.Gateway.WaitSA(t, policy.Name, upTimeout, topology.Up(render.ChildName(policy.Name, topology.TenantSubnet, p0.Subnet)))
	tp.Gateway.WaitSA(t, route.Name, upTimeout, topology.Up(render.ChildName(route.Name, any, any)))
	t.Logf("agent started to both CHILD_SAs INSTALLED in %v", time.Since(began).Round(time.Millisecond))

	tunnels := []struct {
		name string
		peer *topology.Peer
		mss  int
	}{
		{policy.Name, p0, render.ComputedTCPMSS(espProposals)},
		{route.Name, p1, 1300},
	}
	for _, tn := range tunnels {
		for _, c := range []struct{ what, ns, addr string }{
			{"client host → tenant service", tn.peer.HostNS, service},
			{"tenant service → client host", tp.Gateway.ServiceNS, fmt.Sprintf("%s:%d", tn.peer.Host, port)},
		} {
			mss, _, err := sendTCP(tp, c.ns, c.addr, 0)
			switch {
			case err != nil:
				t.Errorf("tunnel %s, %s: %v", tn.name, c.what, err)
			case mss != tn.mss:
				t.Errorf("tunnel %s, %s: the SYN arrived with MSS %d, want the tunnel's %d", tn.name, c.what, mss, tn.mss)
			default:
				t.Logf("tunnel %s, %s: the SYN arrived with MSS %d", tn.name, c.what, mss)
			}
		}
		sent := time.Now()
		_, got, err := sendTCP(tp, tn.peer.HostNS, service, transferBytes)
		took := time.Since(sent)
		switch {
		case err != nil:
			t.Errorf("tunnel %s, %d bytes from the client host: %v", tn.name, transferBytes, err)
		case got != transferBytes:
			t.Errorf("tunnel %s: the tenant service received %d of the client host's %d bytes", tn.name, got, transferBytes)
		default:
			t.Logf("tunnel %s: %d bytes from the client host to the tenant service in %v (%.1f MB/s, TCG)", tn.name, got, took.Round(time.Millisecond), float64(got)/took.Seconds()/1e6)
		}
	}
	for _, tn := range tunnels {
		for _, c := range []struct {
			what, ns string
			dst      netip.Addr
		}{
			{"client host → tenant service", tn.peer.HostNS, topology.Service},
			{"tenant service → client host", tp.Gateway.ServiceNS, tn.peer.Host},
		} {
			fn, err := tp.PingDF(c.ns, c.dst, fullPacket, 3*time.Second)
			switch {
			case err != nil:
				t.Errorf("tunnel %s, %s: %v", tn.name, c.what, err)
			case fn.MTU >= fullPacket || fn.MTU-40 < tn.mss:
				t.Errorf("tunnel %s, %s: fragmentation needed from %s names MTU %d, want one below %d that fits a segment of MSS %d", tn.name, c.what, fn.From, fn.MTU, fullPacket, tn.mss)
			default:
				t.Logf("tunnel %s, %s: a %d-byte ping with DF got fragmentation needed from %s, MTU %d", tn.name, c.what, fullPacket, fn.From, fn.MTU)
			}
		}
	}
}

// serveSYN listens on TCP address addr in namespace ns, saving each
// connection's SYN (TCP_SAVE_SYN), and answers every connection, once the
// client has sent all it sends, with one line: the MSS option of its SYN as
// it arrived and the number of bytes received. It stops when t ends.
func serveSYN(t *testing.T, tp *topology.Topology, ns, addr string) {
	t.Helper()
	var ln net.Listener
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_SAVE_SYN, 1) })
		return errors.Join(err, serr)
	}}
	if err := tp.Do(ns, func() error {
		var err error
		ln, err = lc.Listen(context.Background(), "tcp4", addr)
		return err
	}); err != nil {
		t.Fatalf("cannot listen on %s in %s: %v", addr, ns, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close() //nolint:errcheck // the answer is written or not: closing has nothing to add
				_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
				mss, err := savedSYNMSS(c.(*net.TCPConn))
				n, _ := io.Copy(io.Discard, c)
				if err != nil {
					_, _ = fmt.Fprintf(c, "error %v\n", err)
					return
				}
				_, _ = fmt.Fprintf(c, "%d %d\n", mss, n)
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
}

// savedSYNMSS returns the MSS option of the SYN that opened c, which the
// kernel saved with its IPv4 and TCP headers (TCP_SAVED_SYN), as it
// arrived at the listener.
func savedSYNMSS(c *net.TCPConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	syn := make([]byte, 512)
	n := uint32(len(syn))
	var errno syscall.Errno
	if err := raw.Control(func(fd uintptr) {
		_, _, errno = unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.IPPROTO_TCP, unix.TCP_SAVED_SYN,
			uintptr(unsafe.Pointer(&syn[0])), uintptr(unsafe.Pointer(&n)), 0)
	}); err != nil {
		return 0, err
	}
	if errno != 0 {
		return 0, fmt.Errorf("getsockopt TCP_SAVED_SYN: %w", errno)
	}
	syn = syn[:n]
	if len(syn) < 20 {
		return 0, fmt.Errorf("the saved SYN has %d bytes, no IPv4 header", len(syn))
	}
	tcp := syn[int(syn[0]&0x0f)*4:]
	if len(tcp) < 20 || len(tcp) < int(tcp[12]>>4)*4 {
		return 0, fmt.Errorf("the saved SYN's TCP header is cut: %d bytes", len(tcp))
	}
	opts := tcp[20 : int(tcp[12]>>4)*4]
	for i := 0; i < len(opts); {
		switch kind := opts[i]; {
		case kind == 0: // end of options
			i = len(opts)
		case kind == 1: // no-op
			i++
		case i+1 >= len(opts) || opts[i+1] < 2:
			i = len(opts)
		case kind == 2 && opts[i+1] == 4 && i+4 <= len(opts):
			return int(opts[i+2])<<8 | int(opts[i+3]), nil
		default:
			i += int(opts[i+1])
		}
	}
	return 0, errors.New("the saved SYN has no MSS option")
}

// sendTCP connects from namespace ns to a serveSYN listener at addr,
// sends n bytes and returns what the listener answers: the MSS of the SYN
// as it arrived and the number of bytes it received.
func sendTCP(tp *topology.Topology, ns, addr string, n int64) (mss int, got int64, err error) {
	var c net.Conn
	if err := tp.Do(ns, func() error {
		var err error
		c, err = net.DialTimeout("tcp4", addr, 10*time.Second)
		return err
	}); err != nil {
		return 0, 0, fmt.Errorf("cannot connect from %s to %s: %w", ns, addr, err)
	}
	defer c.Close() //nolint:errcheck // the exchange is over: nothing to report
	if err := c.SetDeadline(time.Now().Add(2 * time.Minute)); err != nil {
		return 0, 0, err
	}
	if _, err := io.CopyN(c, zeros{}, n); err != nil {
		return 0, 0, fmt.Errorf("sending %d bytes from %s to %s: %w", n, ns, addr, err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		return 0, 0, err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return 0, 0, fmt.Errorf("no answer from %s to %s: %w", addr, ns, err)
	}
	var m, g int
	if _, err := fmt.Sscanf(line, "%d %d", &m, &g); err != nil {
		return 0, 0, fmt.Errorf("the listener at %s answered %s", addr, strconv.Quote(line))
	}
	return m, int64(g), nil
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
