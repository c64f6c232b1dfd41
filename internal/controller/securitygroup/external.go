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

	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// Error messages; %s are the Neutron IDs of the group and of a rule, and
// a rule's direction and protocol.
const (
	errCreate     = "cannot create Neutron security group"
	errUpdate     = "cannot update Neutron security group %s"
	errDeleteRule = "cannot delete rule %s of Neutron security group %s"
	errAddRule    = "cannot add %s %s rule to Neutron security group %s"
)

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
// (openstack.GetOrAdopt), so that a group whose create answer was lost, or
// that a deleted SecurityGroup of the same name made, is adopted, not
// created twice. The marker is no drift: the description
// compared is the user's part.
func (e *external) Observe(ctx context.Context, sg *v1alpha1.SecurityGroup) (managed.ExternalObservation, error) {
	g := &groups.SecGroup{}
	exists, adopted, err := openstack.GetOrAdopt(ctx, e.neutron, openstack.SecurityGroups, sg, e.settle, g)
	if err != nil || !exists {
		return managed.ExternalObservation{}, err
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
	// An earlier release's marker is replaced by the marker
	// (openstack.Remark).
	_, stale := openstack.Remark(sg, g.Description)
	upToDate := g.Name == p.Name && desc == ptr.Deref(p.Description, "") && !stale && len(missing) == 0 && len(extra) == 0
	var d string
	if !upToDate {
		d = fmt.Sprintf("name %q, description %q, %d rules missing, %d extra", g.Name, desc, len(missing), len(extra))
		if stale {
			d += ", an earlier release's marker"
		}
	}
	// An adopted external name is written back like a late-initialised
	// field.
	return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: upToDate, ResourceLateInitialized: adopted, Diff: d}, nil
}

// Create creates the group with one POST whose description carries the
// MR's marker (openstack.Mark), by which Observe, or the CreateRecovery of
// a provider killed before the ID was saved, finds it again. Rules follow
// in the Update of the next reconcile.
func (e *external) Create(ctx context.Context, sg *v1alpha1.SecurityGroup) (managed.ExternalCreation, error) {
	p := sg.Spec.ForProvider
	g, err := groups.Create(ctx, e.neutron, groups.CreateOpts{Name: p.Name, Description: openstack.Mark(sg, ptr.Deref(p.Description, ""))}).Extract()
	if err != nil {
		return managed.ExternalCreation{}, openstack.Wrap(openstack.RecordRefusal(sg, err), errCreate)
	}
	meta.SetExternalName(sg, g.ID)
	return managed.ExternalCreation{}, nil
}

// Update corrects name and description (keeping the marker, replacing an
// earlier release's) and makes
// the rules exactly the spec's: it adds the missing ones and deletes the
// extra ones (Neutron rules cannot be changed in place). Once all are in
// place the group is Ready; a rule Neutron refuses leaves it not Ready.
func (e *external) Update(ctx context.Context, sg *v1alpha1.SecurityGroup) (managed.ExternalUpdate, error) {
	p := sg.Spec.ForProvider
	g := e.observed
	_, stale := openstack.Remark(sg, g.Description)
	if desc, _ := openstack.Unmark(sg, g.Description); g.Name != p.Name || desc != ptr.Deref(p.Description, "") || stale {
		desc = openstack.KeepMark(sg, g.Description, ptr.Deref(p.Description, ""))
		if _, err := groups.Update(ctx, e.neutron, g.ID, groups.UpdateOpts{Name: p.Name, Description: &desc}).Extract(); err != nil {
			return managed.ExternalUpdate{}, openstack.Wrap(err, fmt.Sprintf(errUpdate, g.ID))
		}
	}
	missing, extra := diff(p.Rules, g.Rules, keepDefaults(p))
	for _, id := range extra {
		if err := rules.Delete(ctx, e.neutron, id).ExtractErr(); err != nil && !openstack.IsNotFound(err) {
			return managed.ExternalUpdate{}, openstack.Wrap(err, fmt.Sprintf(errDeleteRule, id, g.ID))
		}
	}
	for _, r := range missing {
		opts := rules.CreateOpts{
			Direction: rules.RuleDirection(r.Direction), EtherType: rules.RuleEtherType(r.EtherType), SecGroupID: g.ID,
			Protocol: rules.RuleProtocol(r.Protocol), PortRangeMin: r.PortRangeMin, PortRangeMax: r.PortRangeMax,
			RemoteIPPrefix: r.RemoteIPPrefix, RemoteGroupID: r.RemoteGroupID, Description: r.Description,
		}
		if _, err := rules.Create(ctx, e.neutron, opts).Extract(); err != nil {
			return managed.ExternalUpdate{}, openstack.Wrap(err, fmt.Sprintf(errAddRule, r.Direction, orAny(r.Protocol), g.ID))
		}
	}
	// The rules are now exactly the spec's: Ready at once, not at the next
	// poll (Observe said not Ready because they were not yet in place).
	sg.SetConditions(xpv2.Available())
	return managed.ExternalUpdate{}, nil
}

// Delete deletes the group, and any twin a create for the MR left
// (openstack.DeleteCreated); one already gone is not an error. A group still
// used by ports answers 409 SecurityGroupInUse, returned to retry later.
func (e *external) Delete(ctx context.Context, sg *v1alpha1.SecurityGroup) (managed.ExternalDelete, error) {
	return managed.ExternalDelete{}, openstack.DeleteCreated(ctx, e.neutron, openstack.SecurityGroups, sg, meta.GetExternalName(sg))
}

// Disconnect does nothing: the Neutron client is shared.
func (e *external) Disconnect(context.Context) error { return nil }

// orAny names a rule's protocol in messages, "any-protocol" when unset.
func orAny(proto string) string {
	if proto == "" {
		return "any-protocol"
	}
	return proto
}
