package network

import (
	"context"
	"fmt"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// Error messages; %s are the Network's name and the Neutron network ID.
const (
	errGet      = "Network %s: cannot get Neutron network %s"
	errCreate   = "Network %s: cannot create Neutron network"
	errTag      = "Network %s: cannot set the tags of Neutron network %s"
	errUpdate   = "Network %s: cannot update Neutron network %s"
	errDelete   = "Network %s: cannot delete Neutron network %s"
	statusError = "ERROR"
)

// external manages one Network's Neutron network.
type external struct {
	network *gophercloud.ServiceClient
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
// looks up the network whose description carries the MR's marker
// (openstack.LookupCreated), and adopts it: a create whose answer was
// lost. A network that is gone (404) does
// not exist.
func (e *external) Observe(ctx context.Context, mg *v1alpha1.Network) (managed.ExternalObservation, error) {
	id, adopted, err := openstack.ObservedID(ctx, e.network, openstack.Networks, mg, ptr.Deref(mg.Spec.ForProvider.Description, ""), e.settle)
	if err != nil {
		return managed.ExternalObservation{}, fmt.Errorf("Network %s: %w", mg.GetName(), err) //nolint:staticcheck // ST1005: it starts with the kind's name
	}
	if id == "" {
		return managed.ExternalObservation{ResourceExists: false}, nil
	}
	n := &neutronNetwork{}
	if err := networks.Get(ctx, e.network, id).ExtractInto(n); err != nil {
		if openstack.IsNotFound(err) {
			return managed.ExternalObservation{ResourceExists: false}, nil
		}
		return managed.ExternalObservation{}, openstack.Wrap(err, fmt.Sprintf(errGet, mg.GetName(), id))
	}
	e.observed = n
	mg.Status.AtProvider = observation(n)
	if n.Status == statusError {
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
// it tags it with spec.tags, if any, with PUT /v2.0/networks/{id}/tags
// (Neutron 21 takes no tags in the create body). Should the tagging fail,
// the external name is saved all the same and the next Update tags it.
func (e *external) Create(ctx context.Context, mg *v1alpha1.Network) (managed.ExternalCreation, error) {
	fp := &mg.Spec.ForProvider
	opts := networks.CreateOpts{Name: ptr.Deref(fp.Name, ""), Description: openstack.Mark(mg, ptr.Deref(fp.Description, "")), AdminStateUp: fp.AdminStateUp}
	n, err := networks.Create(ctx, e.network, opts).Extract()
	if err != nil {
		return managed.ExternalCreation{}, openstack.Wrap(openstack.RecordRefusal(mg, err), fmt.Sprintf(errCreate, mg.GetName()))
	}
	// The reconciler saves the external name even when Create fails from
	// here on.
	meta.SetExternalName(mg, n.ID)
	if tags := wantTags(fp); len(tags) > 0 {
		return managed.ExternalCreation{}, e.setTags(ctx, mg, n.ID, tags)
	}
	return managed.ExternalCreation{}, nil
}

// Update changes what differs between the spec and the network Observe
// read: one PUT of the network's attributes with If-Match:
// revision_number (a network changed in between gets 412
// RevisionNumberConstraintFailed and the next reconcile reads it again),
// then one PUT of its tags if they differ.
func (e *external) Update(ctx context.Context, mg *v1alpha1.Network) (managed.ExternalUpdate, error) {
	n := e.observed
	if n == nil {
		n = &neutronNetwork{}
		id := meta.GetExternalName(mg)
		if err := networks.Get(ctx, e.network, id).ExtractInto(n); err != nil {
			return managed.ExternalUpdate{}, openstack.Wrap(err, fmt.Sprintf(errGet, mg.GetName(), id))
		}
	}
	c := compare(mg, &mg.Spec.ForProvider, n)
	if c.networkChanged() {
		opts := c.update
		rev := n.RevisionNumber
		opts.RevisionNumber = &rev
		if err := networks.Update(ctx, e.network, n.ID, opts).Err; err != nil {
			return managed.ExternalUpdate{}, openstack.Wrap(err, fmt.Sprintf(errUpdate, mg.GetName(), n.ID))
		}
	}
	if c.tags != nil {
		if err := e.setTags(ctx, mg, n.ID, c.tags); err != nil {
			return managed.ExternalUpdate{}, err
		}
	}
	return managed.ExternalUpdate{}, nil
}

func (e *external) setTags(ctx context.Context, mg *v1alpha1.Network, id string, tags []string) error {
	err := attributestags.ReplaceAll(ctx, e.network, resourceType, id, attributestags.ReplaceAllOpts{Tags: tags}).Err
	return openstack.Wrap(err, fmt.Sprintf(errTag, mg.GetName(), id))
}

// Delete deletes the network; one that is already gone (404) is deleted.
// A network that still has ports answers 409 NetworkInUse, returned so
// that the reconciler retries with backoff. Neither deletionPolicy Orphan
// nor management policy Observe gets here: the reconciler skips Delete.
func (e *external) Delete(ctx context.Context, mg *v1alpha1.Network) (managed.ExternalDelete, error) {
	id := meta.GetExternalName(mg)
	if id == "" {
		return managed.ExternalDelete{}, nil
	}
	mg.SetConditions(xpv2.Deleting())
	err := networks.Delete(ctx, e.network, id).ExtractErr()
	if err != nil && !openstack.IsNotFound(err) {
		return managed.ExternalDelete{}, openstack.Wrap(err, fmt.Sprintf(errDelete, mg.GetName(), id))
	}
	return managed.ExternalDelete{}, nil
}

// Disconnect does nothing: the Neutron client is shared per ProviderConfig.
func (e *external) Disconnect(context.Context) error { return nil }
