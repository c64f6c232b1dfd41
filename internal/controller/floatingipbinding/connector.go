package floatingipbinding

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/gophercloud/gophercloud/v2"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

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
