// Package routerroutes runs the RouterRoutes managed resource's controller:
// it keeps a set of extra routes on an existing Neutron router with
// Neutron's atomic add_extraroutes/remove_extraroutes (extension
// extraroute-atomic), so that routes other tools own on the same router
// are never touched.
package routerroutes

import (
	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// Kind describes the RouterRoutes controllers (mrsetup.NeutronKind): the
// cluster-scoped kind and its namespaced twin (networking.m.ipsecgw.io),
// by the same external client, with the OpenStack kinds' reconciler
// options (mrsetup.OpenStackOptions).
//
// For this kind those options mean: no
// initializer, since Create sets the external name; a deterministic
// external name, which it is here (the router's ID, known before any
// call), and adding a route the router already has is a no-op, so an
// interrupted create is safe to repeat; no creation grace period, since
// Neutron reads its own writes.
var Kind = mrsetup.NeutronKind(&v1alpha1.RouterRoutes{}, v1alpha1.RouterRoutesGroupVersionKind, &nsv1alpha1.RouterRoutes{}, nsv1alpha1.RouterRoutesGroupVersionKind,
	mrsetup.Tuning{}, nil, NewExternal)
