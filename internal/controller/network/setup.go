// Package network runs the Network managed resource's controller: a
// Neutron network, mostly an existing tenant network imported with
// management policy Observe for Ports to reference by networkIdRef.
package network

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// Setup adds the Network controller to mgr, authenticating through
// clients. It returns an error when the controller cannot be built. The
// reconciler takes the OpenStack kinds' options (mrsetup.OpenStackOptions).
func Setup(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.RegisterNeutron(mgr, o, clients, v1alpha1.NetworkGroupKind, v1alpha1.NetworkGroupVersionKind, &v1alpha1.Network{}, mrsetup.Tuning{}, openstack.ScanFinder(openstack.Networks), NewExternal)
}

// SetupNamespaced adds the controller of the namespaced Network
// (networking.m.ipsecgw.io) to mgr: the same external client on the
// namespaced twin (mrsetup.RegisterOpenStackTwin). It returns an error
// when the controller cannot be built.
func SetupNamespaced(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.RegisterOpenStackTwin(mgr, o, clients, nsv1alpha1.NetworkGroupKind, nsv1alpha1.NetworkGroupVersionKind, &nsv1alpha1.Network{}, mrsetup.Tuning{}, openstack.ScanFinder(openstack.Networks), NewExternal)
}

// SetupGated adds the Network controller to mgr as Setup does, once its CRD is
// established (mrsetup.Gated): Crossplane installs the kind inactive until
// a ManagedResourceActivationPolicy activates it. It returns an error when
// o has no gate.
func SetupGated(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.Gated(mgr, o, func() error { return Setup(mgr, o, clients) }, v1alpha1.NetworkGroupVersionKind)
}

// SetupNamespacedGated adds the namespaced Network controller to mgr as
// SetupNamespaced does, once its CRD is established (mrsetup.Gated). It
// returns an error when o has no gate.
func SetupNamespacedGated(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.Gated(mgr, o, func() error { return SetupNamespaced(mgr, o, clients) }, nsv1alpha1.NetworkGroupVersionKind)
}
