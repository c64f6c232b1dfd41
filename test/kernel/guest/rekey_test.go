//go:build kernel

package guest

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strongswan/govici/vici"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// Rekey times of TestTunnelRekeys' tunnel "rekey", short so that the
// stream sees several rekeys: the CHILD_SA every 3-4 s (rekeyTime 4s less
// up to randTime 1s), the IKE SA every 16-24 s (randTime 8s). Each rekey
// has until its SA's hard lifetime to complete: the CHILD_SA's lifeTime
// 15s, the IKE SA's rekeyTime plus charon's over_time (10% of rekeyTime,
// not in the API), so 2.4-10.4 s. Under TCG on a loaded machine an IKE
// rekey's Diffie-Hellman took up to 4 s, and CHILD_SA rekeys wait for it:
// with the IKE SA's rekeyTime 10s and the CHILD_SA's lifeTime 8s, the IKE
// SA's hard expiry came during its rekey and charon moved the queued
// delete onto the new IKE SA, which took the tunnel down (strongSwan 5.9.8).
var (
	childRekey = v1alpha1.ChildLifetime{RekeyTime: ptr.To(v1alpha1.Duration("4s")), LifeTime: ptr.To(v1alpha1.Duration("15s")), RandTime: ptr.To(v1alpha1.Duration("1s"))}
	ikeRekey   = v1alpha1.IKELifetime{RekeyTime: ptr.To(v1alpha1.Duration("24s")), RandTime: ptr.To(v1alpha1.Duration("8s"))}
)

// Figures of TestTunnelRekeys.
const (
	// streamFor is how long the stream runs through tunnel "rekey": about
	// twelve CHILD_SA rekeys and one or two IKE SA rekeys.
	streamFor = 45 * time.Second
	// pingEvery is the stream's interval; an echo whose reply has not come
	// within pingLost counts as lost (the guest's round trip through the
	// tunnel is a few milliseconds even under TCG).
	pingEvery = 100 * time.Millisecond
	pingLost  = 2 * time.Second
	// wanDelay is the one-way delay netem adds between the gateway and the
	// client site of tunnel "collide": requests that both sides send
	// within it cross on the wire, a rekey collision (RFC 7296 2.8.1).
	wanDelay = "100ms"
	// collisionRounds is how often both sides rekey at once, for the
	// CHILD_SA and for the IKE SA.
	collisionRounds = 2
	// settleTimeout bounds a collision round: the crossed exchanges and
	// the redundant SA's deletion take a few round trips of 2 * wanDelay
	// and Diffie-Hellman; but when the peer's DELETE of the old IKE SA
	// overtakes its CREATE_CHILD_SA response (its Diffie-Hellman is slow),
	// the loser aborts its rekey without deleting its redundant IKE SA, and
	// the winner keeps that one REKEYED, with no CHILD_SA, until charon's
	// timeout for it (HALF_OPEN_IKE_SA_TIMEOUT, 30 s; seen under TCG).
	settleTimeout = 40 * time.Second
)

// TestTunnelRekeys runs two policy-based tunnels of a mode routed gateway
// on the kernel's data plane under a continuous stream of echo requests
// (one every pingEvery) and fails on any one lost:
//
//   - "rekey", whose rendered lifetimes are short (childRekey, ikeRekey):
//     for streamFor the gateway rekeys its CHILD_SA and IKE SA several
//     times; every new CHILD_SA (a new SPI) counts packets, the first
//     CHILD_SA's SAs are gone from the kernel and the IKE SA was replaced
//     by its rekeys;
//   - "collide", with strongSwan's default lifetimes, its client site
//     wanDelay away: the gateway and the client site rekey the CHILD_SA at
//     the same moment, collisionRounds times, then the IKE SA; charon logs
//     the collisions, and after each round each side holds one IKE SA with
//     one CHILD_SA, new SPIs, and the gateway's kernel exactly its two SAs
//     (no redundant CHILD_SA left behind).
func TestTunnelRekeys(t *testing.T) {
	tp := start(t, 2)
	p0, p1 := tp.Peers[0], tp.Peers[1]
	psks := map[string][]byte{"rekey": []byte("kernel-rekey-psk-0123456789"), "collide": []byte("kernel-collide-psk-0123456789")}
	loadSheet(t, p0, clientSheet(p0, psks["rekey"], topology.ClientChild{Name: "tenant", LocalTS: []string{p0.Subnet.String()}, RemoteTS: []string{topology.TenantSubnet.String()}}))
	loadSheet(t, p1, clientSheet(p1, psks["collide"], topology.ClientChild{Name: "tenant", LocalTS: []string{p1.Subnet.String()}, RemoteTS: []string{topology.TenantSubnet.String()}}))

	rekey := siteTunnel("rekey", p0, [2]netip.Prefix{topology.TenantSubnet, p0.Subnet})
	rekey.IKELifetime, rekey.ChildLifetime = ikeRekey, childRekey
	collide := siteTunnel("collide", p1, [2]netip.Prefix{topology.TenantSubnet, p1.Subnet})
	spec := gatewaySpec(v1alpha1.ModeRouted, rekey, collide)
	spec.TenantSubnets = []v1alpha1.CIDR{v1alpha1.CIDR(topology.TenantSubnet.String())}
	rekeyChild, collideChild := render.ChildName("rekey", topology.TenantSubnet, p0.Subnet), render.ChildName("collide", topology.TenantSubnet, p1.Subnet)

	t.Cleanup(func() {
		if t.Failed() {
			// The topology logs only the charons' last lines, mostly
			// VICI's; what each tunnel's IKE SAs did is in its own.
			for _, conn := range []string{"rekey", "collide"} {
				t.Logf("the gateway charon's log of %s:\n%s", conn, grepLines(tp.Gateway.Log(), "<"+conn+"|", 150))
			}
		}
	})
	began := time.Now()
	startAgent(t, tp, spec, psks)
	tp.Gateway.WaitSA(t, "rekey", upTimeout, topology.Up(rekeyChild))
	tp.Gateway.WaitSA(t, "collide", upTimeout, topology.Up(collideChild))
	t.Logf("agent started to both CHILD_SAs INSTALLED in %v", time.Since(began).Round(time.Millisecond))

	// Rekeys of the gateway's timers.
	{
		first := tp.Gateway.WaitSA(t, "rekey", 5*time.Second, topology.Up(rekeyChild))
		firstChild, _ := first.Installed(rekeyChild)
		stream := streamPings(tp, p0.HostNS, topology.Service)
		// What the gateway's charon reports while the stream runs: every
		// IKE SA of the tunnel and the most packets each CHILD_SA (by its
		// inbound SPI) counted.
		ikes, counted := map[string]bool{}, map[string]int{}
		for end := time.Now().Add(streamFor); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
			sas, err := tp.Gateway.ListSAs(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, sa := range sas {
				if sa.Name != "rekey" {
					continue
				}
				ikes[sa.UniqueID] = true
				for _, c := range sa.ChildSAs {
					n, _ := strconv.Atoi(c.PacketsIn)
					counted[c.SPIIn] = max(counted[c.SPIIn], n)
				}
			}
		}
		res := stream()
		t.Logf("stream through tunnel rekey: %d echo requests, %d replies in %v; IKE SAs %d, CHILD_SAs by inbound SPI and packets counted %v",
			res.Sent, res.Received, streamFor, len(ikes), counted)
		if res.Received != res.Sent || res.Sent < int(streamFor/pingEvery)/2 {
			t.Errorf("%d of %d echo requests through tunnel rekey lost while it rekeyed", res.Sent-res.Received, res.Sent)
		}
		if len(ikes) < 2 {
			t.Errorf("tunnel rekey had %d IKE SAs in %v, want at least 2 (a rekey after %s at most)", len(ikes), streamFor, *ikeRekey.RekeyTime)
		}
		carried := 0
		for _, n := range counted {
			if n > 0 {
				carried++
			}
		}
		if carried < 8 {
			t.Errorf("%d CHILD_SAs of tunnel rekey carried packets in %v, want at least 8 (a rekey every %s at most): %v", carried, streamFor, *childRekey.RekeyTime, counted)
		}
		_, states := kernelSAs(t, tp, tp.Gateway.NS)
		for _, spi := range []string{firstChild.SPIIn, firstChild.SPIOut} {
			if strings.Contains(states, "spi 0x"+spi) {
				t.Errorf("the gateway's kernel still holds SA %s of the first CHILD_SA after its rekeys:\n%s", spi, states)
			}
		}
	}

	// Rekeys of both sides at once.
	{
		// The client site's side of its link and the router's: both
		// directions.
		tp.MustExec(p1.NS, "tc", "qdisc", "add", "dev", "wan", "root", "netem", "delay", wanDelay)
		tp.MustExec(tp.Router, "tc", "qdisc", "add", "dev", "ext1", "root", "netem", "delay", wanDelay)
		gwLog, peerLog := strings.Count(tp.Gateway.Log(), "rekey collision"), strings.Count(p1.Log(), "rekey collision")
		stream := streamPings(tp, p1.HostNS, topology.Service)
		gw, peer := tp.Gateway.Dial(t), p1.Dial(t)
		for _, round := range []struct {
			what, key        string // what rekeys, rekey's key for it (child or ike)
			gwName, siteName string
		}{
			{"CHILD_SA", "child", collideChild, "tenant"},
			{"IKE SA", "ike", "collide", "to-provider"},
		} {
			for i := range collisionRounds {
				before := settled(t, tp, p1, collideChild, time.Second)
				var wg sync.WaitGroup
				for _, r := range []struct {
					s    *vici.Session
					name string
				}{{gw, round.gwName}, {peer, round.siteName}} {
					wg.Go(func() {
						m := vici.NewMessage()
						if err := m.Set(round.key, r.name); err != nil {
							t.Error(err)
							return
						}
						if _, err := r.s.Call(context.Background(), "rekey", m); err != nil {
							t.Errorf("rekey %s %s: %v", round.key, r.name, err)
						}
					})
				}
				wg.Wait()
				after := settled(t, tp, p1, collideChild, settleTimeout, func(s snapshot) bool {
					if round.key == "child" {
						return s.spiIn != before.spiIn
					}
					return s.ike != before.ike
				})
				t.Logf("%s round %d: CHILD_SA %s → %s, IKE SA %s → %s", round.what, i+1, before.spiIn, after.spiIn, before.ike, after.ike)
			}
		}
		res := stream()
		gwColl, peerColl := strings.Count(tp.Gateway.Log(), "rekey collision")-gwLog, strings.Count(p1.Log(), "rekey collision")-peerLog
		t.Logf("stream through tunnel collide: %d echo requests, %d replies; rekey collisions logged: gateway %d, client site %d", res.Sent, res.Received, gwColl, peerColl)
		if res.Received != res.Sent {
			t.Errorf("%d of %d echo requests through tunnel collide lost while both sides rekeyed at once", res.Sent-res.Received, res.Sent)
		}
		for _, kind := range []string{"CHILD_SA rekey collision", "IKE_SA rekey collision"} {
			if !strings.Contains(tp.Gateway.Log(), kind) || !strings.Contains(p1.Log(), kind) {
				t.Errorf("no %q in both charons' logs: the rekeys did not collide, and the case proves nothing", kind)
			}
		}
	}
}

// streamPings sends an echo request from namespace ns to dst every
// pingEvery, each waiting up to pingLost for its reply, until the function
// it returns is called; that returns what was sent and received.
func streamPings(tp *topology.Topology, ns string, dst netip.Addr) func() topology.PingResult {
	stop, done := make(chan struct{}), make(chan topology.PingResult)
	go func() {
		var res topology.PingResult
		tick := time.NewTicker(pingEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				done <- res
				return
			case <-tick.C:
			}
			r, err := tp.Ping(ns, dst, 1, pingLost)
			if err != nil {
				// A socket that cannot be used sends nothing: count the
				// echo as lost.
				r = topology.PingResult{Sent: 1}
			}
			res.Sent += r.Sent
			res.Received += r.Received
		}
	}()
	return func() topology.PingResult { close(stop); return <-done }
}

// A snapshot is tunnel collide as the gateway sees it when settled: its one
// IKE SA (unique id) and its one CHILD_SA's inbound SPI.
type snapshot struct{ ike, spiIn string }

// settled waits up to timeout until tunnel collide is settled, and ok (if
// given) holds: on the gateway and on client site p one ESTABLISHED IKE SA
// of the connection with exactly one CHILD_SA, INSTALLED, and the
// gateway's kernel with exactly the two SAs of that CHILD_SA to and from p.
// It fails t with what it last saw.
func settled(t *testing.T, tp *topology.Topology, p *topology.Peer, child string, timeout time.Duration, ok ...func(snapshot) bool) snapshot {
	t.Helper()
	var why string
	for end := time.Now().Add(timeout); ; time.Sleep(100 * time.Millisecond) {
		var s snapshot
		s, why = settledOnce(tp, p, child)
		if why == "" && (len(ok) == 0 || ok[0](s)) {
			return s
		}
		if why == "" {
			why = fmt.Sprintf("settled at %+v, not yet changed", s)
		}
		if time.Now().After(end) {
			t.Fatalf("tunnel collide not settled within %v: %s", timeout, why)
		}
	}
}

// settledOnce is one look of settled: the snapshot, or why it is not
// settled.
func settledOnce(tp *topology.Topology, p *topology.Peer, child string) (snapshot, string) {
	one := func(c *topology.Charon, conn, child string) (topology.IKESA, topology.ChildSA, string) {
		sas, err := c.ListSAs(context.Background())
		if err != nil {
			return topology.IKESA{}, topology.ChildSA{}, err.Error()
		}
		var mine []topology.IKESA
		for _, sa := range sas {
			if sa.Name == conn {
				mine = append(mine, sa)
			}
		}
		if len(mine) != 1 || mine[0].State != "ESTABLISHED" || len(mine[0].ChildSAs) != 1 {
			return topology.IKESA{}, topology.ChildSA{}, fmt.Sprintf("%s holds IKE SAs %+v", c.NS, mine)
		}
		ch, ok := mine[0].Installed(child)
		if !ok {
			return topology.IKESA{}, topology.ChildSA{}, fmt.Sprintf("%s holds IKE SA %+v without CHILD_SA %s INSTALLED", c.NS, mine[0], child)
		}
		return mine[0], ch, ""
	}
	ike, ch, why := one(tp.Gateway.Charon, "collide", child)
	if why != "" {
		return snapshot{}, why
	}
	if _, _, why := one(p.Charon, "to-provider", "tenant"); why != "" {
		return snapshot{}, why
	}
	var states []string
	for _, dir := range []string{"src", "dst"} {
		out, err := tp.Exec(tp.Gateway.NS, "ip", "xfrm", "state", "list", dir, p.Address.String())
		if err != nil {
			return snapshot{}, fmt.Sprintf("ip xfrm state: %v: %s", err, out)
		}
		states = append(states, out)
		if n := strings.Count(out, "proto esp spi"); n != 1 {
			return snapshot{}, fmt.Sprintf("the gateway's kernel holds %d SAs with %s %s, want 1:\n%s", n, dir, p.Address, out)
		}
	}
	all := strings.Join(states, "")
	if !strings.Contains(all, "spi 0x"+ch.SPIIn) || !strings.Contains(all, "spi 0x"+ch.SPIOut) {
		return snapshot{}, fmt.Sprintf("the gateway's kernel SAs are not CHILD_SA %s's (%s, %s):\n%s", child, ch.SPIIn, ch.SPIOut, all)
	}
	return snapshot{ike: ike.UniqueID, spiIn: ch.SPIIn}, ""
}

// grepLines returns the last n lines of s that contain sub.
func grepLines(s, sub string, n int) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			out = append(out, strings.TrimRight(l, "\n"))
		}
	}
	return strings.Join(out[max(0, len(out)-n):], "\n")
}
