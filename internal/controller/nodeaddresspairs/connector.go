package nodeaddresspairs

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/cluster"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// connector connects a NodeAddressPairs to the Neutron of its
// ProviderConfig and to the Nodes of the cluster that ProviderConfig's
// spec.cluster names.
type connector struct {
	openstack.Connector
	// nodes are the readers of the clusters the ProviderConfigs select.
	nodes *cluster.Targets[client.Reader]
	// status saves the resources' status in the provider's cluster.
	status client.StatusClient
}

// NewConnector returns the connector of NodeAddressPairs' external
// clients: Neutron through c, their status saved through status, Nodes
// through the reader nodes gives for the ProviderConfig. Tests use it to
// run one reconcile step on its own.
func NewConnector(c openstack.Connector, status client.StatusClient, nodes *cluster.Targets[client.Reader]) managed.TypedExternalConnector[*v1alpha1.NodeAddressPairs] {
	return &connector{Connector: c, status: status, nodes: nodes}
}

// Connect tracks the resource's use of its ProviderConfig and returns an
// external client with that ProviderConfig's Neutron client and a reader
// of its cluster's Nodes. Errors name the ProviderConfig and what failed.
func (c *connector) Connect(ctx context.Context, mg *v1alpha1.NodeAddressPairs) (managed.TypedExternalClient[*v1alpha1.NodeAddressPairs], error) {
	return c.connect(ctx, mg, c.status)
}

// connect returns the external client of mg, a cluster-scoped
// NodeAddressPairs or its namespaced twin (whose ProviderConfig of its own
// namespace or ClusterProviderConfig names the cluster of the Nodes), which
// saves status through status.
func (c *connector) connect(ctx context.Context, mg resource.Managed, status client.StatusClient) (*external, error) {
	sc, err := c.Network(ctx, mg)
	if err != nil {
		return nil, err
	}
	// Network has checked the reference and read the ProviderConfig: this
	// read is of the same cache.
	cfg, err := openstack.ResolveConfig(ctx, c.Kube, mg)
	if err != nil {
		return nil, err
	}
	nodes, err := c.nodes.Target(ctx, c.Kube, cfg.Name, cfg.Cluster)
	if err != nil {
		return nil, err
	}
	return &external{neutron: sc, nodes: nodes, kube: status}, nil
}

// nsConnector connects a namespaced NodeAddressPairs (its twin's
// external client on it, mrsetup.TwinExternal).
type nsConnector struct{ *connector }

// Connect is connector.Connect for a namespaced NodeAddressPairs: its
// ProviderConfig of its own namespace or its ClusterProviderConfig, and its
// status saved on it.
func (c nsConnector) Connect(ctx context.Context, mg *nsv1alpha1.NodeAddressPairs) (managed.TypedExternalClient[*nsv1alpha1.NodeAddressPairs], error) {
	e, err := c.connect(ctx, mg, mrsetup.TwinStatus[*nsv1alpha1.NodeAddressPairs, *v1alpha1.NodeAddressPairs](c.status, mg))
	if err != nil {
		return nil, err
	}
	return mrsetup.TwinExternal[*nsv1alpha1.NodeAddressPairs, *v1alpha1.NodeAddressPairs](e), nil
}
