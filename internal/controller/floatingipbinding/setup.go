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
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/gophercloud/gophercloud/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// tuning makes a binding look at its floating IP every 10 s (the
// provider's --poll is 1 min) and retry a failing binding after at most
// 10 s (crossplane-runtime's backoff grows to 60 s). The runbook's steps
// are changes made by hand in Neutron: at the cutover a pinned floating IP
// that another port held becomes free, at the rollback it moves back to
// the VM's port. Each shows on the binding, and so on the claim and in
// whether the gateway runs, within 10 s, at the cost of one Neutron GET
// per binding every 10 s.
var tuning = mrsetup.Tuning{PollInterval: 10 * time.Second, MaxRetryBackoff: 10 * time.Second}

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
	return mrsetup.RegisterOpenStack(mgr, o, clients, v1alpha1.FloatingIPBindingGroupKind, v1alpha1.FloatingIPBindingGroupVersionKind, &v1alpha1.FloatingIPBinding{}, tuning, find,
		func(c openstack.Connector) managed.TypedExternalConnector[*v1alpha1.FloatingIPBinding] {
			return &connector{c}
		})
}
