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
	"github.com/ipsecgw/provider-ipsec/internal/controller/neutronobject"
)

// Error messages; %s are the Neutron IDs of the group and of a rule, and
// a rule's direction and protocol.
const (
	errCreate     = "cannot create Neutron security group"
	errUpdate     = "cannot update Neutron security group %s"
	errDeleteRule = "cannot delete rule %s of Neutron security group %s"
	errAddRule    = "cannot add %s %s rule to Neutron security group %s"
)

// object is what a SecurityGroup's Observe says of its own
// (neutronobject.External.Observe: the group with its rules in one GET by
// the external name; while that is empty the group carrying the MR's
// marker in its description is adopted, so that a group whose create
// answer was lost, or that a deleted SecurityGroup of the same name made,
// is not created twice): it fills status.atProvider with the group's
// rules; the group is Ready when its rules are exactly the spec's (see
// unready); it compares name, description and rules (see compare) and
// late-initializes nothing.
var object = neutronobject.Kind[*v1alpha1.SecurityGroup, groups.SecGroup]{
	Collection: openstack.SecurityGroups,
	Report: func(_ context.Context, _ *gophercloud.ServiceClient, sg *v1alpha1.SecurityGroup, g *groups.SecGroup) error {
		sg.Status.AtProvider = observation(g)
		return nil
	},
	Unready: unready,
	Compare: compare,
}

// external manages one security group in Neutron: Observe, Delete and
// Disconnect are neutronobject.External's, as object says.
type external struct {
	neutronobject.External[*v1alpha1.SecurityGroup, groups.SecGroup]
}

// Create creates the group with one POST whose description carries the
// MR's marker (openstack.Mark), by which Observe, or the CreateRecovery of
// a provider killed before the ID was saved, finds it again. Rules follow
// in the Update of the next reconcile.
func (e *external) Create(ctx context.Context, sg *v1alpha1.SecurityGroup) (managed.ExternalCreation, error) {
	p := sg.Spec.ForProvider
	g, err := groups.Create(ctx, e.Neutron, groups.CreateOpts{Name: p.Name, Description: openstack.Mark(sg, ptr.Deref(p.Description, ""))}).Extract()
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
	g, err := e.Object(ctx, sg)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	_, stale := openstack.Remark(sg, g.Description)
	if desc, _ := openstack.Unmark(sg, g.Description); g.Name != p.Name || desc != ptr.Deref(p.Description, "") || stale {
		desc = openstack.KeepMark(sg, g.Description, ptr.Deref(p.Description, ""))
		if _, err := groups.Update(ctx, e.Neutron, g.ID, groups.UpdateOpts{Name: p.Name, Description: &desc}).Extract(); err != nil {
			return managed.ExternalUpdate{}, openstack.Wrap(err, fmt.Sprintf(errUpdate, g.ID))
		}
	}
	missing, extra := diff(p.Rules, g.Rules, keepDefaults(p))
	for _, id := range extra {
		if err := rules.Delete(ctx, e.Neutron, id).ExtractErr(); err != nil && !openstack.IsNotFound(err) {
			return managed.ExternalUpdate{}, openstack.Wrap(err, fmt.Sprintf(errDeleteRule, id, g.ID))
		}
	}
	for _, r := range missing {
		opts := rules.CreateOpts{
			Direction: rules.RuleDirection(r.Direction), EtherType: rules.RuleEtherType(r.EtherType), SecGroupID: g.ID,
			Protocol: rules.RuleProtocol(r.Protocol), PortRangeMin: r.PortRangeMin, PortRangeMax: r.PortRangeMax,
			RemoteIPPrefix: r.RemoteIPPrefix, RemoteGroupID: r.RemoteGroupID, Description: r.Description,
		}
		if _, err := rules.Create(ctx, e.Neutron, opts).Extract(); err != nil {
			return managed.ExternalUpdate{}, openstack.Wrap(err, fmt.Sprintf(errAddRule, r.Direction, orAny(r.Protocol), g.ID))
		}
	}
	// The rules are now exactly the spec's: Ready at once, not at the next
	// poll (Observe said not Ready because they were not yet in place).
	sg.SetConditions(xpv2.Available())
	return managed.ExternalUpdate{}, nil
}

// orAny names a rule's protocol in messages, "any-protocol" when unset.
func orAny(proto string) string {
	if proto == "" {
		return "any-protocol"
	}
	return proto
}
