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
