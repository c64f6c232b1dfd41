package securitygroup

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/gophercloud/gophercloud/v2"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// newExternal returns the external client of a SecurityGroup whose
// ProviderConfig's Neutron client is sc; c gives the time an interrupted
// create needs to settle. mrsetup.NeutronConnector calls it once it has
// tracked the SecurityGroup's use of its ProviderConfig.
func newExternal(c openstack.Connector, sc *gophercloud.ServiceClient) managed.TypedExternalClient[*v1alpha1.SecurityGroup] {
	return &external{neutron: sc, settle: c.Clients.Settling(nil)}
}
