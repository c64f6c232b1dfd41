// Package controller registers all of provider-ipsec's controllers: one
// list of kinds, each described in its own folder (its setup.go's Kind).
package controller

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ipsecgw/provider-ipsec/internal/controller/floatingipbinding"
	"github.com/ipsecgw/provider-ipsec/internal/controller/gateway"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
	"github.com/ipsecgw/provider-ipsec/internal/controller/network"
	"github.com/ipsecgw/provider-ipsec/internal/controller/nodeaddresspairs"
	"github.com/ipsecgw/provider-ipsec/internal/controller/port"
	"github.com/ipsecgw/provider-ipsec/internal/controller/providerconfig"
	"github.com/ipsecgw/provider-ipsec/internal/controller/routerroutes"
	"github.com/ipsecgw/provider-ipsec/internal/controller/securitygroup"
)

// Dependencies are what the controllers share beyond the manager
// (mrsetup.Dependencies, named here for the provider's main).
type Dependencies = mrsetup.Dependencies

// kinds are every kind of the provider.
var kinds = []mrsetup.Kind{
	providerconfig.Kind,
	gateway.Kind,
	securitygroup.Kind,
	network.Kind,
	port.Kind,
	floatingipbinding.Kind,
	routerroutes.Kind,
	nodeaddresspairs.Kind,
}

// Setup adds every controller of the provider to mgr. It returns the first
// error a controller's setup returns.
func Setup(mgr ctrl.Manager, o controller.Options, d Dependencies) error {
	for _, k := range kinds {
		if err := k.Setup(mgr, o, d); err != nil {
			return err
		}
	}
	return nil
}

// SetupGated adds every controller of the provider to mgr as Setup does,
// each once the CRDs of its kinds are established (crossplane-runtime's
// safe start, o.Gate): with the package's safe-start capability Crossplane
// installs a managed resource kind inactive, with no CRD, until a
// ManagedResourceActivationPolicy activates it, and a controller started
// for a kind without a CRD would fail the provider. The gate learns of
// CRDs from crossplane-runtime's customresourcesgate controller, which the
// caller sets up. It returns the first error a registration returns.
func SetupGated(mgr ctrl.Manager, o controller.Options, d Dependencies) error {
	for _, k := range kinds {
		if err := k.SetupGated(mgr, o, d); err != nil {
			return err
		}
	}
	return nil
}
