package floatingipbinding

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/gophercloud/gophercloud/v2"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// connector connects a FloatingIPBinding to the Neutron of its
// ProviderConfig.
type connector struct {
	openstack.Connector
}

// Connect tracks the binding's use of its ProviderConfig and returns an
// external client for its Neutron. Errors name the ProviderConfig.
func (c *connector) Connect(ctx context.Context, mg *v1alpha1.FloatingIPBinding) (managed.TypedExternalClient[*v1alpha1.FloatingIPBinding], error) {
	sc, err := c.Network(ctx, mg)
	if err != nil {
		return nil, err
	}
	return &external{neutron: sc, settle: c.Clients.Settling(nil)}, nil
}

// NewExternal returns the external client of FloatingIPBindings that talks
// to Neutron through sc, for callers that already hold a Neutron client
// (the controller's connector, and tests that count its requests).
func NewExternal(sc *gophercloud.ServiceClient) managed.TypedExternalClient[*v1alpha1.FloatingIPBinding] {
	return &external{neutron: sc}
}
