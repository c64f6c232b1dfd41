package floatingipbinding

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/gophercloud/gophercloud/v2"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// newExternal returns the external client of a FloatingIPBinding whose
// ProviderConfig's Neutron client is sc; c gives the time an interrupted
// create needs to settle. mrsetup.NeutronConnector calls it once it has
// tracked the binding's use of its ProviderConfig.
func newExternal(c openstack.Connector, sc *gophercloud.ServiceClient) managed.TypedExternalClient[*v1alpha1.FloatingIPBinding] {
	return &external{neutron: sc, settle: c.Clients.Settling(nil)}
}

// NewExternal returns the external client of FloatingIPBindings that talks
// to Neutron through sc, as the connector does after resolving the
// ProviderConfig; for tests that drive Observe directly and count its
// requests.
func NewExternal(sc *gophercloud.ServiceClient) managed.TypedExternalClient[*v1alpha1.FloatingIPBinding] {
	return &external{neutron: sc}
}
