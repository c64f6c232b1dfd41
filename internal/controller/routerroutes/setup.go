// Package routerroutes runs the RouterRoutes managed resource's controller:
// it keeps a set of extra routes on an existing Neutron router with
// Neutron's atomic add_extraroutes/remove_extraroutes (extension
// extraroute-atomic), so that routes other tools own on the same router
// are never touched.
package routerroutes

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// Setup adds the RouterRoutes controller to mgr, taking Neutron clients
// from clients. It returns an error when a client or the controller cannot
// be built.
//
// The reconciler takes the OpenStack kinds' options (mrsetup): no
// initializer, since Create sets the external name; a deterministic
// external name, which it is here (the router's ID, known before any
// call), and adding a route the router already has is a no-op, so an
// interrupted create is safe to repeat; no creation grace period, since
// Neutron reads its own writes.
func Setup(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.RegisterNeutron(mgr, o, clients, v1alpha1.RouterRoutesGroupKind, v1alpha1.RouterRoutesGroupVersionKind, &v1alpha1.RouterRoutes{}, mrsetup.Tuning{}, nil, NewExternal)
}

// SetupNamespaced adds the controller of the namespaced RouterRoutes
// (networking.m.ipsecgw.io) to mgr: the same external client on the
// namespaced twin (mrsetup.RegisterOpenStackTwin). It returns an error
// when the controller cannot be built.
func SetupNamespaced(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.RegisterOpenStackTwin(mgr, o, clients, nsv1alpha1.RouterRoutesGroupKind, nsv1alpha1.RouterRoutesGroupVersionKind, &nsv1alpha1.RouterRoutes{}, mrsetup.Tuning{}, nil, NewExternal)
}

// SetupGated adds the RouterRoutes controller to mgr as Setup does, once its CRD is
// established (mrsetup.Gated): Crossplane installs the kind inactive until
// a ManagedResourceActivationPolicy activates it. It returns an error when
// o has no gate.
func SetupGated(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.Gated(mgr, o, func() error { return Setup(mgr, o, clients) }, v1alpha1.RouterRoutesGroupVersionKind)
}

// SetupNamespacedGated adds the namespaced RouterRoutes controller to mgr as
// SetupNamespaced does, once its CRD is established (mrsetup.Gated). It
// returns an error when o has no gate.
func SetupNamespacedGated(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.Gated(mgr, o, func() error { return SetupNamespaced(mgr, o, clients) }, nsv1alpha1.RouterRoutesGroupVersionKind)
}
