// Package nodeaddresspairs runs the NodeAddressPairs managed resource's
// controller: it keeps allowed address pairs for a gateway's address on the
// tenant-network Neutron ports of the nodes that may run the gateway's pod,
// and removes the pairs it added, and only those, when a node no longer
// may (deleted, relabelled) or the resource is deleted.
package nodeaddresspairs

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// Setup adds the NodeAddressPairs controller to mgr, taking Neutron clients
// from clients. Nodes are read, uncached, from the cluster the
// ProviderConfig's spec.cluster names (the one the Gateways run in), once
// per reconcile: a node that joins, leaves or changes labels is seen at
// the next poll (--poll). It returns an error when a client or the
// controller cannot be built.
//
// The reconciler takes the OpenStack kinds' options without create
// recovery: the external name is the gateway port's ID, known before any
// call, and adding a pair a port already has is skipped, so an
// interrupted create is simply repeated.
func Setup(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	own, err := mrsetup.UncachedClient(mgr)
	if err != nil {
		return err
	}
	return mrsetup.RegisterOpenStack(mgr, o, clients, v1alpha1.NodeAddressPairsGroupKind, v1alpha1.NodeAddressPairsGroupVersionKind, &v1alpha1.NodeAddressPairs{}, mrsetup.Tuning{}, nil,
		func(c openstack.Connector) managed.TypedExternalConnector[*v1alpha1.NodeAddressPairs] {
			return NewConnector(c, mgr.GetClient(), own, mgr.GetConfig(), readerOf(mgr))
		})
}

// SetupNamespaced adds the controller of the namespaced NodeAddressPairs
// (networking.m.ipsecgw.io) to mgr: the same external client on the
// namespaced twin (mrsetup.TwinExternal), whose Nodes are those of the
// cluster its ProviderConfig of its own namespace or its
// ClusterProviderConfig names. It returns an error when a client or the
// controller cannot be built.
func SetupNamespaced(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	own, err := mrsetup.UncachedClient(mgr)
	if err != nil {
		return err
	}
	return mrsetup.RegisterOpenStack(mgr, o, clients, nsv1alpha1.NodeAddressPairsGroupKind, nsv1alpha1.NodeAddressPairsGroupVersionKind, &nsv1alpha1.NodeAddressPairs{}, mrsetup.Tuning{}, nil,
		func(c openstack.Connector) managed.TypedExternalConnector[*nsv1alpha1.NodeAddressPairs] {
			return nsConnector{&connector{Connector: c, status: mgr.GetClient(), own: own, ownConfig: mgr.GetConfig(), newClient: readerOf(mgr)}}
		})
}

// readerOf returns the builder of readers of the clusters kubeconfigs
// name, with mgr's scheme.
func readerOf(mgr ctrl.Manager) func(*rest.Config) (client.Reader, error) {
	return func(cfg *rest.Config) (client.Reader, error) {
		return client.New(cfg, client.Options{Scheme: mgr.GetScheme()})
	}
}

// SetupGated adds the NodeAddressPairs controller to mgr as Setup does, once its CRD is
// established (mrsetup.Gated): Crossplane installs the kind inactive until
// a ManagedResourceActivationPolicy activates it. It returns an error when
// o has no gate.
func SetupGated(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.Gated(mgr, o, func() error { return Setup(mgr, o, clients) }, v1alpha1.NodeAddressPairsGroupVersionKind)
}

// SetupNamespacedGated adds the namespaced NodeAddressPairs controller to mgr as
// SetupNamespaced does, once its CRD is established (mrsetup.Gated). It
// returns an error when o has no gate.
func SetupNamespacedGated(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.Gated(mgr, o, func() error { return SetupNamespaced(mgr, o, clients) }, nsv1alpha1.NodeAddressPairsGroupVersionKind)
}
