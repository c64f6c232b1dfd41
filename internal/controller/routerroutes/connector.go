package routerroutes

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// connector connects a RouterRoutes to the Neutron of its ProviderConfig.
type connector struct {
	openstack.Connector
}

// NewConnector returns the connector of RouterRoutes' external clients,
// which Setup gives the reconciler; tests use it to run one Observe on its
// own.
func NewConnector(c openstack.Connector) managed.TypedExternalConnector[*v1alpha1.RouterRoutes] {
	return &connector{c}
}

// Connect tracks the RouterRoutes' use of its ProviderConfig and returns an
// external client with that ProviderConfig's Neutron client. Errors name
// the ProviderConfig and what failed (reading it, its credentials,
// authenticating to Keystone).
func (c *connector) Connect(ctx context.Context, mg *v1alpha1.RouterRoutes) (managed.TypedExternalClient[*v1alpha1.RouterRoutes], error) {
	sc, err := c.Network(ctx, mg)
	if err != nil {
		return nil, err
	}
	return &external{neutron: sc}, nil
}
