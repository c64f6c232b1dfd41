package port

import (
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsecurity"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// resourceType is the path segment of ports in Neutron's tag API
// (https://docs.openstack.org/api-ref/network/v2/#standard-attributes-tag-extension).
const resourceType = "ports"

// neutronPort is a port as Neutron returns it, with the port-security
// extension's port_security_enabled.
type neutronPort struct {
	ports.Port
	portsecurity.PortSecurityExt
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
