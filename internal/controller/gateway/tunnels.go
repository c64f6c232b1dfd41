package gateway

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// Reasons of the events a Gateway emits when a tunnel changes state.
const (
	reasonTunnelUp          event.Reason = "TunnelUp"
	reasonTunnelDown        event.Reason = "TunnelDown"
	reasonTunnelReinitiated event.Reason = "TunnelReinitiated"
)

// idle returns the tunnel status of a gateway none of whose pods is ready:
// every configured tunnel DOWN, sorted by name as the agent sorts them.
// The agent's last report in the status ConfigMap outlives its pod (a
// rollback scales the Deployment to 0) and would show tunnels up that no
// charon holds any more.
func idle(gw *v1alpha1.Gateway) []v1alpha1.TunnelStatus {
	ts := make([]v1alpha1.TunnelStatus, 0, len(gw.Spec.ForProvider.Tunnels))
	for _, t := range gw.Spec.ForProvider.Tunnels {
		ts = append(ts, v1alpha1.TunnelStatus{Name: t.Name, IKEState: v1alpha1.IKEStateDown})
	}
	slices.SortFunc(ts, func(a, b v1alpha1.TunnelStatus) int { return strings.Compare(a.Name, b.Name) })
	return ts
}

// tunnelsUp summarises ts as "up/configured", up as the agent reports it
// (TunnelStatus.Up: IKE SA ESTABLISHED and every CHILD_SA INSTALLED).
func tunnelsUp(ts []v1alpha1.TunnelStatus, configured int) string {
	up := 0
	for _, t := range ts {
		if t.Up {
			up++
		}
	}
	return fmt.Sprintf("%d/%d", up, configured)
}

// traffic returns the ESP payload bytes in and out, summed over every
// CHILD_SA of ts.
func traffic(ts []v1alpha1.TunnelStatus) (in, out int64) {
	for _, t := range ts {
		for _, c := range t.ChildSAs {
			in += c.BytesIn
			out += c.BytesOut
		}
	}
	return in, out
}

// tunnelEvents returns the events for tunnels whose state changed from old
// to now: TunnelReinitiated (a warning: the tunnel stayed down with charon
// not trying, or its peer stopped answering) when the agent re-initiated
// one since old (a newer
// LastReinitiate), then TunnelUp when one became up (TunnelStatus.Up),
// TunnelDown (a warning, with the IKE state, the CHILD_SAs not installed and
// charon's last error) when one stopped being up or is first seen down with
// an error.
func tunnelEvents(old, now []v1alpha1.TunnelStatus) []event.Event {
	before := map[string]v1alpha1.TunnelStatus{}
	for _, t := range old {
		before[t.Name] = t
	}
	var out []event.Event
	for _, t := range now {
		prev, seen := before[t.Name]
		if r := t.LastReinitiate; r != nil && (prev.LastReinitiate == nil || r.After(prev.LastReinitiate.Time)) {
			out = append(out, event.Warning(reasonTunnelReinitiated, fmt.Errorf( //nolint:staticcheck // ST1005: it starts with the kind's name
				"Tunnel %s stayed down with charon not retrying, or its peer stopped answering: the gateway agent initiated it again at %s (%d time(s) since the agent started)",
				t.Name, r.UTC().Format(time.RFC3339), t.Reinitiations)))
		}
		switch {
		case t.Up && !prev.Up:
			out = append(out, event.Normal(reasonTunnelUp, fmt.Sprintf("Tunnel %s is up: IKE SA %s, %d CHILD_SA(s) installed", t.Name, t.IKEState, len(t.ChildSAs))))
		case !t.Up && (prev.Up || (!seen && t.LastError != "")):
			msg := fmt.Sprintf("Tunnel %s is down: IKE SA %s", t.Name, orNone(t.IKEState))
			switch {
			case t.IKEState != v1alpha1.IKEStateEstablished:
			case allInstalled(t.ChildSAs):
				// The agent's watchdog: an exchange went unanswered.
				msg += " but its peer does not answer"
			default:
				msg += " but not every CHILD_SA is installed"
			}
			if t.LastError != "" {
				msg += ", last error " + t.LastError
			}
			out = append(out, event.Warning(reasonTunnelDown, fmt.Errorf("%s", msg)))
		}
	}
	return out
}

// allInstalled says whether there are CHILD_SAs and all are INSTALLED.
func allInstalled(cs []v1alpha1.ChildSAStatus) bool {
	for _, c := range cs {
		if c.State != "INSTALLED" {
			return false
		}
	}
	return len(cs) > 0
}

func orNone(s string) string {
	if s == "" {
		return v1alpha1.IKEStateDown
	}
	return s
}

// reasonConfigAdvisory is the reason of the Warning event of an advisory.
const reasonConfigAdvisory event.Reason = "ConfigAdvisory"

// advise sets the Gateway's status warnings to advisories (see
// render.Files.Advisories) and emits a Warning event for each one that was not
// there before, so that an advisory is said once, not at every poll.
func advise(r event.Recorder, gw *v1alpha1.Gateway, advisories []string) {
	for _, a := range advisories {
		if !slices.Contains(gw.Status.AtProvider.Warnings, a) {
			r.Event(gw, event.Warning(reasonConfigAdvisory, errors.New(a)))
		}
	}
	gw.Status.AtProvider.Warnings = advisories
}
