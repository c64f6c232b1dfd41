package routerroutes

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/gophercloud/gophercloud/v2"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// newExternal returns the external client of a RouterRoutes whose
// ProviderConfig's Neutron client is sc. mrsetup.NeutronConnector calls
// it once it has tracked the RouterRoutes' use of its ProviderConfig.
func newExternal(_ openstack.Connector, sc *gophercloud.ServiceClient) managed.TypedExternalClient[*v1alpha1.RouterRoutes] {
	return &external{neutron: sc}
}

// NewConnector returns the connector of RouterRoutes' external clients,
// which Setup gives the reconciler; tests use it to run one Observe on its
// own. Its errors name the ProviderConfig and what failed (reading it, its
// credentials, authenticating to Keystone).
func NewConnector(c openstack.Connector) managed.TypedExternalConnector[*v1alpha1.RouterRoutes] {
	return mrsetup.NeutronConnector(c, newExternal)
}
