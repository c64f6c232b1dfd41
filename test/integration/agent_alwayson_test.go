//go:build integration

package integration

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strongswan/govici/vici"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	agentrun "github.com/ipsecgw/provider-ipsec/internal/agent/run"
	"github.com/ipsecgw/provider-ipsec/internal/agent/status"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// Bounds of the always-on tests. The topology's charons give an unanswered
// IKE request up after about 3 s (topology.RetransmitTimeout and friends), so
// a gateway retrying for ever sends an IKE_SA_INIT at least every second
// or so; recovery after the peer returns is asserted within recoveryBound,
// a generous margin over that and over a few rounds of the watchdog's
// bound in TestAgentWatchdog, and the measured time is logged.
const (
	recoveryBound = 30 * time.Second
	// shortBound is the agent's re-initiation bound in the tests that
	// prove it leaves charon's own retries alone: far below how long those
	// tests keep the tunnel down, so a watchdog that fought charon would
	// show.
	shortBound = 3 * time.Second
)

// alwaysOn is the gateway side of the always-on tests: one tunnel "site"
// to peer in IKE version (1 or 2), initiated by the gateway (startAction
// start, the default), with DPD every 2 s so that a dead peer is found
// within seconds (IKEv1: dpdTimeoutV1 without an answer).
func alwaysOn(t *testing.T, tp *topology.Topology, name string, version int32) (v1alpha1.GatewayParameters, string) {
	t.Helper()
	p := tp.Peers[0]
	tn := siteTunnel("site", p, v1alpha1.ChildSAPerSubnetPair, [2]netip.Prefix{topology.TenantSubnet, p.Subnet})
	tn.IKEVersion = version
	tn.DPD = v1alpha1.DPD{Delay: ptr.To[v1alpha1.Duration]("2s"), Action: "restart"}
	if version == 1 {
		tn.DPD.Timeout = ptr.To(dpdTimeoutV1)
	}
	return tunnelGateway(name, v1alpha1.ModeRouted, tn), render.ChildName("site", topology.TenantSubnet, p.Subnet)
}

// dpdTimeoutV1 is the IKEv1 always-on tests' dpd.timeout: an IKEv1 peer
// that answered no DPD check for it is dead (strongSwan's default is 150 s).
const dpdTimeoutV1 v1alpha1.Duration = "6s"

// ikeVersions are the IKE versions every always-on scenario runs in, as
// subtests named by ikeName.
var ikeVersions = []int32{2, 1}

// ikeName names the subtest of IKE version v.
func ikeName(v int32) string { return fmt.Sprintf("IKEv%d", v) }

// inVersion fails t unless tunnel site's IKE SA in the gateway's charon,
// up with child, speaks IKE version v: the scenario ran in the version
// its subtest names.
func inVersion(t *testing.T, tp *topology.Topology, child string, v int32) {
	t.Helper()
	if sa := tp.Gateway.WaitSA(t, "site", 5*time.Second, topology.Up(child)); sa.Version != fmt.Sprint(v) {
		t.Errorf("the tunnel's IKE SA #%s is IKEv%s, want IKEv%d", sa.UniqueID, sa.Version, v)
	}
}

// responderSheet is a customer's peer in IKE version that only answers: it
// never initiates, not at load, not when the gateway closes the tunnel, not
// after DPD (no DPD of its own). Whatever comes back is the gateway's doing.
func responderSheet(p *topology.Peer, psk string, version int32) topology.ClientSheet {
	s := clientSheet(p, psk, tenantChild(p))
	s.IKEVersion = int(version)
	return s
}

// responderSite starts a topology whose first peer, p, is to answer only,
// in IKE version, with sheet (responderSheet, not loaded yet).
func responderSite(t *testing.T, psk string, version int32) (tp *topology.Topology, p *topology.Peer, sheet topology.ClientSheet) {
	t.Helper()
	tp = topology.Start(t, topology.Options{})
	p = tp.Peers[0]
	return tp, p, responderSheet(p, psk, version)
}

// reinitiateAfter sets the agent's re-initiation bound.
func reinitiateAfter(d time.Duration) func(*agentrun.Options) {
	return func(o *agentrun.Options) { o.ReinitiateAfter = d }
}

// peerBack restarts the peer's charon (it was killed) and loads its sheet,
// as a customer's gateway that comes back from a reboot; it returns when
// the sheet is loaded.
func peerBack(t *testing.T, p *topology.Peer, sheet topology.ClientSheet) time.Time {
	t.Helper()
	p.Restart(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.LoadSheet(ctx, sheet); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// recovered waits until the agent's published status shows tunnel site up
// with child, then until a ping from the client host reaches the tenant
// service through it, and logs how long after since each came. It fails t
// after recoveryBound.
func recovered(t *testing.T, g *agentGateway, tp *topology.Topology, child string, since time.Time, what string) v1alpha1.TunnelStatus {
	t.Helper()
	st := g.waitTunnels(recoveryBound, what, up(map[string][]string{"site": {child}}))["site"]
	statusUp := time.Since(since)
	var r topology.PingResult
	eventually(t, recoveryBound-statusUp, what+": a ping through the tunnel", func() error {
		var err error
		if r, err = tp.Ping(tp.Peers[0].HostNS, topology.Service, 1, time.Second); err != nil {
			return err
		}
		if r.Received != 1 {
			return fmt.Errorf("no echo reply")
		}
		return nil
	})
	t.Logf("%s: up in the agent's status %v after, first ping through %v after", what, statusUp.Round(time.Millisecond), time.Since(since).Round(time.Millisecond))
	return st
}

// establishedSite starts a topology with a responder-only peer and the
// agent running alwaysOn in IKE version (its swanctl.conf passed through
// edit when not nil) with opts, waits until the tunnel is up, and returns
// the tunnel's child and IKE SA in the gateway's charon.
func establishedSite(t *testing.T, name string, version int32, edit func([]byte) []byte, opts ...func(*agentrun.Options)) (*topology.Topology, *agentGateway, string, topology.IKESA) {
	t.Helper()
	tp := topology.Start(t, topology.Options{})
	psk := name + "-psk-0123456789"
	loadSheets(t, tp, responderSheet(tp.Peers[0], psk, version))
	spec, child := alwaysOn(t, tp, name, version)
	g := startAgentEdited(t, tp, spec, map[string][]byte{"site": []byte(psk)}, edit, opts...)
	recovered(t, g, tp, child, time.Now(), "first establishment")
	return tp, g, child, tp.Gateway.WaitSA(t, "site", 5*time.Second, topology.Up(child))
}

// peerTerminates has the peer's administrator close SAs of its connection
// (swanctl --terminate with args) and returns when that was done.
func peerTerminates(t *testing.T, p *topology.Peer, args ...string) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.Swanctl(ctx, append([]string{"--terminate"}, args...)...); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// siteStatus returns tunnel site's status as the agent publishes it now.
func siteStatus(t *testing.T, g *agentGateway) v1alpha1.TunnelStatus {
	t.Helper()
	return g.waitTunnels(5*time.Second, "the published status", func(map[string]v1alpha1.TunnelStatus) error { return nil })["site"]
}

// reinitiatedLog is what the agent logs each time it re-initiates a tunnel.
const reinitiatedLog = "Re-initiated a tunnel"

// noReinitiation fails t if the agent re-initiated tunnel site, by its
// published status st or by its log: charon's own settings were to bring
// the tunnel back, and the agent must not have stepped in. when says at
// which point of the test.
func noReinitiation(t *testing.T, g *agentGateway, st v1alpha1.TunnelStatus, when string) {
	t.Helper()
	if st.Reinitiations != 0 || st.LastReinitiate != nil {
		t.Errorf("%s: the agent re-initiated tunnel site (%d times, last %v), charon was to bring it back", when, st.Reinitiations, st.LastReinitiate)
	}
	if n := strings.Count(g.logged(), reinitiatedLog); n != 0 {
		t.Errorf("%s: the agent logged %d re-initiation(s), charon was to bring the tunnel back", when, n)
	}
}

// peerReturns checks that the agent left tunnel site to charon while the
// peer was down, brings the peer back (peerBack) and returns when its
// sheet was loaded.
func peerReturns(t *testing.T, g *agentGateway, p *topology.Peer, sheet topology.ClientSheet) time.Time {
	t.Helper()
	noReinitiation(t, g, siteStatus(t, g), "just before the peer returned")
	return peerBack(t, p, sheet)
}

// backInVersion brings the killed peer p back with sheet (peerReturns) and
// checks that tunnel site recovered with child (recovered, what naming the
// case) in IKE version v, the agent re-initiating only after a refusal.
func backInVersion(t *testing.T, g *agentGateway, tp *topology.Topology, p *topology.Peer, sheet topology.ClientSheet, child string, v int32, what string) {
	t.Helper()
	back := peerReturns(t, g, p, sheet)
	st := recovered(t, g, tp, child, back, what)
	inVersion(t, tp, child, v)
	onlyAfterRefusal(t, g, tp, st)
}

// refusedLogs are how charon logs a peer's refusal of an IKE_SA_INIT or
// IKE_AUTH (NO_PROPOSAL_CHOSEN, AUTHENTICATION_FAILED), in IKEv2 and in
// IKEv1's Main Mode, which it does not retry: only then may the agent have
// re-initiated.
var refusedLogs = []string{"notify error", "error notify"}

// onlyAfterRefusal fails t if the agent re-initiated tunnel site (status
// st) after the peer returned although the peer refused nothing: a
// restarted peer answers NO_PROPOSAL_CHOSEN until its configuration is
// loaded, which charon does not retry, and the agent may step in then,
// never otherwise.
func onlyAfterRefusal(t *testing.T, g *agentGateway, tp *topology.Topology, st v1alpha1.TunnelStatus) {
	t.Helper()
	if log := tp.Gateway.Log(); strings.Contains(log, refusedLogs[0]) || strings.Contains(log, refusedLogs[1]) {
		t.Logf("the peer refused an initiation after its restart; the agent re-initiated %d time(s) since", st.Reinitiations)
		return
	}
	noReinitiation(t, g, st, "after the peer returned (it refused nothing)")
}

// TestAlwaysOnPeerDownAtLoad loads the configuration while the customer's
// gateway (responder only) is down and brings it back 8 s later, in IKEv2
// and IKEv1: charon keeps initiating (keyingtries 0) and the tunnel comes
// up, without the agent's watchdog stepping in while charon retries. With
// strongSwan's default of one keying try it gave up after its
// retransmissions and never came back.
func TestAlwaysOnPeerDownAtLoad(t *testing.T) {
	for _, v := range ikeVersions {
		t.Run(ikeName(v), func(t *testing.T) {
			const psk = "always-on-down-at-load-0123"
			tp, p, sheet := responderSite(t, psk, v)
			p.Kill()
			spec, child := alwaysOn(t, tp, "always-on-load", v)
			g := startAgent(t, tp, spec, map[string][]byte{"site": []byte(psk)}, reinitiateAfter(shortBound))
			time.Sleep(8 * time.Second)
			backInVersion(t, g, tp, p, sheet, child, v, ikeName(v)+": peer down at load, back after 8s")
			if log := tp.Gateway.Log(); !strings.Contains(log, "peer not responding, trying again") {
				t.Errorf("the gateway's charon did not retry initiation after a keying try ran out")
			}
		})
	}
}

// TestAlwaysOnPeerDownLongerThanDPD takes the customer's gateway (responder
// only) down for 12 s under an established tunnel, in IKEv2 and IKEv1
// (dpd.timeout dpdTimeoutV1): DPD finds it dead within seconds, dpd_action
// restart initiates again, and with keyingtries 0 that restart keeps trying
// until the peer is back. With one keying try the restart failed once and
// nothing more happened.
func TestAlwaysOnPeerDownLongerThanDPD(t *testing.T) {
	for _, v := range ikeVersions {
		t.Run(ikeName(v), func(t *testing.T) {
			const psk = "always-on-dpd-0123456789"
			tp, p, sheet := responderSite(t, psk, v)
			loadSheets(t, tp, sheet)
			spec, child := alwaysOn(t, tp, "always-on-dpd", v)
			g := startAgent(t, tp, spec, map[string][]byte{"site": []byte(psk)}, reinitiateAfter(shortBound))
			recovered(t, g, tp, child, time.Now(), "first establishment")

			down := time.Now()
			p.Kill()
			g.waitTunnels(recoveryBound, "DPD finds the peer dead", func(got map[string]v1alpha1.TunnelStatus) error {
				if got["site"].Up {
					return fmt.Errorf("tunnel site is still up")
				}
				return nil
			})
			t.Logf("%s: peer killed: tunnel reported down %v later", ikeName(v), time.Since(down).Round(time.Millisecond))
			time.Sleep(time.Until(down.Add(12 * time.Second)))
			backInVersion(t, g, tp, p, sheet, child, v, ikeName(v)+": peer down 12s under an established tunnel (DPD every 2s), back")
			log := tp.Gateway.Log()
			for _, want := range []string{"restarting CHILD_SA", "peer not responding, trying again"} {
				if !strings.Contains(log, want) {
					t.Errorf("the gateway's charon did not log %q: DPD's restart did not keep trying", want)
				}
			}
		})
	}
}

// TestAlwaysOnPeerDeletesIKESA has the customer's administrator delete the
// IKE SA on a peer that only answers (swanctl --terminate --ike), in IKEv2
// and IKEv1, so the peer will not bring it back: the gateway re-establishes
// it at once (close_action start, which strongSwan 5.9 also applies when
// the peer deletes the IKE SA). Before, the tunnel stayed down.
func TestAlwaysOnPeerDeletesIKESA(t *testing.T) {
	for _, v := range ikeVersions {
		t.Run(ikeName(v), func(t *testing.T) {
			tp, g, child, before := establishedSite(t, "always-on-ike", v, nil, reinitiateAfter(shortBound))
			deleted := peerTerminates(t, tp.Peers[0], "--ike", "to-provider")
			again := tp.Gateway.WaitSA(t, "site", recoveryBound, func(sa topology.IKESA) bool { return sa.UniqueID != before.UniqueID && topology.Up(child)(sa) })
			t.Logf("%s: peer deleted the IKE SA: a new IKE SA #%s (was #%s) up in the gateway's charon %v later", ikeName(v), again.UniqueID, before.UniqueID, time.Since(deleted).Round(time.Millisecond))
			st := recovered(t, g, tp, child, deleted, ikeName(v)+": peer deleted the IKE SA")
			inVersion(t, tp, child, v)
			noReinitiation(t, g, st, "after the new IKE SA came up")
		})
	}
}

// TestAlwaysOnPeerDeletesChildSA has the customer's administrator delete
// only the CHILD_SA on a peer that only answers (swanctl --terminate
// --child), in IKEv2 and IKEv1: the gateway creates it again in the same
// IKE SA (close_action start). Before, an IKE SA without CHILD_SA stayed
// ESTABLISHED, carrying nothing.
func TestAlwaysOnPeerDeletesChildSA(t *testing.T) {
	for _, v := range ikeVersions {
		t.Run(ikeName(v), func(t *testing.T) {
			tp, g, child, before := establishedSite(t, "always-on-child", v, nil, reinitiateAfter(shortBound))
			old, _ := before.Installed(child)
			deleted := peerTerminates(t, tp.Peers[0], "--child", "tenant")
			again := tp.Gateway.WaitSA(t, "site", recoveryBound, func(sa topology.IKESA) bool {
				c, ok := sa.Installed(child)
				return ok && c.SPIIn != old.SPIIn
			})
			t.Logf("%s: peer deleted the CHILD_SA: a new one up in the gateway's charon %v later", ikeName(v), time.Since(deleted).Round(time.Millisecond))
			if again.UniqueID != before.UniqueID {
				t.Errorf("the CHILD_SA came back in IKE SA #%s, not in the one that stayed (#%s)", again.UniqueID, before.UniqueID)
			}
			st := recovered(t, g, tp, child, deleted, ikeName(v)+": peer deleted the CHILD_SA")
			inVersion(t, tp, child, v)
			noReinitiation(t, g, st, "after the new CHILD_SA came up")
		})
	}
}

// defaultPoll has the agent read the tunnel status at its default interval
// (the tests' agent reads it every second), so that what the watchdog does
// between two reads is its own timing.
func defaultPoll(o *agentrun.Options) { o.Poll = status.DefaultPoll }

// withinBound fails t unless the agent re-initiated took after the drop:
// not before bound (charon might still have been about to act), and at most
// watchdogLate after it.
func withinBound(t *testing.T, what string, took, bound time.Duration) {
	t.Helper()
	t.Logf("%s: re-initiated %v after the drop (bound %v)", what, took.Round(time.Millisecond), bound)
	if took < bound || took > bound+watchdogLate {
		t.Errorf("%s: the agent re-initiated %v after the drop, want within [%v, %v]", what, took.Round(time.Millisecond), bound, bound+watchdogLate)
	}
}

// watchdogLate is how late after its bound the watchdog may re-initiate: a
// tick (a tenth of the bound) and the test's 50 ms polling, with margin for
// a busy machine (2.7 s late seen in a CI run beside the other integration
// tests); a watchdog acting at the status reads every 10 s would be up to
// 10 s late.
const watchdogLate = 5 * time.Second

// noSAFrom polls the gateway's charon until connection conn has no IKE SA
// and returns when it saw that.
func noSAFrom(t *testing.T, c *topology.Gateway, conn string, timeout time.Duration) time.Time {
	t.Helper()
	eventually(t, timeout, "no IKE SA of "+conn, func() error {
		sas, err := c.ListSAs(context.Background())
		if err != nil {
			return err
		}
		for _, sa := range sas {
			if sa.Name == conn {
				return fmt.Errorf("IKE SA #%s is %s", sa.UniqueID, sa.State)
			}
		}
		return nil
	})
	return time.Now()
}

// TestAgentWatchdog proves the agent's watchdog on its own, with charon
// made not to recover by itself (the rendered configuration edited past the
// renderer): a connection with one keying try whose peer is down at load
// (charon gives up after one try and stays idle), and a connection without
// close_action whose peer deletes the CHILD_SA (an IKE SA without CHILD_SA
// stays). The agent, reading the status every 10 s (its default), initiates
// each again within a tick of the bound after the drop, says so in the
// status, and the tunnel comes back.
func TestAgentWatchdog(t *testing.T) {
	const bound = 4 * time.Second
	t.Run("RetriesExhausted", func(t *testing.T) {
		const psk = "watchdog-exhausted-0123456"
		tp, p, sheet := responderSite(t, psk, 2)
		p.Kill()
		spec, child := alwaysOn(t, tp, "watchdog-tries", 2)
		g := startAgentEdited(t, tp, spec, map[string][]byte{"site": []byte(psk)}, func(conf []byte) []byte {
			return []byte(strings.Replace(string(conf), "keyingtries = 0", "keyingtries = 1", 1))
		}, reinitiateAfter(bound), defaultPoll)
		tp.Gateway.WaitSA(t, "site", recoveryBound, func(topology.IKESA) bool { return true })
		gaveUp := noSAFrom(t, tp.Gateway, "site", recoveryBound)
		tp.Gateway.WaitSA(t, "site", bound+recoveryBound, func(topology.IKESA) bool { return true })
		withinBound(t, "charon gave up (one keying try)", time.Since(gaveUp), bound)
		g.waitTunnels(recoveryBound, "charon gives up and the agent re-initiates", func(got map[string]v1alpha1.TunnelStatus) error {
			if got["site"].Reinitiations < 1 || got["site"].LastReinitiate == nil {
				return fmt.Errorf("no re-initiation in the status")
			}
			return nil
		})
		back := peerBack(t, p, sheet)
		st := recovered(t, g, tp, child, back, "one keying try, peer down at load, back")
		t.Logf("the agent re-initiated %d time(s), last at %v", st.Reinitiations, st.LastReinitiate)
		if log := tp.Gateway.Log(); !strings.Contains(log, "establishing IKE_SA failed, peer not responding") {
			t.Errorf("the gateway's charon did not give up by itself: the test proves nothing about the agent")
		}
		if !strings.Contains(g.logged(), reinitiatedLog) {
			t.Errorf("the agent did not log its re-initiation")
		}
	})
	t.Run("ChildSAGone", func(t *testing.T) {
		tp, g, child, before := establishedSite(t, "watchdog-child", 2, func(conf []byte) []byte {
			return []byte(strings.Replace(string(conf), "close_action = start", "close_action = none", 1))
		}, reinitiateAfter(bound), defaultPoll)
		old, _ := before.Installed(child)
		deleted := peerTerminates(t, tp.Peers[0], "--child", "tenant")
		tp.Gateway.WaitSA(t, "site", bound+recoveryBound, func(sa topology.IKESA) bool {
			c, ok := sa.Installed(child)
			return ok && c.SPIIn != old.SPIIn
		})
		// Not before the bound: charon left the IKE SA without its
		// CHILD_SA until the agent stepped in (the status counts it).
		withinBound(t, "the peer deleted the CHILD_SA (no close_action)", time.Since(deleted), bound)
		st := recovered(t, g, tp, child, deleted, "no close_action, peer deleted the CHILD_SA")
		if st.Reinitiations != 1 || st.LastReinitiate == nil {
			t.Errorf("the status shows %d re-initiations (last %v), want 1", st.Reinitiations, st.LastReinitiate)
		}
		if again := tp.Gateway.WaitSA(t, "site", 5*time.Second, topology.Up(child)); again.UniqueID != before.UniqueID {
			t.Errorf("the agent made IKE SA #%s instead of using #%s", again.UniqueID, before.UniqueID)
		}
		if sas, err := tp.Gateway.ListSAs(context.Background()); err != nil || len(sas) != 1 {
			t.Errorf("the gateway's charon has %d IKE SAs (%v), want 1", len(sas), err)
		}
	})
}

// TestAlwaysOnSimultaneous has the gateway and an initiating customer's
// gateway initiate at the same moment: with the link between them blocked,
// the peer initiates the moment the gateway retransmits its IKE_SA_INIT (a
// log event), so that both retransmit in step, and the link opens between
// two retransmissions: the next IKE_SA_INIT of each side crosses the
// other's, and each side is initiator of one IKE SA and responder of the
// other. With unique no (the default) and the agent closing the gateway's
// own duplicate, the tunnel converges to one IKE SA with its CHILD_SA
// against a peer that does not re-create every IKE SA it is told to delete;
// against one that does (an always-on swanctl peer), nothing one side can
// do removes the peer's duplicate, and the test asserts that no loop
// follows: the number of IKE SAs stops growing. Traffic flows in every
// case. Only an attempt in which the IKE_SA_INITs crossed (a duplicate IKE
// SA arose) and charon did not end the duplicate itself before the agent's
// bound counts: each case tries up to simultaneousAttempts times.
func TestAlwaysOnSimultaneous(t *testing.T) {
	cases := map[string]struct {
		reason string
		sheet  func(topology.ClientSheet) topology.ClientSheet
		// converges: one IKE SA is left; otherwise at most two, stable.
		converges bool
	}{
		"OnDemandPeer": {
			reason:    "A peer with swanctl's defaults (one keying try, no close_action) keeps the IKE SA it initiated once the gateway closes its own.",
			sheet:     func(s topology.ClientSheet) topology.ClientSheet { return s },
			converges: true,
		},
		"DedupingPeer": {
			reason: "A peer deleting duplicates itself (unique replace, ipsec.conf's default uniqueids=yes) 10 s later finds none: the agent closed the gateway's first, and charon's close_action has nothing to answer.",
			sheet: func(s topology.ClientSheet) topology.ClientSheet {
				s.Unique, s.KeyingTries = "replace", "3"
				return s
			},
			converges: true,
		},
		"AlwaysOnPeer": {
			reason: "A peer that re-creates every IKE SA it is told to delete (close_action start) answers the closing of the gateway's duplicate with one of its own: two are left, and no more come.",
			sheet: func(s topology.ClientSheet) topology.ClientSheet {
				s.KeyingTries, s.CloseAction = "0", "start"
				return s
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// Whether the IKE_SA_INITs cross, and which side's
			// INITIAL_CONTACT drops which IKE SA, is up to the timing of
			// two charons: an attempt that left the agent nothing to close
			// proves nothing of it and is skipped; the case fails unless
			// one of simultaneousAttempts did.
			for i := 1; i <= simultaneousAttempts; i++ {
				crossed := false
				t.Run(fmt.Sprintf("Attempt%d", i), func(t *testing.T) { simultaneous(t, name, tc.reason, tc.sheet, tc.converges, &crossed) })
				if crossed {
					return
				}
			}
			t.Errorf("%s\nno duplicate IKE SA for the agent to close in %d attempts (see each attempt's skip): the test proved nothing", tc.reason, simultaneousAttempts)
		})
	}
}

// simultaneousAttempts is how many times TestAlwaysOnSimultaneous starts
// both sides at the same moment before it gives up on a duplicate IKE SA.
const simultaneousAttempts = 3

// simultaneousWindow is how long TestAlwaysOnSimultaneous samples the
// gateway's IKE SAs once a duplicate arose, and simultaneousQuiet how long
// before the end of that window no new IKE SA may come.
const (
	simultaneousWindow = 30 * time.Second
	simultaneousQuiet  = 15 * time.Second
)

// simultaneous is one attempt of case name of TestAlwaysOnSimultaneous
// (reason, sheet and converges as in its table). It skips t when no
// duplicate IKE SA arose, and sets *crossed when one did, before it
// asserts anything of it.
func simultaneous(t *testing.T, name, reason string, edit func(topology.ClientSheet) topology.ClientSheet, converges bool, crossed *bool) {
	tp := topology.Start(t, topology.Options{})
	p := tp.Peers[0]
	psk := "simultaneous-" + strings.ToLower(name) + "-0123"
	sheet := edit(responderSheet(p, psk, 2))
	sheet.DPDDelay, sheet.DPDAction = "2s", "restart"
	loadSheets(t, tp, sheet)
	// Both sides retransmit every second (topology.RetransmitTimeout);
	// while blocked, every IKE message between them is dropped.
	tp.MustExec(tp.Router, "nft", "add table inet block { chain forward { type filter hook forward priority 0; udp dport { 500, 4500 } drop; }; }")
	logs := tp.Gateway.Events(t, "log")
	spec, child := alwaysOn(t, tp, "simultaneous", 2)
	g := startAgent(t, tp, spec, map[string][]byte{"site": []byte(psk)})
	inStep(t, logs, p)
	time.Sleep(500 * time.Millisecond)
	tp.MustExec(tp.Router, "nft", "delete table inet block")
	opened := time.Now()
	recovered(t, g, tp, child, opened, name+": simultaneous initiation")

	// charon numbers its IKE SAs from 1: the highest unique id seen is
	// how many were made. The gateway's first is the one it initiated
	// while the link was blocked; a second is the peer's, crossed.
	made, counts := 0, map[int]int{}
	var last []topology.IKESA
	var dup duplicateSpan
	sample := func() {
		sas, err := tp.Gateway.ListSAs(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, sa := range sas {
			if id, _ := strconv.Atoi(sa.UniqueID); id > made {
				made = id
			}
		}
		counts[len(sas)]++
		last = sas
		dup.see(sas, child, time.Now())
	}
	for start := time.Now(); made < 2 && time.Since(start) < 5*time.Second; time.Sleep(100 * time.Millisecond) {
		sample()
	}
	if made < 2 {
		t.Skipf("%s: the IKE_SA_INITs did not cross: one IKE SA made, no duplicate to resolve", name)
	}
	*crossed = true
	crossedAt := time.Since(opened)

	sampling := time.Now()
	lastNew, lastMade := sampling, made
	for time.Since(sampling) < simultaneousWindow {
		sample()
		if made > lastMade {
			lastNew, lastMade = time.Now(), made
		}
		time.Sleep(100 * time.Millisecond)
	}
	var desc []string
	for _, sa := range last {
		init := "peer"
		if sa.Initiator == "yes" {
			init = "gateway"
		}
		_, ok := sa.Installed(child)
		desc = append(desc, fmt.Sprintf("#%s %s by the %s, CHILD_SA installed %v", sa.UniqueID, sa.State, init, ok))
	}
	t.Logf("%s: a duplicate %v after the link opened; %d IKE SAs made in all, the last %v into the %v window; left: %s; samples by IKE SA count: %v",
		name, crossedAt.Round(time.Millisecond), made, lastNew.Sub(sampling).Round(time.Millisecond), simultaneousWindow, strings.Join(desc, "; "), counts)
	if since := time.Since(lastNew); since < simultaneousQuiet {
		t.Errorf("%s\na new IKE SA came %v before the end of the window: the gateway and the peer loop", reason, since.Round(time.Millisecond))
	}
	switch {
	case converges && len(last) != 1:
		t.Errorf("%s\n%d IKE SAs are left, want 1", reason, len(last))
	case !converges && len(last) > 2:
		t.Errorf("%s\n%d IKE SAs are left, want at most 2", reason, len(last))
	}
	recovered(t, g, tp, child, time.Now(), name+": at the end")
	switch {
	case strings.Contains(g.logged(), "Closed a duplicate IKE SA"):
	case dup.longest >= duplicateBound:
		t.Errorf("%s\nthe agent closed no duplicate IKE SA although one of the gateway's stood beside an ESTABLISHED one of the peer's for %v (the agent's bound: %v)",
			reason, dup.longest.Round(time.Millisecond), duplicateBound)
	default:
		// The peer's charon dropped the IKE SA it initiated without a
		// word (the gateway's IKE_AUTH carried INITIAL_CONTACT) and the
		// gateway's DPD found it dead before the agent's bound: charon
		// ended the duplicate itself. What is left was asserted above;
		// the agent's part is left to another attempt.
		*crossed = false
		t.Skipf("%s: charon ended the duplicate itself after %v, before the agent's bound of %v: nothing for the agent to close",
			name, dup.longest.Round(time.Millisecond), duplicateBound)
	}
}

// duplicateBound is how long one of the gateway's IKE SAs may stand beside
// an ESTABLISHED one of the peer's carrying the CHILD_SA before the agent
// has closed it: the test's agent reads the status every second, checks
// for duplicates every 2 s at most and closes one seen for 2 s, so 5 s and
// a second's slack.
const duplicateBound = 6 * time.Second

// duplicateSpan follows, sample by sample, the case the agent's watchdog
// closes: one of the gateway's own IKE SAs (ESTABLISHED or CONNECTING)
// beside an ESTABLISHED one of the peer's with the CHILD_SA installed.
// longest is the longest stretch of samples in that case.
type duplicateSpan struct {
	start   time.Time
	longest time.Duration
}

// see takes a sample sas, taken at now, of the gateway's IKE SAs; child is
// the CHILD_SA's name.
func (d *duplicateSpan) see(sas []topology.IKESA, child string, now time.Time) {
	ours, theirs := false, false
	for _, sa := range sas {
		_, installed := sa.Installed(child)
		switch {
		case sa.Initiator == "yes" && (sa.State == "ESTABLISHED" || sa.State == "CONNECTING"):
			ours = true
		case sa.Initiator != "yes" && sa.State == "ESTABLISHED" && installed:
			theirs = true
		}
	}
	if !ours || !theirs {
		d.start = time.Time{}
		return
	}
	if d.start.IsZero() {
		d.start = now
	}
	d.longest = max(d.longest, now.Sub(d.start))
}

// inStep waits for the gateway's charon to retransmit its first
// IKE_SA_INIT (a log event) and at once has peer p initiate too, so that
// both retransmit in step; it fails t after 10 s.
func inStep(t *testing.T, logs <-chan vici.Event, p *topology.Peer) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-logs:
			if m, _ := e.Message.Get("msg").(string); !strings.HasPrefix(m, "retransmit 1 of request with message ID 0") {
				continue
			}
			in := vici.NewMessage()
			for _, kv := range [][2]string{{"ike", "to-provider"}, {"child", "tenant"}, {"timeout", "-1"}} {
				if err := in.Set(kv[0], kv[1]); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := p.Call(context.Background(), "initiate", in); err != nil {
				t.Fatal(err)
			}
			return
		case <-deadline:
			t.Fatal("the gateway's charon did not retransmit its IKE_SA_INIT within 10s")
		}
	}
}
