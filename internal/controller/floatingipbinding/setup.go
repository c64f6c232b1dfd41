// Package floatingipbinding runs the FloatingIPBinding managed resource's
// controller: it binds a floating IP to a Neutron port, either a pinned,
// customer-owned floating IP that must already exist (the runbook's
// "EnsureFIP pinning contract") or one it allocates from an external
// network.
package floatingipbinding

import (
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// MaxRetryBackoff caps the wait between retries of a binding that fails,
// 10 s instead of crossplane-runtime's 60 s. A pinned floating IP still held
// by another port (the runbook's pre-stage) fails until the cutover frees
// it; the binding then attaches it within this time without a nudge, at
// the cost of one Neutron GET per binding every 10 s while pre-staged.
const MaxRetryBackoff = 10 * time.Second

// Setup adds the FloatingIPBinding controller to mgr, with Neutron clients
// from clients and the OpenStack kinds' reconciler options (mrsetup). It
// returns an error when a client or the controller cannot be built.
func Setup(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.RegisterOpenStack(mgr, o, clients, v1alpha1.FloatingIPBindingGroupKind, v1alpha1.FloatingIPBindingGroupVersionKind, &v1alpha1.FloatingIPBinding{}, MaxRetryBackoff,
		func(c openstack.Connector) managed.TypedExternalConnector[*v1alpha1.FloatingIPBinding] {
			return &connector{c}
		})
}
