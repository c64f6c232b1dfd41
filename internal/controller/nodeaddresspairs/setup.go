// Package nodeaddresspairs runs the NodeAddressPairs managed resource's
// controller: it keeps allowed address pairs for a gateway's address on the
// tenant-network Neutron ports of the nodes that may run the gateway's pod,
// and removes the pairs it added, and only those, when a node no longer
// may (deleted, relabelled) or the resource is deleted.
package nodeaddresspairs

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/cluster"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// Kind describes the NodeAddressPairs controllers: the cluster-scoped
// kind (setup) and its namespaced twin (setupNamespaced).
var Kind = mrsetup.Kind{
	{GVKs: []schema.GroupVersionKind{v1alpha1.NodeAddressPairsGroupVersionKind}, Setup: setup},
	{GVKs: []schema.GroupVersionKind{nsv1alpha1.NodeAddressPairsGroupVersionKind}, Setup: setupNamespaced},
}

// setup adds the NodeAddressPairs controller to mgr, taking Neutron clients
// from d.OpenStack. Nodes are read, uncached, from the cluster the
// ProviderConfig's spec.cluster names (the one the Gateways run in), once
// per reconcile: a node that joins, leaves or changes labels is seen at
// the next poll (--poll). It returns an error when a client or the
// controller cannot be built.
//
// The reconciler takes the OpenStack kinds' options without create
// recovery: the external name is the gateway port's ID, known before any
// call, and adding a pair a port already has is skipped, so an
// interrupted create is simply repeated.
func setup(mgr ctrl.Manager, o controller.Options, d mrsetup.Dependencies) error {
	nodes, err := nodesOf(mgr)
	if err != nil {
		return err
	}
	return mrsetup.RegisterOpenStack(mgr, o, d.OpenStack, v1alpha1.NodeAddressPairsGroupKind, v1alpha1.NodeAddressPairsGroupVersionKind, &v1alpha1.NodeAddressPairs{}, mrsetup.Tuning{}, nil,
		func(c openstack.Connector) managed.TypedExternalConnector[*v1alpha1.NodeAddressPairs] {
			return NewConnector(c, mgr.GetClient(), nodes)
		})
}

// setupNamespaced adds the controller of the namespaced NodeAddressPairs
// (networking.m.ipsecgw.io) to mgr: the same external client on the
// namespaced twin (mrsetup.TwinExternal), whose Nodes are those of the
// cluster its ProviderConfig of its own namespace or its
// ClusterProviderConfig names. It returns an error when a client or the
// controller cannot be built.
func setupNamespaced(mgr ctrl.Manager, o controller.Options, d mrsetup.Dependencies) error {
	nodes, err := nodesOf(mgr)
	if err != nil {
		return err
	}
	return mrsetup.RegisterOpenStack(mgr, o, d.OpenStack, nsv1alpha1.NodeAddressPairsGroupKind, nsv1alpha1.NodeAddressPairsGroupVersionKind, &nsv1alpha1.NodeAddressPairs{}, mrsetup.Tuning{}, nil,
		func(c openstack.Connector) managed.TypedExternalConnector[*nsv1alpha1.NodeAddressPairs] {
			return nsConnector{&connector{Connector: c, status: mgr.GetClient(), nodes: nodes}}
		})
}

// nodesOf returns the readers of the Nodes of the clusters ProviderConfigs
// select: mgr's own cluster uncached, another through a client of its
// kubeconfig with mgr's scheme. It returns an error when the own
// cluster's client cannot be built.
func nodesOf(mgr ctrl.Manager) (*cluster.Targets[client.Reader], error) {
	own, err := mrsetup.UncachedClient(mgr)
	if err != nil {
		return nil, err
	}
	return &cluster.Targets[client.Reader]{Own: own, New: func(cfg *rest.Config) (client.Reader, error) {
		return client.New(cfg, client.Options{Scheme: mgr.GetScheme()})
	}}, nil
}
