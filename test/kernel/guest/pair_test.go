//go:build kernel

package guest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/agent/status"
	"github.com/ipsecgw/provider-ipsec/internal/agent/watchdog"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
	"github.com/ipsecgw/provider-ipsec/internal/xfrmi"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// The cloud VPC behind a connection's two endpoints. Each peer holds
// vpcAddress on its loopback, so that the VPC answers through whichever
// tunnel a packet takes, as it does behind the provider's endpoints.
var (
	vpcSubnet  = netip.MustParsePrefix("172.31.0.0/16")
	vpcAddress = netip.MustParseAddr("172.31.0.1")
)

// Ports of the VPC's UDP services: vpcPort answers with the sender's
// address (topology.ServeWhoAmI), echoPort with the datagram (serveUDP).
const (
	vpcPort  = 7000
	echoPort = 7001
)

// pairDPD is the pair's DPD delay: short, so that a lost peer shows
// within seconds (cloud providers advise 10 s).
const pairDPD = 2 * time.Second

// failoverBound bounds the time from the active peer's loss to traffic on
// the backup tunnel, with the agent's defaults (the pod's): charon sends a
// DPD once nothing came in for pairDPD (it reads the inbound SA's last use
// in whole seconds: a second more); the agent's watchdog lists the IKE SAs
// every quarter of its Unanswered bound while idle and every MaxTick while
// an exchange is outstanding, and reports the tunnel down once one has
// gone unanswered for a fifth of Unanswered (a listing after that, up to a
// tick late); the status read that follows comes after DefaultSettle, and
// with it the agent withdraws the active tunnel's routes: 8.6 s. Plus 5 s
// for TCG emulation, which runs the guest 5-20 times slower than the
// machine (8.9 s seen at a load average of 10 on two cores).
const failoverBound = pairDPD + time.Second + watchdog.DefaultUnanswered/4 + watchdog.DefaultUnanswered/5 +
	watchdog.MaxTick + status.DefaultSettle + 5*time.Second

// returnBound bounds the time from the active peer's return to traffic on
// the active tunnel again: the watchdog closes the silent IKE SA after
// Unanswered and initiates the tunnel anew (charon retransmits its
// IKE_SA_INIT after 4 s, then 7.2 s more), or charon's own DPD
// retransmission (after 4 and 11.2 s) is answered first; the route comes
// back with the next status read.
const returnBound = 45 * time.Second

// TestTunnelPairRouteBased runs a cloud VPN connection's pair: two
// route-mode tunnels of a mode routed gateway to two peer endpoints (two
// peer charons), both 0.0.0.0/0 === 0.0.0.0/0 on both sides as cloud peers
// keep them, both routing the VPC's subnet, rendered by internal/render
// and applied by the image's agent, in a gateway namespace whose conf.all
// has strict reverse-path filtering (a pod on a node that has it) with the
// sysctls of the gateway's network attachment applied, as the CNI's tuning
// plugin does; the interfaces keep disable_policy 0. In order:
//   - the 0.0.0.0/0 policies carry the tunnels' interface IDs, and the
//     gateway's other traffic (its own, and the tenant's to the tenant
//     router) passes in the clear, not swallowed by them;
//   - active/backup (metrics 100 and 200): a UDP stream from the tenant
//     service to the VPC, a datagram every 100 ms echoed, goes through the
//     active tunnel (its interface and SAs count, the backup's do not);
//     datagrams the backup peer sends arrive, although the route back is
//     the active tunnel's and the backup's interface filters strictly (the
//     kernel does not filter IPsec-protected packets); the active peer's
//     traffic dropped at the router (DPD must notice): the stream moves to
//     the backup within failoverBound and loses nothing there; the peer
//     back: the stream moves back to the active tunnel, losing nothing; the
//     datagrams lost while the peer was lost are counted;
//   - ECMP (both metric 100, applied live): 16 UDP flows with different
//     source ports are answered, and both interfaces carried some.
func TestTunnelPairRouteBased(t *testing.T) {
	tp := start(t, 2)
	anyNet := netip.MustParsePrefix("0.0.0.0/0")
	psks := map[string][]byte{}
	var tunnels []v1alpha1.Tunnel
	links := make([]string, len(tp.Peers))
	ids := make([]uint32, len(tp.Peers))
	for i, p := range tp.Peers {
		name := fmt.Sprintf("cloud-vpn-%d", i+1)
		psks[name] = fmt.Appendf(nil, "kernel-pair-psk-%d-0123456789", i)
		loadSheet(t, p, clientSheet(p, psks[name], topology.ClientChild{Name: "vpc", LocalTS: []string{anyNet.String()}, RemoteTS: []string{anyNet.String()}}))
		tp.MustExec(p.NS, "ip", "addr", "add", netip.PrefixFrom(vpcAddress, 32).String(), "dev", "lo")
		tp.ServeWhoAmI(t, p.NS, "udp", fmt.Sprintf("%s:%d", vpcAddress, vpcPort))
		serveUDP(t, tp, p.NS, fmt.Sprintf("%s:%d", vpcAddress, echoPort), true)
		tn := siteTunnel(name, p, [2]netip.Prefix{anyNet, anyNet})
		tn.Mode = v1alpha1.TunnelModeRoute
		tn.Routes = []v1alpha1.CIDR{v1alpha1.CIDR(vpcSubnet.String())}
		tn.RouteMetric = ptr.To(int32(100 * (i + 1)))
		tn.DPD = v1alpha1.DPD{Delay: ptr.To(v1alpha1.Duration(pairDPD.String())), Action: "restart"}
		tunnels = append(tunnels, tn)
		ids[i] = xfrmi.IfID(name)
		links[i] = xfrmi.InterfaceName(ids[i])
	}
	spec := gatewaySpec(v1alpha1.ModeRouted, tunnels...)
	spec.TenantSubnets = []v1alpha1.CIDR{v1alpha1.CIDR(topology.TenantSubnet.String())}
	strictNode(t, tp, spec, psks)

	began := time.Now()
	dir := startAgent(t, tp, spec, psks)
	for _, tn := range tunnels {
		tp.Gateway.WaitSA(t, tn.Name, upTimeout, topology.Up(render.ChildName(tn.Name, anyNet, anyNet)))
	}
	t.Logf("agent started to both CHILD_SAs INSTALLED in %v", time.Since(began).Round(time.Millisecond))
	awaitRoutes(t, tp, "active/backup", 10*time.Second, fmt.Sprintf("dev %s .*metric 100", links[0]), fmt.Sprintf("dev %s .*metric 200", links[1]))

	// disable_policy stays as the kernel has it (0) on the interfaces:
	// everything below passes with it, the in and fwd policies charon
	// installs carrying the interfaces' IDs.
	for _, l := range links {
		if got := strings.TrimSpace(tp.MustExec(tp.Gateway.NS, "cat", "/proc/sys/net/ipv4/conf/"+l+"/disable_policy")); got != "0" {
			t.Errorf("%s has disable_policy %s, want the kernel's 0", l, got)
		}
	}

	t.Run("0.0.0.0/0 policies only through the interfaces", func(t *testing.T) {
		policies := tp.MustExec(tp.Gateway.NS, "ip", "xfrm", "policy")
		for _, id := range ids {
			if want := fmt.Sprintf("if_id %#x", id); strings.Count(policies, want) != 3 {
				t.Errorf("the gateway's XFRM policies:\n%s\nwant in, out and fwd with %s", policies, want)
			}
		}
		// So that the tenant router answers the tenant service: it
		// reaches the tenant subnet through the gateway.
		tp.MustExec(tp.Router, "ip", "route", "add", topology.TenantSubnet.String(), "via", topology.PrivateAddress.String())
		before := saPackets(t, tp)
		ping(t, tp, "gateway → tenant router (its own traffic)", tp.Gateway.NS, topology.Router)
		ping(t, tp, "tenant service → tenant router (forwarded)", tp.Gateway.ServiceNS, topology.Router)
		if after := saPackets(t, tp); !maps.Equal(before, after) {
			t.Errorf("the kernel's SAs counted the traffic in the clear: packets by if_id %v before, %v after", before, after)
		}
	})

	s := startStream(t, tp, tp.Gateway.ServiceNS, fmt.Sprintf("%s:%d", vpcAddress, echoPort), 100*time.Millisecond)
	t.Run("active tunnel carries the stream", func(t *testing.T) {
		c0, sa0 := linkTX(t, tp, links), saPackets(t, tp)
		time.Sleep(2 * time.Second)
		c1, sa1 := linkTX(t, tp, links), saPackets(t, tp)
		if c1[0]-c0[0] < 10 || c1[1] != c0[1] {
			t.Errorf("in 2 s the interfaces sent %d (active %s) and %d (backup %s) packets: want 10 or more, and none", c1[0]-c0[0], links[0], c1[1]-c0[1], links[1])
		}
		if sa1[ids[0]]-sa0[ids[0]] < 20 || sa1[ids[1]] != sa0[ids[1]] {
			t.Errorf("in 2 s the active tunnel's SAs counted %d packets, the backup's %d: want 20 or more (both ways), and none", sa1[ids[0]]-sa0[ids[0]], sa1[ids[1]]-sa0[ids[1]])
		}
	})

	t.Run("backup peer's traffic passes strict reverse-path filtering", func(t *testing.T) {
		// Sent from the VPC's address by the backup peer: the route back
		// to it is the active tunnel's, and the backup's interface filters
		// strictly here (whatever the NAD's default gave it). The kernel
		// does not filter what IPsec protected (fib_validate_source:
		// a packet with a secpath, as everything an XFRM interface
		// receives in its own namespace), so every datagram arrives.
		tp.MustExec(tp.Gateway.NS, "sysctl", "-qw", "net.ipv4.conf."+links[1]+".rp_filter=1")
		got := serveUDP(t, tp, tp.Gateway.ServiceNS, fmt.Sprintf("%s:%d", topology.Service, vpcPort), false)
		sendUDP(t, tp, tp.Peers[1].NS, vpcAddress, fmt.Sprintf("%s:%d", topology.Service, vpcPort), 5)
		deadline := time.Now().Add(5 * time.Second)
		for got() < 5 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if n := got(); n != 5 {
			t.Errorf("the tenant service received %d of 5 datagrams the backup peer sent from %s; the gateway's filter:\n%s", n, vpcAddress,
				tp.MustExec(tp.Gateway.NS, "sh", "-c", "grep . /proc/sys/net/ipv4/conf/*/rp_filter"))
		}
	})

	// The phases of the failover, for the stream's figures.
	var cutAt, movedAt, backAt, returnedAt time.Time
	t.Run("failover to the backup and back", func(t *testing.T) {
		cutAt = time.Now()
		dropPeer(t, tp, tp.Peers[0].Address)
		moved := awaitTX(t, tp, links, 1, failoverBound+10*time.Second)
		movedAt = time.Now()
		gap := s.longestGap(cutAt, movedAt)
		t.Logf("active peer lost: the stream on the backup %v after, no echo for %v (bound %v)", moved.Round(time.Millisecond), gap.Round(time.Millisecond), failoverBound)
		if gap > failoverBound {
			t.Errorf("the stream got no echo for %v after the active peer was lost, want at most %v", gap, failoverBound)
		}
		if out := tp.MustExec(tp.Gateway.NS, "ip", "route", "show", vpcSubnet.String()); strings.Contains(out, "dev "+links[0]) {
			t.Errorf("the gateway still routes %s through the lost tunnel's %s:\n%s", vpcSubnet, links[0], out)
		}

		sa0 := saPackets(t, tp)
		time.Sleep(2 * time.Second)
		if sa1 := saPackets(t, tp); sa1[ids[1]]-sa0[ids[1]] < 20 {
			t.Errorf("in 2 s on the backup its SAs counted %d packets, want 20 or more (both ways)", sa1[ids[1]]-sa0[ids[1]])
		}

		backAt = time.Now()
		restorePeer(t, tp)
		returned := awaitTX(t, tp, links, 0, returnBound)
		returnedAt = time.Now()
		t.Logf("active peer back: the stream on the active tunnel %v after, longest time without an echo %v",
			returned.Round(time.Millisecond), s.longestGap(backAt, returnedAt).Round(time.Millisecond))
	})
	s.stop()
	if !returnedAt.IsZero() {
		lost, sent := s.lost(cutAt, movedAt)
		t.Logf("the stream while the active peer was lost: %d of %d datagrams lost", lost, sent)
		lost, sent = s.lost(movedAt, backAt)
		t.Logf("the stream on the backup: %d of %d datagrams lost", lost, sent)
		if lost > 0 {
			t.Errorf("%d datagrams lost on the backup tunnel, want none", lost)
		}
		lost, sent = s.lost(backAt, returnedAt.Add(time.Hour))
		t.Logf("the stream from the active peer's return on: %d of %d datagrams lost", lost, sent)
		if lost > 0 {
			t.Errorf("%d datagrams lost when the stream moved back to the active tunnel, want none", lost)
		}
	}

	t.Run("ECMP", func(t *testing.T) {
		spec.Tunnels[1].RouteMetric = ptr.To(int32(100))
		writeAgentFiles(t, dir, render.Input{Spec: spec, PSKs: psks})
		awaitRoutes(t, tp, "ECMP", 10*time.Second, "metric 100", "nexthop dev "+links[0]+" ", "nexthop dev "+links[1]+" ")
		c0 := linkTX(t, tp, links)
		for i := range 16 {
			if _, err := tp.AskWhoAmI(tp.Gateway.ServiceNS, "udp", fmt.Sprintf("%s:%d", vpcAddress, vpcPort), 2*time.Second); err != nil {
				t.Errorf("flow %d: %v", i, err)
			}
		}
		c1 := linkTX(t, tp, links)
		t.Logf("16 flows: %d packets through %s, %d through %s", c1[0]-c0[0], links[0], c1[1]-c0[1], links[1])
		if c1[0] == c0[0] || c1[1] == c0[1] {
			t.Errorf("16 flows with different source ports went %d packets through %s and %d through %s: want both to carry some",
				c1[0]-c0[0], links[0], c1[1]-c0[1], links[1])
		}
	})
}

// strictNode makes the gateway's namespace as a pod's on a node with
// strict reverse-path filtering (conf.all.rp_filter 1, which a new
// namespace inherits from the host), then applies the sysctls of spec's
// network attachment (internal/workload; psks as for render.Render), as
// the CNI's tuning plugin does before the agent starts.
func strictNode(t *testing.T, tp *topology.Topology, spec v1alpha1.GatewayParameters, psks map[string][]byte) {
	t.Helper()
	f, err := render.Render(render.Input{Spec: spec, PSKs: psks})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := workload.Build(&v1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "pair"}, Spec: v1alpha1.GatewaySpec{ForProvider: spec}}, f)
	if err != nil {
		t.Fatal(err)
	}
	config, _, err := unstructured.NestedString(objs.NetworkAttachment.Object, "spec", "config")
	if err != nil {
		t.Fatal(err)
	}
	var cni struct {
		Plugins []struct {
			Type   string            `json:"type"`
			Sysctl map[string]string `json:"sysctl"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(config), &cni); err != nil {
		t.Fatalf("the network attachment's config: %v\n%s", err, config)
	}
	args := []string{"sysctl", "-qw", "net.ipv4.conf.all.rp_filter=1"}
	for _, p := range cni.Plugins {
		if p.Type == "tuning" {
			for k, v := range p.Sysctl {
				args = append(args, k+"="+v)
			}
		}
	}
	tp.MustExec(tp.Gateway.NS, args...)
	t.Logf("the gateway's namespace: %v", args[2:])
}

// awaitRoutes waits up to timeout until the gateway's routes to vpcSubnet
// match every pattern (regular expressions on `ip route show`'s output).
func awaitRoutes(t *testing.T, tp *topology.Topology, what string, timeout time.Duration, patterns ...string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out := tp.MustExec(tp.Gateway.NS, "ip", "route", "show", vpcSubnet.String())
		ok := true
		for _, p := range patterns {
			ok = ok && regexp.MustCompile(p).MatchString(out)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the gateway routes %s as:\n%s\nwant %q within %v", what, vpcSubnet, out, patterns, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// linkTX returns the packets each of links (interfaces of the gateway) sent.
func linkTX(t *testing.T, tp *topology.Topology, links []string) []int {
	t.Helper()
	out := make([]int, len(links))
	for i, l := range links {
		_, out[i] = linkPackets(tp.MustExec(tp.Gateway.NS, "ip", "-s", "link", "show", l))
	}
	return out
}

// awaitTX waits up to timeout until links[i] alone of links sends: over
// half a second, it sent 3 packets or more (the stream's 100 ms) and the
// others none. It returns how long that took until the half second began.
func awaitTX(t *testing.T, tp *topology.Topology, links []string, i int, timeout time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	for {
		at := time.Now()
		c0 := linkTX(t, tp, links)
		time.Sleep(500 * time.Millisecond)
		c1 := linkTX(t, tp, links)
		only := c1[i]-c0[i] >= 3
		for j := range links {
			only = only && (j == i || c1[j] == c0[j])
		}
		if only {
			return at.Sub(began)
		}
		if time.Since(began) > timeout {
			t.Fatalf("the stream did not move to %s alone within %v (last half second: sent %v by %v); routes:\n%s", links[i], timeout,
				sub(c1, c0), links, tp.MustExec(tp.Gateway.NS, "ip", "route", "show", vpcSubnet.String()))
		}
	}
}

func sub(a, b []int) []int {
	out := make([]int, len(a))
	for i := range a {
		out[i] = a[i] - b[i]
	}
	return out
}

// xfrmStateBlock matches one SA of `ip -s xfrm state`: its lines up to the
// next "src".
var xfrmStateBlock = regexp.MustCompile(`(?m)^src [^\n]*\n(?:[ \t][^\n]*\n?)*`)

// saPackets returns the packets the gateway's kernel SAs counted, summed
// by interface ID (0: SAs without one).
func saPackets(t *testing.T, tp *topology.Topology) map[uint32]int {
	t.Helper()
	_, out := kernelSAs(t, tp, tp.Gateway.NS)
	sums := map[uint32]int{}
	for _, b := range xfrmStateBlock.FindAllString(out, -1) {
		var id uint64
		if m := regexp.MustCompile(`if_id (0x[0-9a-f]+)`).FindStringSubmatch(b); m != nil {
			id, _ = strconv.ParseUint(m[1], 0, 32)
		}
		for _, m := range xfrmCounters.FindAllStringSubmatch(b, -1) {
			n, _ := strconv.Atoi(m[2])
			sums[uint32(id)] += n
		}
	}
	return sums
}

// dropPeer makes the router drop every packet to and from the peer at
// addr: the peer is lost, its charon and kernel none the wiser, and only
// the gateway's DPD can notice. restorePeer takes that back.
func dropPeer(t *testing.T, tp *topology.Topology, addr netip.Addr) {
	t.Helper()
	tp.MustExec(tp.Router, "nft", fmt.Sprintf("add table ip lost; add chain ip lost forward { type filter hook forward priority -10; }; "+
		"add rule ip lost forward ip saddr %s drop; add rule ip lost forward ip daddr %[1]s drop", addr))
}

func restorePeer(t *testing.T, tp *topology.Topology) {
	t.Helper()
	tp.MustExec(tp.Router, "nft", "delete table ip lost")
}

// A stream sends a numbered datagram from a namespace to a serveUDP
// echo listener every interval on one UDP socket (one flow), and records when
// each was sent and when its echo came back.
type stream struct {
	conn net.Conn
	// stopped stops the sender, which closes sending when it has.
	stopped, sending chan struct{}
	reading          sync.WaitGroup

	mu sync.Mutex
	// sent and answered are the times of datagram i's sending and of its
	// echo's arrival (zero: none yet).
	sent, answered []time.Time
}

// startStream starts a stream from ns to addr, every interval; it stops
// when t ends at the latest.
func startStream(t *testing.T, tp *topology.Topology, ns, addr string, every time.Duration) *stream {
	t.Helper()
	s := &stream{stopped: make(chan struct{}), sending: make(chan struct{})}
	if err := tp.Do(ns, func() error {
		var err error
		s.conn, err = net.Dial("udp4", addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	s.reading.Add(1)
	go func() {
		defer s.reading.Done()
		buf := make([]byte, 64)
		for {
			n, err := s.conn.Read(buf)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue // ICMP errors while a tunnel is down
			}
			i, err := strconv.Atoi(string(buf[:n]))
			s.mu.Lock()
			if err == nil && i < len(s.answered) && s.answered[i].IsZero() {
				s.answered[i] = time.Now()
			}
			s.mu.Unlock()
		}
	}()
	go func() {
		defer close(s.sending)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-s.stopped:
				return
			case <-tick.C:
				s.mu.Lock()
				i := len(s.sent)
				s.sent, s.answered = append(s.sent, time.Now()), append(s.answered, time.Time{})
				s.mu.Unlock()
				_, _ = s.conn.Write([]byte(strconv.Itoa(i)))
			}
		}
	}()
	t.Cleanup(s.stop)
	return s
}

// longestGap returns the longest time without an echo arriving between
// from and to (now: the echoes so far).
func (s *stream) longestGap(from, to time.Time) time.Duration {
	s.mu.Lock()
	arrivals := slices.DeleteFunc(slices.Clone(s.answered), func(a time.Time) bool { return a.Before(from) || a.After(to) })
	s.mu.Unlock()
	slices.SortFunc(arrivals, time.Time.Compare)
	var gap time.Duration
	last := from
	for _, a := range arrivals {
		gap = max(gap, a.Sub(last))
		last = a
	}
	return max(gap, to.Sub(last))
}

// lost counts the datagrams sent between from and to that no echo
// answered: final once the stream is stopped.
func (s *stream) lost(from, to time.Time) (lost, sent int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, at := range s.sent {
		if at.Before(from) || !at.Before(to) {
			continue
		}
		sent++
		if s.answered[i].IsZero() {
			lost++
		}
	}
	return lost, sent
}

// stop ends the stream, once: no more datagrams, a second for the last
// echoes, then the socket closed.
func (s *stream) stop() {
	select {
	case <-s.stopped:
		return
	default:
	}
	close(s.stopped)
	<-s.sending
	time.Sleep(time.Second)
	_ = s.conn.Close()
	s.reading.Wait()
}

// serveUDP listens on UDP addr in namespace ns until t ends, answers
// every datagram with its own payload when echo is set, and returns a
// function counting the datagrams received.
func serveUDP(t *testing.T, tp *topology.Topology, ns, addr string, echo bool) func() int {
	t.Helper()
	var pc net.PacketConn
	if err := tp.Do(ns, func() error {
		var err error
		pc, err = net.ListenPacket("udp4", addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			size, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			n.Add(1)
			if echo {
				_, _ = pc.WriteTo(buf[:size], from)
			}
		}
	}()
	t.Cleanup(func() { _ = pc.Close(); <-done })
	return func() int { return int(n.Load()) }
}

// sendUDP sends count datagrams from src in namespace ns to addr.
func sendUDP(t *testing.T, tp *topology.Topology, ns string, src netip.Addr, addr string, count int) {
	t.Helper()
	var c net.Conn
	if err := tp.Do(ns, func() error {
		var err error
		c, err = (&net.Dialer{LocalAddr: &net.UDPAddr{IP: src.AsSlice()}}).Dial("udp4", addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close() //nolint:errcheck // sent or not: the receiver counts
	for range count {
		if _, err := c.Write([]byte("from the backup\n")); err != nil {
			t.Fatal(err)
		}
	}
}
