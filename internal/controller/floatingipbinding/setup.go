// Package floatingipbinding runs the FloatingIPBinding managed resource's
// controller: it binds a floating IP to a Neutron port, either a pinned,
// customer-owned floating IP that must already exist (the runbook's
// "EnsureFIP pinning contract") or one it allocates from an external
// network.
package floatingipbinding

import (
	"context"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/gophercloud/gophercloud/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// A binding looks at its floating IP fast only while a person is about to
// change it by hand in Neutron, as the runbook's steps do: a pinned
// binding whose floating IP another port still holds (the pre-stage:
// the cutover makes it free) retries within fast however often it
// failed, and a pinned binding keeps polling every fast for settle after
// its state changed (attached or not: the cutover, a rollback). Either
// shows within fast on the binding, and so on the claim and in whether the
// gateway runs, at one Neutron GET per fast. Otherwise, attached and
// stable or allocated from a pool, a binding polls at the provider's
// --poll like every kind, one GET per poll. fast is 6 s, not 10 s, so that
// the cutover shows within 10 s also when the reconcile's GET and PUT take
// a second or more on a loaded Neutron (9.3 s was measured with 8 s).
const (
	fast   = 6 * time.Second
	settle = 2 * time.Minute
)

var tuning = mrsetup.Tuning{Poll: pollInterval}

// pollInterval is the poll interval of mg after a successful reconcile,
// given the provider's poll: fast (at most poll) while a pinned binding
// is not attached to the port it wants, or its Ready or Synced condition
// changed less than settle ago; poll otherwise.
func pollInterval(mg resource.Managed, poll time.Duration) time.Duration {
	b, ok := mg.(*v1alpha1.FloatingIPBinding)
	if !ok || !pinned(b) {
		return poll
	}
	waiting := b.Spec.ForProvider.PortID != nil && !b.Status.AtProvider.Attached
	changed := latest(b.GetCondition(xpv2.TypeReady).LastTransitionTime.Time, b.GetCondition(xpv2.TypeSynced).LastTransitionTime.Time)
	if waiting || time.Since(changed) < settle {
		return min(fast, poll)
	}
	return poll
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// find is the FloatingIPBinding's openstack.Finder: an allocated binding's
// create is a POST whose description carries the binding's marker; a
// pinned binding's creates nothing (it associates an existing floating IP,
// which a repeated create does again), so there is never an object to
// find and an interrupted create is simply repeated.
func find(ctx context.Context, sc *gophercloud.ServiceClient, mg resource.Managed) (string, bool, error) {
	if b, ok := mg.(*v1alpha1.FloatingIPBinding); ok && pinned(b) {
		return "", true, nil
	}
	return openstack.ScanCreated(ctx, sc, openstack.FloatingIPs, mg)
}

// Setup adds the FloatingIPBinding controller to mgr, with Neutron clients
// from clients and the OpenStack kinds' reconciler options (mrsetup). It
// returns an error when a client or the controller cannot be built.
func Setup(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.RegisterNeutron(mgr, o, clients, v1alpha1.FloatingIPBindingGroupKind, v1alpha1.FloatingIPBindingGroupVersionKind, &v1alpha1.FloatingIPBinding{}, tuning, find, NewExternal)
}

// SetupNamespaced adds the controller of the namespaced FloatingIPBinding
// (networking.m.ipsecgw.io) to mgr: the same external client, poll
// interval and lookup on the namespaced twin (mrsetup.RegisterOpenStackTwin).
// It returns an error when the controller cannot be built.
func SetupNamespaced(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.RegisterOpenStackTwin(mgr, o, clients, nsv1alpha1.FloatingIPBindingGroupKind, nsv1alpha1.FloatingIPBindingGroupVersionKind, &nsv1alpha1.FloatingIPBinding{}, tuning, find, NewExternal)
}

// SetupGated adds the FloatingIPBinding controller to mgr as Setup does, once its CRD is
// established (mrsetup.Gated): Crossplane installs the kind inactive until
// a ManagedResourceActivationPolicy activates it. It returns an error when
// o has no gate.
func SetupGated(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.Gated(mgr, o, func() error { return Setup(mgr, o, clients) }, v1alpha1.FloatingIPBindingGroupVersionKind)
}

// SetupNamespacedGated adds the namespaced FloatingIPBinding controller to mgr as
// SetupNamespaced does, once its CRD is established (mrsetup.Gated). It
// returns an error when o has no gate.
func SetupNamespacedGated(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.Gated(mgr, o, func() error { return SetupNamespaced(mgr, o, clients) }, nsv1alpha1.FloatingIPBindingGroupVersionKind)
}
