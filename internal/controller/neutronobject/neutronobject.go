// Package neutronobject holds what the external clients of the OpenStack
// kinds that each manage one Neutron object of a collection of its own
// (Network, Port, SecurityGroup) do alike: Observe finds the object by the
// external name or by the MR's crash-safe marker, reports it in status and
// conditions, late-initializes and compares; Update reads the object
// Observe read; Delete deletes it with the twins a create left. A kind
// states only what differs, in a Kind, and writes its own Create and
// Update.
package neutronobject

import (
	"context"
	"fmt"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/gophercloud/gophercloud/v2"

	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// errGone is the error of an Update whose object Neutron no longer has; %s
// are the kind (openstack.Collection.Kind) and the object's ID. The next
// reconcile's Observe finds it gone and creates it again.
const errGone = "cannot update Neutron %s %s: Neutron no longer has it"

// A Kind is what the Observe of one kind says of its own. M is the
// kind's cluster-scoped managed resource type (its namespaced twin is
// converted to it: mrsetup.NeutronKind), O the type a Neutron object of the
// kind is decoded into: gophercloud's struct of the kind, or one embedding
// it with extensions' fields.
type Kind[M resource.Managed, O any] struct {
	// Collection is the kind's Neutron collection (openstack.Networks,
	// ...): where the object is read, looked up by marker and deleted.
	Collection openstack.Collection
	// Report fills mg's status.atProvider from o. sc is the Neutron
	// client, for what status shows beyond the object (a Port's subnets);
	// its errors are returned by Observe as they are, wrapped by Report
	// with what it read.
	Report func(ctx context.Context, sc *gophercloud.ServiceClient, mg M, o *O) error
	// Unready says why mg is not Ready given o (the Ready condition's
	// message), "" when it is: Available.
	Unready func(mg M, o *O) string
	// LateInit fills the unset fields of mg's spec that Neutron chose a
	// value for in o and says whether it filled any; nil for a kind that
	// late-initializes nothing.
	LateInit func(mg M, o *O) bool
	// Compare returns how mg's spec, late-initialized, differs from o,
	// for the reconciler's debug log; "" when o is up to date.
	Compare func(mg M, o *O) string
}

// External returns the part of a kind's external client that k describes,
// for the Neutron client sc of a resource's ProviderConfig; settle says
// when an interrupted create has surely made nothing
// (openstack.Clients.Settling; the zero value never waits, for tests of
// one reconcile). A kind's external client embeds it and adds Create and
// Update.
func (k *Kind[M, O]) External(sc *gophercloud.ServiceClient, settle openstack.Settling) External[M, O] {
	return External[M, O]{kind: k, Neutron: sc, settle: settle}
}

// External is Observe, Delete and Disconnect of a kind's external client,
// and the object Observe read, for the kind's Update.
type External[M resource.Managed, O any] struct {
	kind *Kind[M, O]
	// Neutron is the Neutron client of the resource's ProviderConfig.
	Neutron *gophercloud.ServiceClient
	// settle says when an interrupted create has surely made nothing.
	settle openstack.Settling
	// Observed is the object as Observe read it, for Update in the same
	// reconcile (the reconciler connects anew for every reconcile); nil
	// before Observe.
	Observed *O
}

// Observe reads the object with one GET by mg's external name. While the
// external name is empty it first looks up the object whose description
// carries mg's marker, and adopts it: a create whose answer was lost, or
// the object of a deleted MR of the same name applied again; it deletes
// the twins a create left while mg's twin check runs
// (openstack.GetOrAdopt). An object that is gone (404) does not exist.
// Then it reports the object in status.atProvider (Kind.Report) and the
// Ready condition (Kind.Unready). An MR being deleted is told only that
// the object exists: the reconciler deletes it whatever the spec says.
// Otherwise the spec is late-initialized (Kind.LateInit) and compared
// with the object (Kind.Compare); an adopted external name or a finished
// twin check is written back like a late-initialized field. With
// management policy Observe alone the reconciler changes nothing, which
// is how an existing object is imported. Errors are GetOrAdopt's and
// Report's.
func (e *External[M, O]) Observe(ctx context.Context, mg M) (managed.ExternalObservation, error) {
	o := new(O)
	exists, adopted, err := openstack.GetOrAdopt(ctx, e.Neutron, e.kind.Collection, mg, e.settle, o)
	if err != nil || !exists {
		return managed.ExternalObservation{}, err
	}
	e.Observed = o
	if err := e.kind.Report(ctx, e.Neutron, mg, o); err != nil {
		return managed.ExternalObservation{}, err
	}
	if why := e.kind.Unready(mg, o); why != "" {
		mg.SetConditions(xpv2.Unavailable().WithMessage(why))
	} else {
		mg.SetConditions(xpv2.Available())
	}
	if meta.WasDeleted(mg) {
		return managed.ExternalObservation{ResourceExists: true}, nil
	}
	li := e.kind.LateInit != nil && e.kind.LateInit(mg, o)
	d := e.kind.Compare(mg, o)
	return managed.ExternalObservation{
		ResourceExists:          true,
		ResourceUpToDate:        d == "",
		ResourceLateInitialized: li || adopted,
		Diff:                    d,
	}, nil
}

// Object returns the object Observe read or, when Update runs without
// Observe, reads it again by mg's external name with one GET. An object
// Neutron no longer has is an error naming it; other errors are
// openstack.Get's.
func (e *External[M, O]) Object(ctx context.Context, mg M) (*O, error) {
	if e.Observed != nil {
		return e.Observed, nil
	}
	o := new(O)
	id := meta.GetExternalName(mg)
	found, err := openstack.Get(ctx, e.Neutron, e.kind.Collection, id, o)
	if err == nil && !found {
		err = fmt.Errorf(errGone, e.kind.Collection.Kind, id)
	}
	if err != nil {
		return nil, err
	}
	return o, nil
}

// Delete deletes the object, and any twin a create for mg left
// (openstack.DeleteCreated); one that is already gone (404) is deleted, an
// empty external name sends nothing. An object Neutron refuses to delete
// (409 NetworkInUse, SecurityGroupInUse: ports still use it) is an error
// with Neutron's type and message, for the reconciler to retry with
// backoff. Neither deletionPolicy Orphan nor management policy Observe
// gets here: the reconciler skips Delete.
func (e *External[M, O]) Delete(ctx context.Context, mg M) (managed.ExternalDelete, error) {
	mg.SetConditions(xpv2.Deleting())
	return managed.ExternalDelete{}, openstack.DeleteCreated(ctx, e.Neutron, e.kind.Collection, mg, meta.GetExternalName(mg))
}

// Disconnect does nothing: the Neutron client is shared per
// ProviderConfig.
func (e *External[M, O]) Disconnect(context.Context) error { return nil }

// StatusError is a Kind.Unready for a kind whose objects have a status
// (networks, ports): not Ready while Neutron reports status ERROR
// (gophercloud's networks.StatusError, ports.StatusError) for the object
// of c.
func StatusError(c openstack.Collection, status string) string {
	if status == "ERROR" {
		return fmt.Sprintf("Neutron reports the %s in status ERROR", c.Kind)
	}
	return ""
}
