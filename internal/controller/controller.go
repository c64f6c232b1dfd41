// Package controller registers all of provider-ipsec's controllers, one
// setup function per kind, each in its own folder.
package controller

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/floatingipbinding"
	"github.com/ipsecgw/provider-ipsec/internal/controller/gateway"
	"github.com/ipsecgw/provider-ipsec/internal/controller/network"
	"github.com/ipsecgw/provider-ipsec/internal/controller/nodeaddresspairs"
	"github.com/ipsecgw/provider-ipsec/internal/controller/port"
	"github.com/ipsecgw/provider-ipsec/internal/controller/providerconfig"
	"github.com/ipsecgw/provider-ipsec/internal/controller/routerroutes"
	"github.com/ipsecgw/provider-ipsec/internal/controller/securitygroup"
)

// Dependencies are what the controllers share beyond the manager.
type Dependencies struct {
	// OpenStack caches authenticated OpenStack clients per ProviderConfig
	// for the OpenStack kinds.
	OpenStack *openstack.Clients
	// GatewayImage is the image of a Gateway that names none
	// (spec.forProvider.images); empty: gateway.DefaultImage.
	GatewayImage string
}

// Setup adds every controller of the provider to mgr. It returns the first
// error a controller's setup returns.
func Setup(mgr ctrl.Manager, o controller.Options, d Dependencies) error {
	if err := providerconfig.Setup(mgr, o); err != nil {
		return err
	}
	for _, setup := range []func(ctrl.Manager, controller.Options, string) error{gateway.Setup, gateway.SetupNamespaced} {
		if err := setup(mgr, o, d.GatewayImage); err != nil {
			return err
		}
	}
	for _, setup := range []func(ctrl.Manager, controller.Options, *openstack.Clients) error{
		securitygroup.Setup, network.Setup, port.Setup, floatingipbinding.Setup, routerroutes.Setup, nodeaddresspairs.Setup,
		// The namespaced twins (networking.m.ipsecgw.io), by the same
		// external clients.
		securitygroup.SetupNamespaced, network.SetupNamespaced, port.SetupNamespaced, floatingipbinding.SetupNamespaced, routerroutes.SetupNamespaced,
		nodeaddresspairs.SetupNamespaced,
	} {
		if err := setup(mgr, o, d.OpenStack); err != nil {
			return err
		}
	}
	return nil
}

// SetupGated adds every controller of the provider to mgr as Setup does,
// each once the CRD of its kind is established (crossplane-runtime's safe
// start, o.Gate): with the package's safe-start capability Crossplane
// installs a managed resource kind inactive, with no CRD, until a
// ManagedResourceActivationPolicy activates it, and a controller started
// for a kind without a CRD would fail the provider. The gate learns of
// CRDs from crossplane-runtime's customresourcesgate controller, which the
// caller sets up. It returns the first error a registration returns.
func SetupGated(mgr ctrl.Manager, o controller.Options, d Dependencies) error {
	if err := providerconfig.SetupGated(mgr, o); err != nil {
		return err
	}
	for _, setup := range []func(ctrl.Manager, controller.Options, string) error{gateway.SetupGated, gateway.SetupNamespacedGated} {
		if err := setup(mgr, o, d.GatewayImage); err != nil {
			return err
		}
	}
	for _, setup := range []func(ctrl.Manager, controller.Options, *openstack.Clients) error{
		securitygroup.SetupGated, network.SetupGated, port.SetupGated, floatingipbinding.SetupGated, routerroutes.SetupGated, nodeaddresspairs.SetupGated,
		securitygroup.SetupNamespacedGated, network.SetupNamespacedGated, port.SetupNamespacedGated, floatingipbinding.SetupNamespacedGated,
		routerroutes.SetupNamespacedGated, nodeaddresspairs.SetupNamespacedGated,
	} {
		if err := setup(mgr, o, d.OpenStack); err != nil {
			return err
		}
	}
	return nil
}
