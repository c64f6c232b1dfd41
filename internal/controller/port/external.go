package port

import (
	"context"
	"fmt"
	"slices"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/drift"
)

// Error messages; %s are the Port's name and the Neutron port ID.
const (
	errGet      = "Port %s: cannot get Neutron port %s"
	errCreate   = "Port %s: cannot create Neutron port on network %s"
	errTag      = "Port %s: cannot set the tags of Neutron port %s"
	errUpdate   = "Port %s: cannot update Neutron port %s"
	errDelete   = "Port %s: cannot delete Neutron port %s"
	errSubnet   = "Port %s: cannot get Neutron subnet %s of fixed IP %s"
	statusError = "ERROR"
)

// external manages one Port's Neutron port.
type external struct {
	network *gophercloud.ServiceClient
	// settle says when an interrupted create has surely made nothing.
	settle openstack.Settling
	// observed is the port as Observe read it, for Update in the same
	// reconcile (the reconciler connects anew for every reconcile).
	observed *neutronPort
}

// Observe reads the port with one GET by its external name, fills
// status.atProvider (each fixed IP with its subnet's CIDR and gateway, see
// subnetDetails), late-initializes portSecurityEnabled and compares the
// spec with the port (see changes). While the external name is empty it
// first looks up the port whose description carries the MR's marker
// (openstack.LookupCreated): a port found there was created by a Create whose answer was lost, and is
// adopted (its ID becomes the external name). More than one such port is
// an error naming them all. A port that is gone (404) does not exist.
func (e *external) Observe(ctx context.Context, mg *v1alpha1.Port) (managed.ExternalObservation, error) {
	id, adopted, err := openstack.ObservedID(ctx, e.network, openstack.Ports, mg, deref(mg.Spec.ForProvider.Description), e.settle)
	if err != nil || id == "" {
		return managed.ExternalObservation{ResourceExists: false}, wrapName(mg, err)
	}
	p := &neutronPort{}
	if err := ports.Get(ctx, e.network, id).ExtractInto(p); err != nil {
		if openstack.IsNotFound(err) {
			return managed.ExternalObservation{ResourceExists: false}, nil
		}
		return managed.ExternalObservation{}, openstack.Wrap(err, fmt.Sprintf(errGet, mg.GetName(), id))
	}
	e.observed = p
	obs := observation(p)
	if err := e.subnetDetails(ctx, mg, mg.Status.AtProvider.FixedIPs, obs.FixedIPs); err != nil {
		return managed.ExternalObservation{}, err
	}
	mg.Status.AtProvider = obs
	if p.Status == statusError {
		mg.SetConditions(xpv2.Unavailable().WithMessage("Neutron reports the port in status ERROR"))
	} else {
		// An unbound port is DOWN for as long as no device uses it: it
		// is ready for a gateway pod to take its MAC and fixed IP.
		mg.SetConditions(xpv2.Available())
	}
	if meta.WasDeleted(mg) {
		return managed.ExternalObservation{ResourceExists: true}, nil
	}
	li := lateInit(&mg.Spec.ForProvider, p)
	c := compare(mg, &mg.Spec.ForProvider, p)
	return managed.ExternalObservation{
		ResourceExists:          true,
		ResourceUpToDate:        c.UpToDate(),
		ResourceLateInitialized: li || adopted,
		Diff:                    c.Diff(),
	}, nil
}

// wrapName prefixes err, if any, with the Port's name.
func wrapName(mg *v1alpha1.Port, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("Port %s: %w", mg.GetName(), err) //nolint:staticcheck // ST1005: it starts with the kind's name
}

// Create creates the port with the spec's attributes, its description
// carrying the MR's marker (openstack.Mark) by which Observe, or the
// CreateRecovery of a provider killed before the ID was saved, finds it
// again, and sets the external name to its ID. spec.tags go in the create
// body too; a Neutron without the ML2 extension driver
// tag_ports_during_bulk_creation drops them silently, and Create then sets
// them with PUT /v2.0/ports/{id}/tags at once. Neutron errors such as 409
// IpAddressAlreadyAllocated or AddressPairAndPortSecurityRequired come back
// with their type and message.
func (e *external) Create(ctx context.Context, mg *v1alpha1.Port) (managed.ExternalCreation, error) {
	fp := &mg.Spec.ForProvider
	tags := unique(fp.Tags)
	slices.Sort(tags)
	opts := createOpts{
		CreateOpts: ports.CreateOpts{
			NetworkID:   deref(fp.NetworkID),
			Name:        deref(fp.Name),
			Description: openstack.Mark(mg, deref(fp.Description)),
		},
		PortSecurityEnabled: fp.PortSecurityEnabled,
		Tags:                tags,
	}
	if len(fp.FixedIPs) > 0 {
		ips := make([]ports.IP, 0, len(fp.FixedIPs))
		for _, f := range fp.FixedIPs {
			ips = append(ips, ports.IP{SubnetID: string(deref(f.SubnetID)), IPAddress: string(deref(f.IPAddress))})
		}
		opts.FixedIPs = ips
	}
	if sgs := unique(fp.SecurityGroupIDs); len(sgs) > 0 {
		opts.SecurityGroups = &sgs
	}
	for _, ap := range fp.AllowedAddressPairs {
		opts.AllowedAddressPairs = append(opts.AllowedAddressPairs, ports.AddressPair{IPAddress: ap.IPAddress, MACAddress: deref(ap.MACAddress)})
	}
	p := &neutronPort{}
	if err := ports.Create(ctx, e.network, opts).ExtractInto(p); err != nil {
		return managed.ExternalCreation{}, openstack.Wrap(openstack.RecordRefusal(mg, err), fmt.Sprintf(errCreate, mg.GetName(), deref(fp.NetworkID)))
	}
	// The reconciler saves the external name even when Create fails from
	// here on.
	meta.SetExternalName(mg, p.ID)
	if len(tags) > 0 && !cmp.Equal(tags, p.Tags, drift.SortStrings) {
		if err := e.setTags(ctx, mg, p.ID, tags); err != nil {
			return managed.ExternalCreation{}, err
		}
	}
	return managed.ExternalCreation{}, nil
}

// Update changes what differs between the spec and the port Observe read:
// one PUT of the port's attributes with If-Match: revision_number (a port
// changed in between gets 412 RevisionNumberConstraintFailed and the next
// reconcile reads it again), then one PUT of its tags if they differ.
// Turning port security off sends the empty security groups and address
// pairs in the same PUT, as Neutron requires.
func (e *external) Update(ctx context.Context, mg *v1alpha1.Port) (managed.ExternalUpdate, error) {
	p := e.observed
	if p == nil {
		p = &neutronPort{}
		id := meta.GetExternalName(mg)
		if err := ports.Get(ctx, e.network, id).ExtractInto(p); err != nil {
			return managed.ExternalUpdate{}, openstack.Wrap(err, fmt.Sprintf(errGet, mg.GetName(), id))
		}
	}
	c := compare(mg, &mg.Spec.ForProvider, p)
	if c.portChanged() {
		rev := p.RevisionNumber
		opts := updateOpts{UpdateOpts: c.update, PortSecurityEnabled: c.portSecurity, RevisionNumber: &rev}
		if err := ports.Update(ctx, e.network, p.ID, opts).Err; err != nil {
			return managed.ExternalUpdate{}, openstack.Wrap(err, fmt.Sprintf(errUpdate, mg.GetName(), p.ID))
		}
	}
	if c.tags != nil {
		if err := e.setTags(ctx, mg, p.ID, c.tags); err != nil {
			return managed.ExternalUpdate{}, err
		}
	}
	return managed.ExternalUpdate{}, nil
}

func (e *external) setTags(ctx context.Context, mg *v1alpha1.Port, id string, tags []string) error {
	err := attributestags.ReplaceAll(ctx, e.network, resourceType, id, attributestags.ReplaceAllOpts{Tags: tags}).Err
	return openstack.Wrap(err, fmt.Sprintf(errTag, mg.GetName(), id))
}

// Delete deletes the port; a port that is already gone (404) is deleted.
// deletionPolicy Orphan never gets here: the reconciler skips Delete.
func (e *external) Delete(ctx context.Context, mg *v1alpha1.Port) (managed.ExternalDelete, error) {
	id := meta.GetExternalName(mg)
	if id == "" {
		return managed.ExternalDelete{}, nil
	}
	mg.SetConditions(xpv2.Deleting())
	err := ports.Delete(ctx, e.network, id).ExtractErr()
	if err != nil && !openstack.IsNotFound(err) {
		return managed.ExternalDelete{}, openstack.Wrap(err, fmt.Sprintf(errDelete, mg.GetName(), id))
	}
	return managed.ExternalDelete{}, nil
}

// Disconnect does nothing: the Neutron client is shared per ProviderConfig.
func (e *external) Disconnect(context.Context) error { return nil }
