package port

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/gophercloud/gophercloud/v2"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// connector connects a Port to the Neutron of its ProviderConfig.
type connector struct {
	openstack *openstack.Connector
}

// Connect tracks the Port's use of its ProviderConfig and returns an
// external client with that ProviderConfig's Neutron client. Errors name
// the ProviderConfig and what failed (reading credentials, Keystone,
// the service catalog).
func (c *connector) Connect(ctx context.Context, mg *v1alpha1.Port) (managed.TypedExternalClient[*v1alpha1.Port], error) {
	sc, err := c.openstack.Network(ctx, mg)
	if err != nil {
		return nil, err
	}
	return &external{network: sc, settle: c.openstack.Clients.Settling(nil)}, nil
}

// NewExternal returns the external client that manages a Port's port
// through the Neutron client sc, as Connect does after resolving the
// ProviderConfig; for tests that drive Observe directly and count its
// requests.
func NewExternal(sc *gophercloud.ServiceClient) managed.TypedExternalClient[*v1alpha1.Port] {
	return &external{network: sc}
}
