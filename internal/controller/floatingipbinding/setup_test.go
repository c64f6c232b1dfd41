package floatingipbinding

import (
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
)

func TestPollInterval(t *testing.T) {
	const poll = time.Minute
	long := metav1.NewTime(time.Now().Add(-time.Hour))
	recent := metav1.NewTime(time.Now().Add(-30 * time.Second))
	conditions := func(ready, synced metav1.Time) func(*v1alpha1.FloatingIPBinding) {
		return func(mg *v1alpha1.FloatingIPBinding) {
			r, s := xpv2.Available(), xpv2.ReconcileSuccess()
			r.LastTransitionTime, s.LastTransitionTime = ready, synced
			mg.SetConditions(r, s)
		}
	}
	attached := func(mg *v1alpha1.FloatingIPBinding) { mg.Status.AtProvider.Attached = true }
	cases := map[string]struct {
		reason string
		mg     *v1alpha1.FloatingIPBinding
		poll   time.Duration
		want   time.Duration
	}{
		"AllocatedAttached": {
			reason: "An allocated binding polls at --poll.",
			mg:     binding(attached, conditions(long, long)),
			poll:   poll, want: poll,
		},
		"AllocatedJustAttached": {
			reason: "An allocated binding polls at --poll even right after it attached: no person is about to move it.",
			mg:     binding(attached, conditions(recent, recent)),
			poll:   poll, want: poll,
		},
		"PinnedStable": {
			reason: "A pinned binding attached for long polls at --poll.",
			mg:     binding(withPinned, attached, conditions(long, long)),
			poll:   poll, want: poll,
		},
		"PinnedJustCutOver": {
			reason: "A pinned binding that attached less than settle ago polls fast: a rollback may follow.",
			mg:     binding(withPinned, attached, conditions(recent, long)),
			poll:   poll, want: fast,
		},
		"PinnedJustSynced": {
			reason: "A change of Synced counts as a change too.",
			mg:     binding(withPinned, attached, conditions(long, recent)),
			poll:   poll, want: fast,
		},
		"PinnedNotAttached": {
			reason: "A pinned binding not attached to its port polls fast: the cutover may come at any moment.",
			mg:     binding(withPinned, conditions(long, long)),
			poll:   poll, want: fast,
		},
		"PinnedNoPort": {
			reason: "A pinned binding that wants no port waits for nothing.",
			mg: binding(withPinned, conditions(long, long), func(mg *v1alpha1.FloatingIPBinding) {
				mg.Spec.ForProvider.PortID = nil
			}),
			poll: poll, want: poll,
		},
		"ShortPoll": {
			reason: "Fast is never slower than --poll.",
			mg:     binding(withPinned, conditions(long, long)),
			poll:   time.Second, want: time.Second,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, pollInterval(tc.mg, tc.poll)); diff != "" {
				t.Errorf("%s\npollInterval(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
