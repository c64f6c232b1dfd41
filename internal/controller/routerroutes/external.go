package routerroutes

import (
	"context"
	"fmt"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// Error messages; %s are routes (describe), Neutron router IDs and a
// route's index and destination in the spec.
const (
	errAddRoutes     = "cannot add extra routes %s to Neutron router %s"
	errRemoveRoutes  = "cannot remove extra routes %s from Neutron router %s"
	errRouterChanged = "cannot move routes between routers: spec.forProvider.routerId changed from %s to %s; set it back, or delete this resource (which removes its routes from %s) and create a new one"
	errNoNexthop     = "cannot route spec.forProvider.routes[%d] (%s): it has no nexthop and spec.forProvider.nexthop is not set (is the nexthopPortRef resolved?)"
)

// external manages a RouterRoutes' extra routes with one Neutron client.
//
// The routes of a router are a list inside the router, not objects with IDs
// or tags. This resource owns the routes of its spec and, to notice a route
// dropped from the spec, the routes recorded in status.atProvider.routes at
// its last observation. It changes a router's routes only with Neutron's
// atomic add_extraroutes and remove_extraroutes of the extraroute-atomic
// extension (https://docs.openstack.org/api-ref/network/v2/#add-extra-routes-to-router),
// never by a PUT of the router's whole list, so that routes other tools add
// to the same router at the same time are neither lost nor touched.
//
// Crash safety needs no tag: the external name (the router's ID) is known
// before any call, and adding a route the router already has is a no-op in
// Neutron, so a create that the provider did not live to record is simply
// done again.
type external struct {
	neutron *gophercloud.ServiceClient
}

// routerOf returns the router whose routes mg manages: its external name,
// or "" while Create has not run. Setup runs no initializer; should one
// (crossplane-runtime's default) set the external name to metadata.name,
// that placeholder, unless it happens to be the router's ID, means "not
// created" too.
func routerOf(mg *v1alpha1.RouterRoutes) string {
	en := meta.GetExternalName(mg)
	if en == mg.GetName() && en != string(mg.Spec.ForProvider.RouterID) {
		return ""
	}
	return en
}

// Observe reads the router with one GET. The resource exists once Create
// has set the external name and the router exists (a router that is gone,
// 404, means not exists); while it is being deleted, only as long as one of
// its routes is still on the router. It is up to date when every desired
// route is present and no route it owned and the spec dropped remains.
// status.atProvider.routes lists its routes present on the router, and
// Ready is True when no desired route is missing.
func (e *external) Observe(ctx context.Context, mg *v1alpha1.RouterRoutes) (managed.ExternalObservation, error) {
	id := routerOf(mg)
	if id == "" {
		return managed.ExternalObservation{}, nil
	}
	deleting := meta.WasDeleted(mg)
	if want := string(mg.Spec.ForProvider.RouterID); id != want && !deleting {
		return managed.ExternalObservation{}, fmt.Errorf(errRouterChanged, id, want, id)
	}
	desired, err := desiredRoutes(mg.Spec.ForProvider)
	if err != nil && !deleting {
		return managed.ExternalObservation{}, err
	}
	r := &routers.Router{}
	found, err := openstack.Get(ctx, e.neutron, openstack.Routers, id, r)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	if !found {
		// A router that is gone took its routes with it.
		mg.Status.AtProvider = v1alpha1.RouterRoutesObservation{}
		return managed.ExternalObservation{}, nil
	}
	ours, missing, stale := classify(desired, owned(mg.Status.AtProvider.Routes), r.Routes)
	mg.Status.AtProvider = v1alpha1.RouterRoutesObservation{Routes: observed(ours), RevisionNumber: r.RevisionNumber}
	if deleting {
		return managed.ExternalObservation{ResourceExists: len(ours) > 0, ResourceUpToDate: true}, nil
	}
	if len(missing) == 0 {
		mg.SetConditions(xpv2.Available())
	} else {
		mg.SetConditions(xpv2.Unavailable().WithMessage("routes missing on router " + id + ": " + describe(missing)))
	}
	o := managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: len(missing) == 0 && len(stale) == 0}
	if len(missing) > 0 {
		o.Diff = "missing: " + describe(missing)
	}
	if len(stale) > 0 {
		if o.Diff != "" {
			o.Diff += "; "
		}
		o.Diff += "no longer in spec: " + describe(stale)
	}
	return o, nil
}

// Create sets the external name to the router's ID and adds every desired
// route with one add_extraroutes; routes the router already has stay as
// they are.
func (e *external) Create(ctx context.Context, mg *v1alpha1.RouterRoutes) (managed.ExternalCreation, error) {
	desired, err := desiredRoutes(mg.Spec.ForProvider)
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	id := string(mg.Spec.ForProvider.RouterID)
	meta.SetExternalName(mg, id)
	return managed.ExternalCreation{}, e.add(ctx, mg, id, desired, desired)
}

// Update adds the desired routes missing from status.atProvider.routes
// with one add_extraroutes, then removes the routes it owned that the spec
// no longer asks for with one remove_extraroutes: a route whose nexthop
// changed is added under its new nexthop before the old one goes.
func (e *external) Update(ctx context.Context, mg *v1alpha1.RouterRoutes) (managed.ExternalUpdate, error) {
	desired, err := desiredRoutes(mg.Spec.ForProvider)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	id := routerOf(mg)
	ours := owned(mg.Status.AtProvider.Routes)
	_, missing, stale := classify(desired, ours, ours)
	if len(missing) > 0 {
		if err := e.add(ctx, mg, id, desired, missing); err != nil {
			return managed.ExternalUpdate{}, err
		}
	}
	if len(stale) > 0 {
		r, err := extraroutes.Remove(ctx, e.neutron, id, extraroutes.Opts{Routes: &stale}).Extract()
		if err != nil {
			return managed.ExternalUpdate{}, openstack.Wrap(err, fmt.Sprintf(errRemoveRoutes, describe(stale), id))
		}
		record(mg, desired, r)
	}
	return managed.ExternalUpdate{}, nil
}

// Delete removes this resource's routes (status.atProvider.routes of the
// observation just made) with one remove_extraroutes. A route another tool
// added with the same destination and another nexthop is not ours and
// stays. A router that is gone has no routes left to remove.
func (e *external) Delete(ctx context.Context, mg *v1alpha1.RouterRoutes) (managed.ExternalDelete, error) {
	ours := owned(mg.Status.AtProvider.Routes)
	if len(ours) == 0 {
		return managed.ExternalDelete{}, nil
	}
	id := routerOf(mg)
	r, err := extraroutes.Remove(ctx, e.neutron, id, extraroutes.Opts{Routes: &ours}).Extract()
	if openstack.IsNotFound(err) {
		mg.Status.AtProvider = v1alpha1.RouterRoutesObservation{}
		return managed.ExternalDelete{}, nil
	}
	if err != nil {
		return managed.ExternalDelete{}, openstack.Wrap(err, fmt.Sprintf(errRemoveRoutes, describe(ours), id))
	}
	record(mg, nil, r)
	return managed.ExternalDelete{}, nil
}

// Disconnect does nothing: the Neutron client is cached per ProviderConfig.
func (e *external) Disconnect(context.Context) error { return nil }

// add adds routes to router id and records the router Neutron answers with.
func (e *external) add(ctx context.Context, mg *v1alpha1.RouterRoutes, id string, desired, routes []routers.Route) error {
	r, err := extraroutes.Add(ctx, e.neutron, id, extraroutes.Opts{Routes: &routes}).Extract()
	if err != nil {
		return openstack.Wrap(err, fmt.Sprintf(errAddRoutes, describe(routes), id))
	}
	record(mg, desired, r)
	return nil
}

// record sets status.atProvider from the router add_extraroutes or
// remove_extraroutes answered with: the routes that are desired or were
// owned, and the router's revision.
func record(mg *v1alpha1.RouterRoutes, desired []routers.Route, r *routers.Router) {
	ours, _, _ := classify(desired, owned(mg.Status.AtProvider.Routes), r.Routes)
	mg.Status.AtProvider = v1alpha1.RouterRoutesObservation{Routes: observed(ours), RevisionNumber: r.RevisionNumber}
}
