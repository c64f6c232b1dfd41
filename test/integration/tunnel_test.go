//go:build integration

package integration

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/strongswan/govici/vici"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// tunnelTimeout bounds every wait for a tunnel: with the harness'
// retransmission settings a failed exchange gives up within about 3 s.
const tunnelTimeout = 15 * time.Second

// TestTunnelThroughFloatingIPNAT brings a real tunnel up between a gateway
// configured by the project's renderer and a client site configured from
// its own parameter sheet, through the 1:1 floating-IP NAT: the gateway
// binds its private address and identifies itself with the floating IP, so
// IKE runs over NAT-T. A ping from the client host must reach the tenant
// service and come back through the tunnel.
func TestTunnelThroughFloatingIPNAT(t *testing.T) {
	tp := topology.Start(t, topology.Options{})
	peer := tp.Peers[0]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const psk = "tunnel-test-psk-0123456789abcdef"

	// The client site, as its administrator configures it from the sheet
	// the provider sent: it answers and waits for the gateway to initiate.
	sheet := topology.ClientSheet{
		Name:          "to-provider",
		LocalAddress:  peer.Address.String(),
		RemoteAddress: topology.FloatingIP.String(),
		PSK:           psk,
		IKEProposals:  []string{"aes256-sha256-modp2048"},
		ESPProposals:  []string{"aes256gcm16-modp2048"},
		Children: []topology.ClientChild{{
			Name:     "tenant",
			LocalTS:  []string{peer.Subnet.String()},
			RemoteTS: []string{topology.TenantSubnet.String()},
		}},
	}
	if err := peer.LoadSheet(ctx, sheet); err != nil {
		t.Fatal(err)
	}

	spec := v1alpha1.GatewayParameters{
		Namespace: "tenant-a",
		GatewayConfig: v1alpha1.GatewayConfig{
			Endpoint: v1alpha1.Endpoint{
				PrivateAddress: v1alpha1.IPv4(topology.PrivateAddress.String()),
				PrefixLength:   int32(topology.PrivatePrefixLength),
				Gateway:        v1alpha1.IPv4(topology.Router.String()),
				MACAddress:     topology.MACAddress,
				LocalID:        v1alpha1.IPv4(topology.FloatingIP.String()),
			},
			Mode:          v1alpha1.ModeRouted,
			TenantSubnets: []v1alpha1.CIDR{v1alpha1.CIDR(topology.TenantSubnet.String())},
			Tunnels: []v1alpha1.Tunnel{{
				Name:         "branch-a",
				Peer:         v1alpha1.Peer{Address: peer.Address.String()},
				IKEVersion:   2,
				IKEProposals: []string{"aes256-sha256-modp2048"},
				ESPProposals: []string{"aes256gcm16-modp2048"},
				StartAction:  "start",
				TrafficSelectors: []v1alpha1.TrafficSelector{{
					Local:  v1alpha1.CIDR(topology.TenantSubnet.String()),
					Remote: v1alpha1.CIDR(peer.Subnet.String()),
				}},
			}},
		}}
	files, err := render.Render(render.Input{Spec: spec, PSKs: map[string][]byte{"branch-a": []byte(psk)}})
	if err != nil {
		t.Fatal(err)
	}

	events := tp.Gateway.Events(t, "ike-updown", "child-updown")
	start := time.Now()
	if err := tp.Gateway.LoadConfig(ctx, files.SwanctlConf, files.Secrets); err != nil {
		t.Fatal(err)
	}
	loaded := time.Since(start)
	ikeUp, childUp := waitUp(t, events, "branch-a", start, tunnelTimeout)
	t.Logf("config loaded over VICI in %v; IKE SA ESTABLISHED %v and CHILD_SA INSTALLED %v after the load started",
		loaded.Round(time.Millisecond), ikeUp.Round(time.Millisecond), childUp.Round(time.Millisecond))

	childName := render.ChildName("branch-a", topology.TenantSubnet, peer.Subnet)
	gw := tp.Gateway.WaitSA(t, "branch-a", tunnelTimeout, topology.Up(childName))
	// charon also reports nat-remote=yes here, although only the gateway
	// is behind the NAT: not asserted.
	type ends struct {
		LocalHost, LocalID, RemoteHost, RemoteID, NATLocal string
	}
	want := ends{
		LocalHost: topology.PrivateAddress.String(), LocalID: topology.FloatingIP.String(),
		RemoteHost: peer.Address.String(), RemoteID: peer.Address.String(),
		NATLocal: "yes",
	}
	got := ends{gw.LocalHost, gw.LocalID, gw.RemoteHost, gw.RemoteID, gw.NATLocal}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("gateway's IKE SA: -want, +got:\n%s", diff)
	}
	child, _ := gw.Child(childName)
	if child.Encap != "yes" {
		t.Errorf("gateway's CHILD_SA is not UDP-encapsulated (encap=%q): NAT-T was not used", child.Encap)
	}
	wantTS := [2][]string{{topology.TenantSubnet.String()}, {peer.Subnet.String()}}
	if diff := cmp.Diff(wantTS, [2][]string{child.LocalTS, child.RemoteTS}); diff != "" {
		t.Errorf("gateway's CHILD_SA traffic selectors [local, remote]: -want, +got:\n%s", diff)
	}
	// The client sees the floating IP, behind a NAT on the other side.
	ps := peer.WaitSA(t, "to-provider", tunnelTimeout, topology.Up("tenant"))
	t.Logf("gateway: nat-local=%q nat-remote=%q; peer: nat-local=%q nat-remote=%q", gw.NATLocal, gw.NATRemote, ps.NATLocal, ps.NATRemote)
	if ps.RemoteHost != topology.FloatingIP.String() || ps.NATRemote != "yes" {
		t.Errorf("peer's IKE SA: remote-host %s nat-remote %q, want %s and yes", ps.RemoteHost, ps.NATRemote, topology.FloatingIP)
	}

	// Client host → tenant service and back, then the other way round.
	for _, p := range []struct {
		from, to string
		res      func() (topology.PingResult, error)
	}{
		{from: "client host", to: "tenant service", res: func() (topology.PingResult, error) {
			return tp.Ping(peer.HostNS, topology.Service, 3, 2*time.Second)
		}},
		{from: "tenant service", to: "client host", res: func() (topology.PingResult, error) {
			return tp.Ping(tp.Gateway.ServiceNS, peer.Host, 3, 2*time.Second)
		}},
	} {
		r, err := p.res()
		if err != nil {
			t.Fatal(err)
		}
		if r.Received == 0 {
			t.Errorf("ping from the %s to the %s: %d sent, none came back", p.from, p.to, r.Sent)
			continue
		}
		t.Logf("ping from the %s to the %s: %d/%d back, RTTs %v", p.from, p.to, r.Received, r.Sent, r.RTTs)
	}

	// The pings went through the gateway's CHILD_SA: its counters show them.
	gw = tp.Gateway.WaitSA(t, "branch-a", tunnelTimeout, topology.Up(childName))
	child, _ = gw.Child(childName)
	in, _ := strconv.Atoi(child.PacketsIn)
	out, _ := strconv.Atoi(child.PacketsOut)
	if in < 2 || out < 2 {
		t.Errorf("gateway's CHILD_SA counted %d packets in and %d out, want at least 2 each (one echo each way, and its reply)", in, out)
	}
}

// waitUp waits for charon's ike-updown and child-updown events with up=yes
// for connection conn and returns when each arrived, measured from start.
func waitUp(t *testing.T, events <-chan vici.Event, conn string, start time.Time, timeout time.Duration) (ike, child time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for ike == 0 || child == 0 {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("charon closed the event session")
			}
			if ev.Message.Get("up") != "yes" || ev.Message.Get(conn) == nil {
				continue
			}
			switch ev.Name {
			case "ike-updown":
				ike = ev.Timestamp.Sub(start)
			case "child-updown":
				child = ev.Timestamp.Sub(start)
			}
		case <-deadline:
			t.Fatalf("%s not up within %v (IKE up after %v, CHILD up after %v; 0 = not yet)", conn, timeout, ike, child)
		}
	}
	return ike, child
}

// TestTunnelHarness checks what other real-tunnel tests rely on from the
// harness: several client sites each reachable from the gateway through the
// floating-IP NAT, and a charon that can be killed and restarted.
func TestTunnelHarness(t *testing.T) {
	tp := topology.Start(t, topology.Options{Peers: 2})
	for i, p := range tp.Peers {
		r, err := tp.Ping(tp.Gateway.NS, p.Address, 2, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if r.Received == 0 {
			t.Errorf("peer %d at %s does not answer the gateway through the NAT", i, p.Address)
		}
		if r, _ := tp.Ping(p.NS, p.Host, 1, 2*time.Second); r.Received == 0 {
			t.Errorf("peer %d does not reach its client host %s", i, p.Host)
		}
	}
	if r, _ := tp.Ping(tp.Gateway.NS, topology.Service, 1, 2*time.Second); r.Received == 0 {
		t.Errorf("the gateway does not reach the tenant service %s", topology.Service)
	}

	events := tp.Gateway.Events(t, "ike-updown")
	before := tp.Gateway.Pid()
	tp.Gateway.Restart(t)
	if tp.Gateway.Pid() == before {
		t.Errorf("charon's pid is still %d after Restart", before)
	}
	select {
	case _, ok := <-events:
		if ok {
			t.Error("an event arrived from the killed charon")
		}
	case <-time.After(5 * time.Second):
		t.Error("the event channel of the killed charon is still open after 5s")
	}
	if _, err := tp.Gateway.Call(context.Background(), "version", nil); err != nil {
		t.Errorf("the restarted charon does not answer: %v", err)
	}
	tp.Peers[1].Kill()
	if tp.Peers[1].Pid() != 0 {
		t.Error("a killed charon still has a pid")
	}
}
