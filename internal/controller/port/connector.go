package port

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/gophercloud/gophercloud/v2"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// newExternal returns the external client of a Port whose
// ProviderConfig's Neutron client is sc; c gives the time an interrupted
// create needs to settle. mrsetup.NeutronConnector calls it once it has
// tracked the Port's use of its ProviderConfig.
func newExternal(c openstack.Connector, sc *gophercloud.ServiceClient) managed.TypedExternalClient[*v1alpha1.Port] {
	return &external{neutron: sc, settle: c.Clients.Settling(nil)}
}

// NewExternal returns the external client that manages a Port's port
// through the Neutron client sc, as the connector does after resolving the
// ProviderConfig; for tests that drive Observe directly and count its
// requests.
func NewExternal(sc *gophercloud.ServiceClient) managed.TypedExternalClient[*v1alpha1.Port] {
	return &external{neutron: sc}
}
