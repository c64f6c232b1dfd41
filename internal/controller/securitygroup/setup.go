// Package securitygroup runs the SecurityGroup managed resource's
// controller: a Neutron security group whose rules are exactly the spec's.
package securitygroup

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// Setup adds the SecurityGroup controller to mgr, authenticating through
// clients. It returns an error when the controller cannot be built.
func Setup(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.RegisterNeutron(mgr, o, clients, v1alpha1.SecurityGroupGroupKind, v1alpha1.SecurityGroupGroupVersionKind, &v1alpha1.SecurityGroup{}, mrsetup.Tuning{}, openstack.ScanFinder(openstack.SecurityGroups), NewExternal)
}

// SetupNamespaced adds the controller of the namespaced SecurityGroup
// (networking.m.ipsecgw.io) to mgr: the same external client on the
// namespaced twin (mrsetup.RegisterOpenStackTwin). It returns an error
// when the controller cannot be built.
func SetupNamespaced(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.RegisterOpenStackTwin(mgr, o, clients, nsv1alpha1.SecurityGroupGroupKind, nsv1alpha1.SecurityGroupGroupVersionKind, &nsv1alpha1.SecurityGroup{}, mrsetup.Tuning{}, openstack.ScanFinder(openstack.SecurityGroups), NewExternal)
}

// SetupGated adds the SecurityGroup controller to mgr as Setup does, once its CRD is
// established (mrsetup.Gated): Crossplane installs the kind inactive until
// a ManagedResourceActivationPolicy activates it. It returns an error when
// o has no gate.
func SetupGated(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.Gated(mgr, o, func() error { return Setup(mgr, o, clients) }, v1alpha1.SecurityGroupGroupVersionKind)
}

// SetupNamespacedGated adds the namespaced SecurityGroup controller to mgr as
// SetupNamespaced does, once its CRD is established (mrsetup.Gated). It
// returns an error when o has no gate.
func SetupNamespacedGated(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	return mrsetup.Gated(mgr, o, func() error { return SetupNamespaced(mgr, o, clients) }, nsv1alpha1.SecurityGroupGroupVersionKind)
}
