package port

import (
	"context"
	"fmt"
	"slices"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/drift"
	"github.com/ipsecgw/provider-ipsec/internal/controller/neutronobject"
)

// Error messages; %s are Neutron IDs: of the port, of its network, of a
// subnet and a fixed IP's address.
const (
	errCreate = "cannot create Neutron port on network %s"
	errUpdate = "cannot update Neutron port %s"
	errSubnet = "cannot get Neutron subnet %s of fixed IP %s"
)

// object is what a Port's Observe says of its own
// (neutronobject.External.Observe: one GET by the external name, the port
// with the MR's marker adopted while that is empty, more than one such
// port an error naming them all): it fills status.atProvider (each fixed
// IP with its subnet's CIDR and gateway, see subnetDetails); the Port is
// Ready unless Neutron reports status ERROR; it late-initializes
// portSecurityEnabled (lateInit) and compares the spec with the port (see
// changes).
var object = neutronobject.Kind[*v1alpha1.Port, neutronPort]{
	Collection: openstack.Ports,
	Report: func(ctx context.Context, sc *gophercloud.ServiceClient, mg *v1alpha1.Port, p *neutronPort) error {
		obs := observation(p)
		if err := subnetDetails(ctx, sc, mg.Status.AtProvider.FixedIPs, obs.FixedIPs); err != nil {
			return err
		}
		mg.Status.AtProvider = obs
		return nil
	},
	// An unbound port is DOWN for as long as no device uses it: it is
	// ready for a gateway pod to take its MAC and fixed IP.
	Unready: func(_ *v1alpha1.Port, p *neutronPort) string {
		return neutronobject.StatusError(openstack.Ports, p.Status)
	},
	LateInit: func(mg *v1alpha1.Port, p *neutronPort) bool {
		return lateInit(&mg.Spec.ForProvider, p)
	},
	Compare: func(mg *v1alpha1.Port, p *neutronPort) string {
		return compare(mg, &mg.Spec.ForProvider, p).Diff()
	},
}

// external manages one Port's Neutron port: Observe, Delete and Disconnect
// are neutronobject.External's, as object says.
type external struct {
	neutronobject.External[*v1alpha1.Port, neutronPort]
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
			NetworkID:   ptr.Deref(fp.NetworkID, ""),
			Name:        ptr.Deref(fp.Name, ""),
			Description: openstack.Mark(mg, ptr.Deref(fp.Description, "")),
		},
		PortSecurityEnabled: fp.PortSecurityEnabled,
		Tags:                tags,
	}
	if len(fp.FixedIPs) > 0 {
		ips := make([]ports.IP, 0, len(fp.FixedIPs))
		for _, f := range fp.FixedIPs {
			ips = append(ips, ports.IP{SubnetID: string(ptr.Deref(f.SubnetID, "")), IPAddress: string(ptr.Deref(f.IPAddress, ""))})
		}
		opts.FixedIPs = ips
	}
	if sgs := unique(fp.SecurityGroupIDs); len(sgs) > 0 {
		opts.SecurityGroups = &sgs
	}
	for _, ap := range fp.AllowedAddressPairs {
		opts.AllowedAddressPairs = append(opts.AllowedAddressPairs, ports.AddressPair{IPAddress: ap.IPAddress, MACAddress: ptr.Deref(ap.MACAddress, "")})
	}
	p := &neutronPort{}
	if err := ports.Create(ctx, e.Neutron, opts).ExtractInto(p); err != nil {
		return managed.ExternalCreation{}, openstack.Wrap(openstack.RecordRefusal(mg, err), fmt.Sprintf(errCreate, ptr.Deref(fp.NetworkID, "")))
	}
	// The reconciler saves the external name even when Create fails from
	// here on.
	meta.SetExternalName(mg, p.ID)
	if len(tags) > 0 && !cmp.Equal(tags, p.Tags, drift.SortStrings) {
		if err := openstack.ReplaceTags(ctx, e.Neutron, openstack.Ports, p.ID, tags); err != nil {
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
	p, err := e.Object(ctx, mg)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	c := compare(mg, &mg.Spec.ForProvider, p)
	if c.portChanged() {
		rev := p.RevisionNumber
		opts := updateOpts{UpdateOpts: c.update, PortSecurityEnabled: c.portSecurity, RevisionNumber: &rev}
		if err := ports.Update(ctx, e.Neutron, p.ID, opts).Err; err != nil {
			return managed.ExternalUpdate{}, openstack.Wrap(err, fmt.Sprintf(errUpdate, p.ID))
		}
	}
	if c.tags != nil {
		if err := openstack.ReplaceTags(ctx, e.Neutron, openstack.Ports, p.ID, c.tags); err != nil {
			return managed.ExternalUpdate{}, err
		}
	}
	return managed.ExternalUpdate{}, nil
}

// subnetDetails fills SubnetCIDR and GatewayIP of each fixed IP in obs. It
// takes them from saved, the fixed IPs in status from an earlier Observe,
// when that has them for the same subnet, and otherwise reads the subnet
// through sc with one GET /v2.0/subnets/{id} (Networking API v2, "Show
// subnet details"). An up-to-date port therefore costs no request beyond
// its own GET; a subnet's CIDR cannot change in Neutron, and a changed
// gateway_ip is seen when the port moves to another subnet or status is
// cleared.
// Errors name the subnet and the fixed IP.
func subnetDetails(ctx context.Context, sc *gophercloud.ServiceClient, saved, obs []v1alpha1.ObservedFixedIP) error {
	known := map[string]v1alpha1.ObservedFixedIP{}
	for _, s := range saved {
		if s.SubnetCIDR != "" {
			known[s.SubnetID] = s
		}
	}
	for i := range obs {
		k, ok := known[obs[i].SubnetID]
		if !ok {
			sn, err := subnets.Get(ctx, sc, obs[i].SubnetID).Extract()
			if err != nil {
				return openstack.Wrap(err, fmt.Sprintf(errSubnet, obs[i].SubnetID, obs[i].IPAddress))
			}
			k = v1alpha1.ObservedFixedIP{SubnetCIDR: sn.CIDR, GatewayIP: sn.GatewayIP}
			known[obs[i].SubnetID] = k
		}
		obs[i].SubnetCIDR, obs[i].GatewayIP = k.SubnetCIDR, k.GatewayIP
	}
	return nil
}

// createOpts is the body of POST /v2.0/ports: the base attributes, the
// port-security extension's port_security_enabled and tags. Neutron takes
// tags in the create body only when its ML2 extension driver
// tag_ports_during_bulk_creation is enabled and silently drops them
// otherwise, so Create checks the answer and sets them with PUT .../tags
// when they are missing.
type createOpts struct {
	ports.CreateOpts
	PortSecurityEnabled *bool
	Tags                []string
}

// ToPortCreateMap builds the request body.
func (o createOpts) ToPortCreateMap() (map[string]any, error) {
	body, err := o.CreateOpts.ToPortCreateMap()
	if err != nil {
		return nil, err
	}
	p := body["port"].(map[string]any)
	if o.PortSecurityEnabled != nil {
		p["port_security_enabled"] = *o.PortSecurityEnabled
	}
	if len(o.Tags) > 0 {
		p["tags"] = o.Tags
	}
	return body, nil
}

// updateOpts is the body and headers of PUT /v2.0/ports/{id}: the changed
// base attributes, the port-security extension's port_security_enabled and
// the If-Match: revision_number=N header
// (https://docs.openstack.org/api-ref/network/v2/#revisions), so that a
// port changed since Observe read it gets 412 RevisionNumberConstraintFailed
// instead of a blind overwrite. gophercloud reads headers only from the top
// level of the options struct, hence RevisionNumber here.
type updateOpts struct {
	ports.UpdateOpts
	PortSecurityEnabled *bool
	RevisionNumber      *int `h:"If-Match"`
}

// ToPortUpdateMap builds the request body.
func (o updateOpts) ToPortUpdateMap() (map[string]any, error) {
	body, err := o.UpdateOpts.ToPortUpdateMap()
	if err != nil {
		return nil, err
	}
	if o.PortSecurityEnabled != nil {
		body["port"].(map[string]any)["port_security_enabled"] = *o.PortSecurityEnabled
	}
	return body, nil
}
