package openstack

import (
	"context"
	"fmt"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/gophercloud/gophercloud/v2"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
)

// A Connector gives a managed resource the Neutron client of its
// ProviderConfig, recording the use of that ProviderConfig first. The
// OpenStack kinds' connectors embed one.
type Connector struct {
	// Kube reads ProviderConfigs and credential Secrets: in the provider
	// a clients.WatchedSecrets, which watches only the Secrets it reads.
	Kube client.Reader
	// Usage records ProviderConfigUsages.
	Usage resource.LegacyTracker
	// Clients caches authenticated clients per ProviderConfig.
	Clients *Clients
}

// Network tracks mg's use of its ProviderConfig and returns a Neutron
// client for it. Errors name the ProviderConfig and what failed.
func (c *Connector) Network(ctx context.Context, mg resource.LegacyManaged) (*gophercloud.ServiceClient, error) { //nolint:staticcheck // SA1019: the provider's kinds are cluster-scoped (legacy) managed resources
	if err := c.Usage.Track(ctx, mg); err != nil {
		return nil, fmt.Errorf("cannot track ProviderConfig usage: %w", err)
	}
	ref := mg.GetProviderConfigReference()
	if ref == nil {
		return nil, fmt.Errorf("spec.providerConfigRef is not set")
	}
	pc := &v1alpha1.ProviderConfig{}
	if err := c.Kube.Get(ctx, types.NamespacedName{Name: ref.Name}, pc); err != nil {
		return nil, fmt.Errorf("cannot get ProviderConfig %s: %w", ref.Name, err)
	}
	return c.Clients.Network(ctx, c.Kube, pc)
}
