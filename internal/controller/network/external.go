package network

import (
	"context"
	"fmt"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// Error messages; %s is the Neutron network's ID.
const (
	errCreate = "cannot create Neutron network"
	errUpdate = "cannot update Neutron network %s"
	errGone   = "cannot update Neutron network %s: Neutron no longer has it"
)

// external manages one Network's Neutron network.
type external struct {
	neutron *gophercloud.ServiceClient
	// settle says when an interrupted create has surely made nothing.
	settle openstack.Settling
	// observed is the network as Observe read it, for Update in the same
	// reconcile (the reconciler connects anew for every reconcile).
	observed *neutronNetwork
}

// Observe reads the network with one GET by its external name and fills
// status.atProvider (ID, status, subnet IDs, MTU, shared and external
// flags); the Network is Ready unless Neutron reports status ERROR. It
// compares the spec with the network (see changes); with management
// policy Observe alone the reconciler changes nothing, which is how an
// existing network is imported. While the external name is empty it first
// looks up the network whose description carries the MR's marker, and
// adopts it: a create whose answer was lost, or the network of a deleted
// Network of the same name applied again (openstack.GetOrAdopt). A
// network that is gone (404) does not exist.
func (e *external) Observe(ctx context.Context, mg *v1alpha1.Network) (managed.ExternalObservation, error) {
	n := &neutronNetwork{}
	exists, adopted, err := openstack.GetOrAdopt(ctx, e.neutron, openstack.Networks, mg, e.settle, n)
	if err != nil || !exists {
		return managed.ExternalObservation{}, err
	}
	e.observed = n
	mg.Status.AtProvider = observation(n)
	if n.Status == networks.StatusError {
		mg.SetConditions(xpv2.Unavailable().WithMessage("Neutron reports the network in status ERROR"))
	} else {
		mg.SetConditions(xpv2.Available())
	}
	if meta.WasDeleted(mg) {
		return managed.ExternalObservation{ResourceExists: true}, nil
	}
	c := compare(mg, &mg.Spec.ForProvider, n)
	// An adopted external name is written back like a late-initialized
	// field.
	return managed.ExternalObservation{
		ResourceExists:          true,
		ResourceUpToDate:        c.UpToDate(),
		ResourceLateInitialized: adopted,
		Diff:                    c.Diff(),
	}, nil
}

// Create creates the network with the spec's name, description and
// adminStateUp, the description carrying the MR's marker (openstack.Mark)
// by which Observe, or the CreateRecovery of a provider killed before the
// ID was saved, finds it again, and sets the external name to its ID. Then
// it tags it with spec.tags, if any (openstack.ReplaceTags: Neutron 21
// takes no tags in the create body). Should the tagging fail, the external
// name is saved all the same and the next Update tags it.
func (e *external) Create(ctx context.Context, mg *v1alpha1.Network) (managed.ExternalCreation, error) {
	fp := &mg.Spec.ForProvider
	opts := networks.CreateOpts{Name: ptr.Deref(fp.Name, ""), Description: openstack.Mark(mg, ptr.Deref(fp.Description, "")), AdminStateUp: fp.AdminStateUp}
	n, err := networks.Create(ctx, e.neutron, opts).Extract()
	if err != nil {
		return managed.ExternalCreation{}, openstack.Wrap(openstack.RecordRefusal(mg, err), errCreate)
	}
	// The reconciler saves the external name even when Create fails from
	// here on.
	meta.SetExternalName(mg, n.ID)
	if tags := wantTags(fp); len(tags) > 0 {
		return managed.ExternalCreation{}, openstack.ReplaceTags(ctx, e.neutron, openstack.Networks, n.ID, tags)
	}
	return managed.ExternalCreation{}, nil
}

// Update changes what differs between the spec and the network Observe
// read (read again when Update runs without Observe): one PUT of the
// network's attributes with If-Match: revision_number (a network changed
// in between gets 412 RevisionNumberConstraintFailed and the next
// reconcile reads it again), then one PUT of its tags if they differ.
func (e *external) Update(ctx context.Context, mg *v1alpha1.Network) (managed.ExternalUpdate, error) {
	n := e.observed
	if n == nil {
		n = &neutronNetwork{}
		id := meta.GetExternalName(mg)
		found, err := openstack.Get(ctx, e.neutron, openstack.Networks, id, n)
		if err == nil && !found {
			err = fmt.Errorf(errGone, id)
		}
		if err != nil {
			return managed.ExternalUpdate{}, err
		}
	}
	c := compare(mg, &mg.Spec.ForProvider, n)
	if c.networkChanged() {
		opts := c.update
		rev := n.RevisionNumber
		opts.RevisionNumber = &rev
		if err := networks.Update(ctx, e.neutron, n.ID, opts).Err; err != nil {
			return managed.ExternalUpdate{}, openstack.Wrap(err, fmt.Sprintf(errUpdate, n.ID))
		}
	}
	if c.tags != nil {
		if err := openstack.ReplaceTags(ctx, e.neutron, openstack.Networks, n.ID, c.tags); err != nil {
			return managed.ExternalUpdate{}, err
		}
	}
	return managed.ExternalUpdate{}, nil
}

// Delete deletes the network, and any twin a create for the MR left
// (openstack.DeleteCreated); one that is already gone (404) is deleted.
// A network that still has ports answers 409 NetworkInUse, returned so
// that the reconciler retries with backoff. Neither deletionPolicy Orphan
// nor management policy Observe gets here: the reconciler skips Delete.
func (e *external) Delete(ctx context.Context, mg *v1alpha1.Network) (managed.ExternalDelete, error) {
	mg.SetConditions(xpv2.Deleting())
	return managed.ExternalDelete{}, openstack.DeleteCreated(ctx, e.neutron, openstack.Networks, mg, meta.GetExternalName(mg))
}

// Disconnect does nothing: the Neutron client is shared per ProviderConfig.
func (e *external) Disconnect(context.Context) error { return nil }
