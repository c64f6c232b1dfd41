// Package port runs the Port managed resource's controller: an unbound
// ("VIP-style") Neutron port with fixed IPs, security groups and allowed
// address pairs, whose fixed IP and MAC a gateway pod's secondary interface
// takes.
package port

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// Setup adds the Port controller to mgr, with Neutron clients from
// clients. It returns an error when a client or the controller cannot be
// built.
//
// The reconciler takes the OpenStack kinds' options (mrsetup): no
// initializer, since the external name is the port's UUID that only Create
// knows; crossplane-runtime's create-pending guard, with the recovery that
// finds a port created by a provider that died before recording it by the
// marker in its description (openstack.CreateRecovery); no creation grace
// period, since Neutron reads its own writes.
func Setup(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.RegisterNeutron(mgr, o, clients, v1alpha1.PortGroupKind, v1alpha1.PortGroupVersionKind, &v1alpha1.Port{}, mrsetup.Tuning{}, openstack.ScanFinder(openstack.Ports), NewExternal)
}

// SetupNamespaced adds the controller of the namespaced Port
// (networking.m.ipsecgw.io) to mgr: the same external client on the
// namespaced twin (mrsetup.RegisterOpenStackTwin). It returns an error
// when the controller cannot be built.
func SetupNamespaced(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.RegisterOpenStackTwin(mgr, o, clients, nsv1alpha1.PortGroupKind, nsv1alpha1.PortGroupVersionKind, &nsv1alpha1.Port{}, mrsetup.Tuning{}, openstack.ScanFinder(openstack.Ports), NewExternal)
}

// SetupGated adds the Port controller to mgr as Setup does, once its CRD is
// established (mrsetup.Gated): Crossplane installs the kind inactive until
// a ManagedResourceActivationPolicy activates it. It returns an error when
// o has no gate.
func SetupGated(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.Gated(mgr, o, func() error { return Setup(mgr, o, clients) }, v1alpha1.PortGroupVersionKind)
}

// SetupNamespacedGated adds the namespaced Port controller to mgr as
// SetupNamespaced does, once its CRD is established (mrsetup.Gated). It
// returns an error when o has no gate.
func SetupNamespacedGated(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.Gated(mgr, o, func() error { return SetupNamespaced(mgr, o, clients) }, nsv1alpha1.PortGroupVersionKind)
}
