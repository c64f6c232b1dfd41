package network

import (
	"slices"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	extnet "github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/external"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/mtu"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/drift"
)

// neutronNetwork is a network as Neutron returns it
// (https://docs.openstack.org/api-ref/network/v2/#show-network-details),
// with the net-mtu extension's mtu and the external-net extension's
// router:external.
type neutronNetwork struct {
	networks.Network
	mtu.NetworkMTUExt
	extnet.NetworkExternalExt
}

// changes are what an Update must send to make a Neutron network match a
// Network's spec. Name, description and adminStateUp count only when set,
// the description without the MR's marker (openstack.Unmark; an update
// keeps it, and an earlier release's marker, set or not, is replaced by
// it: openstack.Remark); tags, as a set, are exactly spec.tags.
type changes struct {
	drift.Report
	// update holds the attributes that differ; nil fields match.
	update networks.UpdateOpts
	// tags is the full tag set to write when the tags differ, sorted
	// (empty, not nil, to remove them all).
	tags []string
}

// networkChanged says whether a PUT of the network itself is needed (tags
// are a separate request).
func (c *changes) networkChanged() bool {
	u := c.update
	return u.Name != nil || u.Description != nil || u.AdminStateUp != nil
}

// compare returns what differs between spec, the spec of mg, and the
// Neutron network n.
func compare(mg resource.Object, spec *v1alpha1.NetworkParameters, n *neutronNetwork) *changes {
	c := &changes{}
	if spec.Name != nil && c.Differs("name", *spec.Name, n.Name) {
		c.update.Name = spec.Name
	}
	if desc, _ := openstack.Unmark(mg, n.Description); spec.Description != nil && c.Differs("description", *spec.Description, desc) {
		c.update.Description = ptr.To(openstack.KeepMark(mg, n.Description, *spec.Description))
	} else if d, stale := openstack.Remark(mg, n.Description); stale {
		// An earlier release's marker: the object gets the marker.
		c.Add("description", "the marker of an earlier release")
		c.update.Description = &d
	}
	if spec.AdminStateUp != nil && c.Differs("adminStateUp", *spec.AdminStateUp, n.AdminStateUp) {
		c.update.AdminStateUp = spec.AdminStateUp
	}
	if tags := wantTags(spec); c.Differs("tags", tags, n.Tags, drift.SortStrings) {
		c.tags = append([]string{}, tags...)
	}
	return c
}

// wantTags are spec.tags, sorted, without duplicates.
func wantTags(spec *v1alpha1.NetworkParameters) []string {
	tags := slices.Clone(spec.Tags)
	slices.Sort(tags)
	return slices.Compact(tags)
}

// observation is the Network's status.atProvider for n.
func observation(n *neutronNetwork) v1alpha1.NetworkObservation {
	return v1alpha1.NetworkObservation{
		ID: n.ID, Status: n.Status, Subnets: slices.Clone(n.Subnets), MTU: n.MTU,
		Shared: n.Shared, External: n.External, RevisionNumber: n.RevisionNumber,
	}
}
