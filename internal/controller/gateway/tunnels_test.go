package gateway

import (
	"errors"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

func TestTunnelEvents(t *testing.T) {
	up := v1alpha1.TunnelStatus{Name: "a", IKEState: "ESTABLISHED", ChildSAs: []v1alpha1.ChildSAStatus{{Name: "a-1", State: "INSTALLED"}}, Up: true}
	// Established, but a rekey with a mismatching PFS group lost the CHILD_SA.
	noChild := v1alpha1.TunnelStatus{Name: "a", IKEState: "ESTABLISHED", LastError: "NO_PROPOSAL_CHOSEN"}
	down := v1alpha1.TunnelStatus{Name: "a", IKEState: "DOWN", LastError: "AUTHENTICATION_FAILED"}
	connecting := v1alpha1.TunnelStatus{Name: "a", IKEState: "CONNECTING"}
	cases := map[string]struct {
		reason   string
		old, now []v1alpha1.TunnelStatus
		want     []event.Event
	}{
		"ComesUp": {
			reason: "A tunnel that comes up emits TunnelUp.",
			old:    []v1alpha1.TunnelStatus{connecting}, now: []v1alpha1.TunnelStatus{up},
			want: []event.Event{event.Normal(reasonTunnelUp, "Tunnel a is up: IKE SA ESTABLISHED, 1 CHILD_SA(s) installed")},
		},
		"FirstSeenUp": {
			reason: "A tunnel first reported up emits TunnelUp.",
			now:    []v1alpha1.TunnelStatus{up},
			want:   []event.Event{event.Normal(reasonTunnelUp, "Tunnel a is up: IKE SA ESTABLISHED, 1 CHILD_SA(s) installed")},
		},
		"GoesDown": {
			reason: "A tunnel that was up and is not emits a TunnelDown warning with charon's error.",
			old:    []v1alpha1.TunnelStatus{up}, now: []v1alpha1.TunnelStatus{down},
			want: []event.Event{event.Warning(reasonTunnelDown, errors.New("Tunnel a is down: IKE SA DOWN, last error AUTHENTICATION_FAILED"))},
		},
		"ChildSALost": {
			reason: "A tunnel whose IKE SA stays but whose CHILD_SA is gone is down, and the warning says so.",
			old:    []v1alpha1.TunnelStatus{up}, now: []v1alpha1.TunnelStatus{noChild},
			want: []event.Event{event.Warning(reasonTunnelDown,
				errors.New("Tunnel a is down: IKE SA ESTABLISHED but not every CHILD_SA is installed, last error NO_PROPOSAL_CHOSEN"))},
		},
		"PeerSilent": {
			reason: "A tunnel whose IKE SA and CHILD_SAs stay but whose peer stopped answering (the agent's watchdog) is down, and the warning says why.",
			old:    []v1alpha1.TunnelStatus{up},
			now: []v1alpha1.TunnelStatus{{Name: "a", IKEState: "ESTABLISHED", ChildSAs: up.ChildSAs,
				LastError: "the peer has not answered IKE SA #7 for 10s (a DPD or another exchange): it no longer holds it or cannot be reached"}},
			want: []event.Event{event.Warning(reasonTunnelDown, errors.New(
				"Tunnel a is down: IKE SA ESTABLISHED but its peer does not answer, last error the peer has not answered IKE SA #7 for 10s (a DPD or another exchange): it no longer holds it or cannot be reached"))},
		},
		"FirstSeenFailing": {
			reason: "A tunnel first reported down with an error warns at once.",
			now:    []v1alpha1.TunnelStatus{down},
			want:   []event.Event{event.Warning(reasonTunnelDown, errors.New("Tunnel a is down: IKE SA DOWN, last error AUTHENTICATION_FAILED"))},
		},
		"Steady": {
			reason: "No change, no event.",
			old:    []v1alpha1.TunnelStatus{up}, now: []v1alpha1.TunnelStatus{up},
		},
		"Reinitiated": {
			reason: "A tunnel the agent initiated again warns with when and how often, then its state change follows.",
			old:    []v1alpha1.TunnelStatus{down},
			now: []v1alpha1.TunnelStatus{{Name: "a", IKEState: "CONNECTING", Reinitiations: 2,
				LastReinitiate: &metav1.Time{Time: time.Date(2026, 12, 2, 10, 0, 30, 0, time.UTC)}}},
			want: []event.Event{event.Warning(reasonTunnelReinitiated, errors.New(
				"Tunnel a stayed down with charon not retrying, or its peer stopped answering: the gateway agent initiated it again at 2026-12-02T10:00:30Z (2 time(s) since the agent started)"))},
		},
		"ReinitiatedEarlier": {
			reason: "A re-initiation already reported is not reported again.",
			old: []v1alpha1.TunnelStatus{{Name: "a", IKEState: "CONNECTING", Reinitiations: 1,
				LastReinitiate: &metav1.Time{Time: time.Date(2026, 12, 2, 10, 0, 30, 0, time.UTC)}}},
			now: []v1alpha1.TunnelStatus{{Name: "a", IKEState: "CONNECTING", Reinitiations: 1,
				LastReinitiate: &metav1.Time{Time: time.Date(2026, 12, 2, 10, 0, 30, 0, time.UTC)}}},
		},
		"StillConnecting": {
			reason: "A tunnel still connecting without an error is no news.",
			now:    []v1alpha1.TunnelStatus{connecting},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tunnelEvents(tc.old, tc.now)); diff != "" {
				t.Errorf("%s\ntunnelEvents(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestTunnelsUp(t *testing.T) {
	ts := []v1alpha1.TunnelStatus{{Name: "a", IKEState: "ESTABLISHED", Up: true}, {Name: "b", IKEState: "CONNECTING"},
		{Name: "c", IKEState: "ESTABLISHED"}}
	if got := tunnelsUp(ts, 3); got != "1/3" {
		t.Errorf("tunnelsUp() = %q, want 1/3: only a tunnel that is up counts, not an IKE SA without its CHILD_SAs", got)
	}
}

func TestTraffic(t *testing.T) {
	ts := []v1alpha1.TunnelStatus{
		{Name: "a", ChildSAs: []v1alpha1.ChildSAStatus{{Name: "a-1", BytesIn: 100, BytesOut: 7}, {Name: "a-2", BytesIn: 20, BytesOut: 3}}},
		{Name: "b"},
		{Name: "c", ChildSAs: []v1alpha1.ChildSAStatus{{Name: "c", BytesIn: 1, BytesOut: 1000}}},
	}
	in, out := traffic(ts)
	if diff := cmp.Diff([2]int64{121, 1010}, [2]int64{in, out}); diff != "" {
		t.Errorf("traffic(): -want, +got:\n%s", diff)
	}
}

func TestIdle(t *testing.T) {
	gw := &v1alpha1.Gateway{Spec: v1alpha1.GatewaySpec{ForProvider: v1alpha1.GatewayParameters{GatewayConfig: v1alpha1.GatewayConfig{
		Tunnels: []v1alpha1.Tunnel{{Name: "zurich"}, {Name: "berlin"}},
	}}}}
	want := []v1alpha1.TunnelStatus{{Name: "berlin", IKEState: "DOWN"}, {Name: "zurich", IKEState: "DOWN"}}
	if diff := cmp.Diff(want, idle(gw)); diff != "" {
		t.Errorf("idle(): -want, +got:\n%s", diff)
	}
	if got := tunnelsUp(idle(gw), 2); got != "0/2" {
		t.Errorf("tunnelsUp(idle()) = %q, want 0/2", got)
	}
}

// recorded is an event.Recorder that keeps the events.
type recorded []event.Event

func (r *recorded) Event(_ runtime.Object, e event.Event) { *r = append(*r, e) }

func (r *recorded) WithAnnotations(...string) event.Recorder { return r }

func TestAdvise(t *testing.T) {
	cases := map[string]struct {
		reason     string
		old, now   []string
		wantEvents []event.Event
	}{
		"New": {
			reason:     "Each advisory not in the status yet is said in a Warning event and kept in the status.",
			now:        []string{"a", "b"},
			wantEvents: []event.Event{event.Warning(reasonConfigAdvisory, errors.New("a")), event.Warning(reasonConfigAdvisory, errors.New("b"))},
		},
		"Known": {
			reason: "An advisory already in the status is not said again at the next poll.",
			old:    []string{"a"}, now: []string{"a"},
		},
		"Gone": {
			reason: "Advisories no longer found leave the status without an event.",
			old:    []string{"a"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gw := &v1alpha1.Gateway{}
			gw.Status.AtProvider.Warnings = tc.old
			var r recorded
			advise(&r, gw, tc.now)
			if diff := cmp.Diff(tc.wantEvents, []event.Event(r), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nevents: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.now, gw.Status.AtProvider.Warnings, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nstatus warnings: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
