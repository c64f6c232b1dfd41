// Package floatingipbinding runs the FloatingIPBinding managed resource's
// controller: it binds a floating IP to a Neutron port, either a pinned,
// customer-owned floating IP that must already exist (the runbook's
// "EnsureFIP pinning contract") or one it allocates from an external
// network.
package floatingipbinding

import (
	"context"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/gophercloud/gophercloud/v2"

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

// Kind describes the FloatingIPBinding controllers (mrsetup.NeutronKind): the
// cluster-scoped kind and its namespaced twin (networking.m.ipsecgw.io),
// by the same external client, with the OpenStack kinds' reconciler
// options (mrsetup.OpenStackOptions).
var Kind = mrsetup.NeutronKind(&v1alpha1.FloatingIPBinding{}, v1alpha1.FloatingIPBindingGroupVersionKind, &nsv1alpha1.FloatingIPBinding{}, nsv1alpha1.FloatingIPBindingGroupVersionKind,
	tuning, find, NewExternal)

// NewExternal returns the external client that manages a FloatingIPBinding's floating IP
// through sc, the Neutron client of its ProviderConfig; settle says when an
// interrupted create has surely made nothing (openstack.Clients.Settling;
// the zero value never waits, for tests of one reconcile). The connector
// (mrsetup.NeutronConnector) calls it once it has tracked the resource's
// use of its ProviderConfig; tests call it to drive one step and count its
// requests.
func NewExternal(sc *gophercloud.ServiceClient, settle openstack.Settling) managed.TypedExternalClient[*v1alpha1.FloatingIPBinding] {
	return &external{neutron: sc, settle: settle}
}
