package nodeaddresspairs

import (
	"context"
	"fmt"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	pcv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/cluster"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// connector connects a NodeAddressPairs to the Neutron of its
// ProviderConfig and to the Nodes of the cluster that ProviderConfig's
// spec.cluster names.
type connector struct {
	openstack.Connector
	// own reads the provider's own cluster (InjectedIdentity) and
	// ownConfig is its REST config.
	own       client.Reader
	ownConfig *rest.Config
	// newClient builds a reader of a cluster a kubeconfig names.
	newClient func(*rest.Config) (client.Reader, error)
	// status saves the resources' status in the provider's cluster.
	status client.StatusClient
}

// NewConnector returns the connector of NodeAddressPairs' external
// clients: Neutron through c, their status saved through status, Nodes through own (InjectedIdentity) or a
// client newClient builds from the kubeconfig Secret of the
// ProviderConfig. Tests use it to run one reconcile step on its own.
func NewConnector(c openstack.Connector, status client.StatusClient, own client.Reader, ownConfig *rest.Config, newClient func(*rest.Config) (client.Reader, error)) managed.TypedExternalConnector[*v1alpha1.NodeAddressPairs] {
	return &connector{Connector: c, status: status, own: own, ownConfig: ownConfig, newClient: newClient}
}

// Connect tracks the resource's use of its ProviderConfig and returns an
// external client with that ProviderConfig's Neutron client and a reader
// of its cluster's Nodes. Errors name the ProviderConfig and what failed.
func (c *connector) Connect(ctx context.Context, mg *v1alpha1.NodeAddressPairs) (managed.TypedExternalClient[*v1alpha1.NodeAddressPairs], error) {
	sc, err := c.Network(ctx, mg)
	if err != nil {
		return nil, err
	}
	// Network has checked the reference and read the ProviderConfig.
	pc := &pcv1alpha1.ProviderConfig{}
	if err := c.Kube.Get(ctx, types.NamespacedName{Name: mg.GetProviderConfigReference().Name}, pc); err != nil {
		return nil, fmt.Errorf("cannot get ProviderConfig %s: %w", mg.GetProviderConfigReference().Name, err)
	}
	nodes, err := cluster.Target(ctx, c.Kube, pc, c.own, c.ownConfig, c.newClient)
	if err != nil {
		return nil, err
	}
	return &external{neutron: sc, nodes: nodes, kube: c.status}, nil
}
