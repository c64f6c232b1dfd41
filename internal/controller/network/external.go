package network

import (
	"context"
	"fmt"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/neutronobject"
)

// Error messages; %s is the Neutron network's ID.
const (
	errCreate = "cannot create Neutron network"
	errUpdate = "cannot update Neutron network %s"
)

// object is what a Network's Observe says of its own
// (neutronobject.External.Observe: one GET by the external name, the
// network with the MR's marker adopted while that is empty): it fills
// status.atProvider (ID, status, subnet IDs, MTU, shared and external
// flags); the Network is Ready unless Neutron reports status ERROR; it
// compares the spec with the network (see changes) and late-initializes
// nothing.
var object = neutronobject.Kind[*v1alpha1.Network, neutronNetwork]{
	Collection: openstack.Networks,
	Report: func(_ context.Context, _ *gophercloud.ServiceClient, mg *v1alpha1.Network, n *neutronNetwork) error {
		mg.Status.AtProvider = observation(n)
		return nil
	},
	Unready: func(_ *v1alpha1.Network, n *neutronNetwork) string {
		return neutronobject.StatusError(openstack.Networks, n.Status)
	},
	Compare: func(mg *v1alpha1.Network, n *neutronNetwork) string {
		return compare(mg, &mg.Spec.ForProvider, n).Diff()
	},
}

// external manages one Network's Neutron network: Observe, Delete and
// Disconnect are neutronobject.External's, as object says.
type external struct {
	neutronobject.External[*v1alpha1.Network, neutronNetwork]
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
	n, err := networks.Create(ctx, e.Neutron, opts).Extract()
	if err != nil {
		return managed.ExternalCreation{}, openstack.Wrap(openstack.RecordRefusal(mg, err), errCreate)
	}
	// The reconciler saves the external name even when Create fails from
	// here on.
	meta.SetExternalName(mg, n.ID)
	if tags := wantTags(fp); len(tags) > 0 {
		return managed.ExternalCreation{}, openstack.ReplaceTags(ctx, e.Neutron, openstack.Networks, n.ID, tags)
	}
	return managed.ExternalCreation{}, nil
}

// Update changes what differs between the spec and the network Observe
// read (read again when Update runs without Observe): one PUT of the
// network's attributes with If-Match: revision_number (a network changed
// in between gets 412 RevisionNumberConstraintFailed and the next
// reconcile reads it again), then one PUT of its tags if they differ.
func (e *external) Update(ctx context.Context, mg *v1alpha1.Network) (managed.ExternalUpdate, error) {
	n, err := e.Object(ctx, mg)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	c := compare(mg, &mg.Spec.ForProvider, n)
	if c.networkChanged() {
		opts := c.update
		rev := n.RevisionNumber
		opts.RevisionNumber = &rev
		if err := networks.Update(ctx, e.Neutron, n.ID, opts).Err; err != nil {
			return managed.ExternalUpdate{}, openstack.Wrap(err, fmt.Sprintf(errUpdate, n.ID))
		}
	}
	if c.tags != nil {
		if err := openstack.ReplaceTags(ctx, e.Neutron, openstack.Networks, n.ID, c.tags); err != nil {
			return managed.ExternalUpdate{}, err
		}
	}
	return managed.ExternalUpdate{}, nil
}
