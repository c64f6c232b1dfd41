package securitygroup

import (
	"context"
	"fmt"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// errLookup prefixes the error of the lookup of an unrecorded create with
// the SecurityGroup's name, as the Port's and Network's do.
const errLookup = "SecurityGroup %s: %w"

// external manages one security group in Neutron.
type external struct {
	neutron *gophercloud.ServiceClient
	// settle says when an interrupted create has surely made nothing.
	settle openstack.Settling
	// observed is the group Observe read, for Update.
	observed *groups.SecGroup
}

// Observe reads the group with its rules in one GET. A group without an
// external name is looked up by the MR's marker in its description
// (openstack.LookupCreated), so that a group whose create answer was lost
// is adopted, not created twice. The
// marker is no drift: the description compared is the user's part.
func (e *external) Observe(ctx context.Context, sg *v1alpha1.SecurityGroup) (managed.ExternalObservation, error) {
	id, adopted, err := openstack.ObservedID(ctx, e.neutron, openstack.SecurityGroups, sg, deref(sg.Spec.ForProvider.Description), e.settle)
	if err != nil {
		return managed.ExternalObservation{}, fmt.Errorf(errLookup, sg.GetName(), err)
	}
	if id == "" {
		return managed.ExternalObservation{}, nil
	}
	g, err := groups.Get(ctx, e.neutron, id).Extract()
	if openstack.IsNotFound(err) {
		return managed.ExternalObservation{}, nil
	}
	if err != nil {
		return managed.ExternalObservation{}, openstack.Wrap(err, "cannot get security group "+id)
	}
	e.observed = g
	sg.Status.AtProvider = observation(g)

	p := sg.Spec.ForProvider
	desc, _ := openstack.Unmark(sg, g.Description)
	missing, extra := diff(p.Rules, g.Rules, keepDefaults(p))
	// Ready means the group filters as the spec says: a port in it
	// before its rules are in place drops the traffic they admit.
	if len(missing) == 0 && len(extra) == 0 {
		sg.SetConditions(xpv2.Available())
	} else {
		sg.SetConditions(xpv2.Unavailable().WithMessage(fmt.Sprintf("the group lacks %d of the spec's rules and has %d that the spec does not", len(missing), len(extra))))
	}
	upToDate := g.Name == p.Name && desc == deref(p.Description) && len(missing) == 0 && len(extra) == 0
	var d string
	if !upToDate {
		d = fmt.Sprintf("name %q, description %q, %d rules missing, %d extra", g.Name, desc, len(missing), len(extra))
	}
	// An adopted external name is written back like a late-initialised
	// field.
	return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: upToDate, ResourceLateInitialized: adopted, Diff: d}, nil
}

func observation(g *groups.SecGroup) v1alpha1.SecurityGroupObservation {
	o := v1alpha1.SecurityGroupObservation{ID: g.ID, RevisionNumber: g.RevisionNumber}
	for _, r := range g.Rules {
		or := v1alpha1.ObservedRule{ID: r.ID, Direction: r.Direction, EtherType: r.EtherType, Protocol: r.Protocol,
			RemoteIPPrefix: r.RemoteIPPrefix, RemoteGroupID: r.RemoteGroupID}
		if r.PortRangeMin != 0 || r.PortRangeMax != 0 {
			lo, hi := int32(r.PortRangeMin), int32(r.PortRangeMax) //nolint:gosec // G115: Neutron's port ranges are within 0-65535
			or.PortRangeMin, or.PortRangeMax = &lo, &hi
		}
		if r.Description != "" {
			or.Description = &r.Description
		}
		o.Rules = append(o.Rules, or)
	}
	return o
}

// Create creates the group with one POST whose description carries the
// MR's marker (openstack.Mark), by which Observe, or the CreateRecovery of
// a provider killed before the ID was saved, finds it again. Rules follow
// in the Update of the next reconcile.
func (e *external) Create(ctx context.Context, sg *v1alpha1.SecurityGroup) (managed.ExternalCreation, error) {
	p := sg.Spec.ForProvider
	g, err := groups.Create(ctx, e.neutron, groups.CreateOpts{Name: p.Name, Description: openstack.Mark(sg, deref(p.Description))}).Extract()
	if err != nil {
		return managed.ExternalCreation{}, openstack.Wrap(openstack.RecordRefusal(sg, err), "cannot create security group")
	}
	meta.SetExternalName(sg, g.ID)
	return managed.ExternalCreation{}, nil
}

// Update corrects name and description (keeping the marker) and makes
// the rules exactly the spec's: it adds the missing ones and deletes the
// extra ones (Neutron rules cannot be changed in place). Once all are in
// place the group is Ready; a rule Neutron refuses leaves it not Ready.
func (e *external) Update(ctx context.Context, sg *v1alpha1.SecurityGroup) (managed.ExternalUpdate, error) {
	p := sg.Spec.ForProvider
	g := e.observed
	if desc, _ := openstack.Unmark(sg, g.Description); g.Name != p.Name || desc != deref(p.Description) {
		desc = openstack.KeepMark(sg, g.Description, deref(p.Description))
		if _, err := groups.Update(ctx, e.neutron, g.ID, groups.UpdateOpts{Name: p.Name, Description: &desc}).Extract(); err != nil {
			return managed.ExternalUpdate{}, openstack.Wrap(err, "cannot update security group "+g.ID)
		}
	}
	missing, extra := diff(p.Rules, g.Rules, keepDefaults(p))
	for _, id := range extra {
		if err := rules.Delete(ctx, e.neutron, id).ExtractErr(); err != nil && !openstack.IsNotFound(err) {
			return managed.ExternalUpdate{}, openstack.Wrap(err, fmt.Sprintf("cannot delete rule %s of security group %s", id, g.ID))
		}
	}
	for _, r := range missing {
		opts := rules.CreateOpts{
			Direction: rules.RuleDirection(r.Direction), EtherType: rules.RuleEtherType(r.EtherType), SecGroupID: g.ID,
			Protocol: rules.RuleProtocol(r.Protocol), PortRangeMin: r.PortRangeMin, PortRangeMax: r.PortRangeMax,
			RemoteIPPrefix: r.RemoteIPPrefix, RemoteGroupID: r.RemoteGroupID, Description: r.Description,
		}
		if _, err := rules.Create(ctx, e.neutron, opts).Extract(); err != nil {
			return managed.ExternalUpdate{}, openstack.Wrap(err, fmt.Sprintf("cannot add %s %s rule to security group %s", r.Direction, orAny(r.Protocol), g.ID))
		}
	}
	// The rules are now exactly the spec's: Ready at once, not at the next
	// poll (Observe said not Ready because they were not yet in place).
	sg.SetConditions(xpv2.Available())
	return managed.ExternalUpdate{}, nil
}

// Delete deletes the group; one already gone is not an error. A group still
// used by ports answers 409 SecurityGroupInUse, returned to retry later.
func (e *external) Delete(ctx context.Context, sg *v1alpha1.SecurityGroup) (managed.ExternalDelete, error) {
	id := meta.GetExternalName(sg)
	if err := groups.Delete(ctx, e.neutron, id).ExtractErr(); err != nil && !openstack.IsNotFound(err) {
		return managed.ExternalDelete{}, openstack.Wrap(err, "cannot delete security group "+id)
	}
	return managed.ExternalDelete{}, nil
}

// Disconnect does nothing: the Neutron client is shared.
func (e *external) Disconnect(context.Context) error { return nil }

func keepDefaults(p v1alpha1.SecurityGroupParameters) bool {
	return p.KeepDefaultEgressRules == nil || *p.KeepDefaultEgressRules
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func orAny(proto string) string {
	if proto == "" {
		return "any-protocol"
	}
	return proto
}
