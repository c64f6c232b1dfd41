//go:build integration

package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	agentrun "github.com/ipsecgw/provider-ipsec/internal/agent/run"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// Timings of TestAgentSilentPeer: the gateway's DPD delay, the agent's
// bound on an unanswered exchange (scaled down as TestAgentWatchdog scales
// the re-initiation bound; 10 s by default), and how long the gateway is
// away: far longer than the peer's DPD needs to drop its side (DPD every
// 2 or 3 s, its requests given up after 3 s).
const (
	silentDPD     = 10 * time.Second
	silentBound   = 3 * time.Second
	silentAbsence = 25 * time.Second
	// silentLate is how late after silentBound the published status may
	// still say up: the agent's listings every quarter of the bound, its
	// status read and the publisher's least interval, with margin for a
	// busy machine.
	silentLate = 3 * time.Second
)

// A statusSample is what the agent's published status said of tunnel site
// at one moment.
type statusSample struct {
	at          time.Time
	up          bool
	established time.Time
}

// recordStatus reads the agent's published status of tunnel site every
// 100 ms until the returned function is called, which returns the samples.
func recordStatus(g *agentGateway) func() []statusSample {
	var (
		mu      sync.Mutex
		samples []statusSample
	)
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			data, err := g.statusData()
			var ts []v1alpha1.TunnelStatus
			if err != nil || json.Unmarshal([]byte(data), &ts) != nil {
				continue
			}
			for _, s := range ts {
				if s.Name != "site" {
					continue
				}
				sample := statusSample{at: time.Now(), up: s.Up}
				if s.EstablishedAt != nil {
					sample.established = s.EstablishedAt.Time
				}
				mu.Lock()
				samples = append(samples, sample)
				mu.Unlock()
			}
		}
	}()
	return func() []statusSample {
		close(done)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return samples
	}
}

// loseGateway does to the topology's gateway what cluster/node/node.sh
// lose does to a node: its link goes down (the router's end, so that the
// gateway's net1 loses its carrier as a pod's macvlan does when the node's
// eth1 goes down) and, with freeze, its charon stops (SIGSTOP, as the
// cgroup freezer; the agent, in the test process, runs on). The returned
// function brings it back in node.sh return's order, thawed and then the
// link up, and returns when; a cleanup does it too if the test ends first.
func loseGateway(t *testing.T, tp *topology.Topology, freeze bool) func() time.Time {
	t.Helper()
	pid := tp.Gateway.Pid()
	tp.MustExec(tp.Router, "ip", "link", "set", "gw", "down")
	if freeze {
		if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	var once sync.Once
	var back time.Time
	ret := func() time.Time {
		once.Do(func() {
			if freeze {
				_ = syscall.Kill(-pid, syscall.SIGCONT)
			}
			_, _ = tp.Exec(tp.Router, "ip", "link", "set", "gw", "up")
			back = time.Now()
		})
		return back
	}
	t.Cleanup(func() { ret() })
	return ret
}

// TestAgentSilentPeer takes the gateway away from its peer for
// silentAbsence, longer than the peer's DPD needs to drop its IKE SA, and
// brings it back, with the gateway's charon retransmitting as strongSwan
// does by default (the pod's: 165 s until it gives an unanswered DPD up).
// That charon keeps its IKE SA ESTABLISHED the whole time and, once back,
// retransmits its DPD into an IKE SA the peer no longer holds: the agent
// must report the tunnel down once an exchange has gone unanswered for its
// bound, and initiate it anew, so that it is back within the DPD delay
// after the return.
//
//   - NodeLost: the gateway's link down and its charon frozen, as
//     node.sh lose does (issue 29, item 6); the peer only responds and its
//     DPD (action clear) dropped the IKE SA, so nothing but the gateway
//     brings the tunnel back. Before, the status said up with the old IKE
//     SA and nothing passed until charon gave up 165 s after its DPD.
//   - CutOff: only the link down, charon running; the peer is the lab's
//     client site (always on, DPD restart). Before, the status said up
//     with the old IKE SA all the while the gateway was cut off.
func TestAgentSilentPeer(t *testing.T) {
	cases := map[string]struct {
		reason string
		freeze bool
		sheet  func(topology.ClientSheet) topology.ClientSheet
	}{
		"NodeLost": {
			reason: "A gateway back from a frozen node finds its IKE SA as it left it while the peer dropped its side: the unanswered DPD is found within the bound, the IKE SA closed and the tunnel initiated anew.",
			freeze: true,
			sheet: func(s topology.ClientSheet) topology.ClientSheet {
				s.DPDDelay, s.DPDAction = "2s", "clear"
				return s
			},
		},
		"CutOff": {
			reason: "A gateway cut off from its peer reports the tunnel down while its DPD goes unanswered, and is back within the DPD delay after the path returns.",
			sheet: func(s topology.ClientSheet) topology.ClientSheet {
				s.StartAction, s.DPDDelay, s.DPDAction, s.KeyingTries, s.CloseAction = "start", "3s", "restart", "0", "start"
				return s
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tp := topology.Start(t, topology.Options{})
			tp.Gateway.Conf = topology.DefaultRetransmissionConf
			tp.Gateway.Restart(t)
			psk := "silent-peer-0123456789"
			p := tp.Peers[0]
			loadSheets(t, tp, tc.sheet(responderSheet(p, psk, 2)))
			spec, child := alwaysOn(t, tp, "silent-"+map[bool]string{true: "frozen", false: "cut"}[tc.freeze], 2)
			spec.Tunnels[0].DPD.Delay = ptr.To(v1alpha1.Duration(silentDPD.String()))
			g := startAgent(t, tp, spec, map[string][]byte{"site": []byte(psk)}, func(o *agentrun.Options) { o.UnansweredAfter = silentBound })
			recovered(t, g, tp, child, time.Now(), name+": first establishment")
			old := siteStatus(t, g).EstablishedAt.Time

			stop := recordStatus(g)
			lost := time.Now()
			back := loseGateway(t, tp, tc.freeze)
			time.Sleep(silentAbsence)
			if sas, err := p.ListSAs(t.Context()); err != nil {
				t.Fatal(err)
			} else {
				for _, sa := range sas {
					if sa.State == "ESTABLISHED" {
						t.Fatalf("%s\nthe peer still holds IKE SA #%s after %v: the test proves nothing", tc.reason, sa.UniqueID, silentAbsence)
					}
				}
			}
			returned := back()

			var statusUp, pinged time.Duration
			eventually(t, silentDPD, name+": a new IKE SA up in the status and a ping through it within the DPD delay after the return", func() error {
				st := siteStatus(t, g)
				if !st.Up || st.EstablishedAt == nil || !st.EstablishedAt.After(old) {
					return fmt.Errorf("status: up %v, IKE SA established %v (the old one %v)", st.Up, st.EstablishedAt, old)
				}
				if statusUp == 0 {
					statusUp = time.Since(returned)
				}
				r, err := tp.Ping(p.HostNS, topology.Service, 1, time.Second)
				if err != nil {
					return err
				}
				if r.Received != 1 {
					return errors.New("no echo reply through the tunnel")
				}
				pinged = time.Since(returned)
				return nil
			})
			samples := stop()

			// The status must not say up for the old IKE SA once the agent
			// could know: while cut off, once the DPD (sent a DPD delay
			// after the last packet from the peer) has gone unanswered for a
			// fifth of the bound; once back, from the bound after the return
			// (the agent's sessions to the frozen charon timed out: it
			// connects again and reloads first).
			var from time.Time
			if tc.freeze {
				from = returned.Add(silentBound + silentLate)
			} else {
				from = lost.Add(silentDPD + silentBound/5 + silentLate)
			}
			var lastOldUp, firstDown time.Time
			n := 0
			for _, s := range samples {
				if s.up && s.established.Equal(old) {
					lastOldUp = s.at
				}
				if !s.up && firstDown.IsZero() {
					firstDown = s.at
				}
				if s.at.After(from) && s.at.Before(returned) {
					n++
				}
			}
			t.Logf("%s: away %v; status down %v after the loss, the old IKE SA last up %v after the return; a new IKE SA up %v and a ping through %v after the return",
				name, silentAbsence, since(lost, firstDown), since(returned, lastOldUp), statusUp.Round(time.Millisecond), pinged.Round(time.Millisecond))
			if lastOldUp.After(from) {
				t.Errorf("%s\nthe status said the old IKE SA was up %v after the loss (%v after the return), want not after %v",
					tc.reason, lastOldUp.Sub(lost).Round(time.Millisecond), lastOldUp.Sub(returned).Round(time.Millisecond), from.Sub(lost).Round(time.Millisecond))
			}
			if !tc.freeze && n == 0 {
				t.Errorf("%s\nno status read while the gateway was cut off: the test proves nothing", tc.reason)
			}
		})
	}
}

// since is how long after a b was, rounded; "never" when b is zero.
func since(a, b time.Time) string {
	if b.IsZero() {
		return "never"
	}
	return b.Sub(a).Round(time.Millisecond).String()
}
