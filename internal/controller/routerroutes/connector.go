package routerroutes

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/gophercloud/gophercloud/v2"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// NewExternal returns the external client that manages a RouterRoutes' extra routes
// through sc, the Neutron client of its ProviderConfig (its creates make no
// Neutron object, so nothing needs to settle). The connector
// (mrsetup.NeutronConnector) calls it once it has tracked the resource's
// use of its ProviderConfig; tests call it to drive one step and count its
// requests.
func NewExternal(sc *gophercloud.ServiceClient, _ openstack.Settling) managed.TypedExternalClient[*v1alpha1.RouterRoutes] {
	return &external{neutron: sc}
}

// NewConnector returns the connector of RouterRoutes' external clients,
// which Setup gives the reconciler; tests use it to run one Observe on its
// own. Its errors name the ProviderConfig and what failed (reading it, its
// credentials, authenticating to Keystone).
func NewConnector(c openstack.Connector) managed.TypedExternalConnector[*v1alpha1.RouterRoutes] {
	return mrsetup.NeutronConnector(c, NewExternal)
}
