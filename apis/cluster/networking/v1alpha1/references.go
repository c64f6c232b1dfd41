package v1alpha1

import (
	"slices"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reference"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// FirstFixedIP returns the first fixed IP the Port observed, or "".
func (p *Port) FirstFixedIP() string {
	if len(p.Status.AtProvider.FixedIPs) == 0 {
		return ""
	}
	return p.Status.AtProvider.FixedIPs[0].IPAddress
}

// PortFixedIP extracts the first fixed IP a Port managed resource observed,
// for references that need the port's address rather than its ID (the
// nexthop of RouterRoutes). It returns "" until the Port is created.
func PortFixedIP() reference.ExtractValueFn {
	return func(mg resource.Managed) string {
		// An interface, not *Port: this file must compile before the
		// generated methods that make Port a resource.Managed exist.
		if p, ok := mg.(interface{ FirstFixedIP() string }); ok {
			return p.FirstFixedIP()
		}
		return ""
	}
}

// Resolved references follow the managed resource they name: unlike
// crossplane-runtime's default, which resolves an empty field once and
// keeps the ID for ever, the provider resolves every reference and selector
// at every reconcile (as policy resolve Always does), unless its policy
// says resolve IfNotPresent. A Port managed resource deleted by hand is
// composed again with a new Neutron port, and a binding that kept the old
// port's ID would fail with 404 PortNotFound for ever; re-resolved, it
// follows to the new port. The reads come from the provider's cache; the
// object is written only when a resolved value changed.

// resolveIfNotPresent is the resolve policy that keeps a resolved value
// (crossplane's apis name only Always).
const resolveIfNotPresent xpv2.ResolvePolicy = "IfNotPresent"

// following says whether a reference or selector of policy p is resolved
// at every reconcile.
func following(p *xpv2.Policy) bool {
	return p == nil || p.Resolve == nil || *p.Resolve != resolveIfNotPresent
}

// unresolve clears *value when ref or sel will resolve it again, and *ref
// when sel will select again; a selector's policy decides over the
// reference it selected.
func unresolve(value **string, ref **xpv2.Reference, sel *xpv2.Selector) {
	switch {
	case sel != nil:
		if following(sel.Policy) {
			*value, *ref = nil, nil
		}
	case *ref != nil && following((*ref).Policy):
		*value = nil
	}
}

// unresolveAll is unresolve for a list of values and references: they are
// resolved again unless every reference says IfNotPresent.
func unresolveAll(values *[]string, refs *[]xpv2.Reference, sel *xpv2.Selector) {
	switch {
	case sel != nil:
		if following(sel.Policy) {
			*values, *refs = nil, nil
		}
	case slices.ContainsFunc(*refs, func(r xpv2.Reference) bool { return following(r.Policy) }):
		*values = nil
	}
}

// ClearResolvedReferences clears portId where portIdRef or portIdSelector
// resolves it again (see following).
func (mg *FloatingIPBinding) ClearResolvedReferences() {
	p := &mg.Spec.ForProvider
	unresolve(&p.PortID, &p.PortIDRef, p.PortIDSelector)
}

// ClearResolvedReferences clears portId where portIdRef or portIdSelector
// resolves it again (see following).
func (mg *NodeAddressPairs) ClearResolvedReferences() {
	p := &mg.Spec.ForProvider
	unresolve(&p.PortID, &p.PortIDRef, p.PortIDSelector)
}

// ClearResolvedReferences clears networkId and securityGroupIds where
// their references or selectors resolve them again (see following).
func (mg *Port) ClearResolvedReferences() {
	p := &mg.Spec.ForProvider
	unresolve(&p.NetworkID, &p.NetworkIDRef, p.NetworkIDSelector)
	unresolveAll(&p.SecurityGroupIDs, &p.SecurityGroupIDRefs, p.SecurityGroupIDSelector)
}

// ClearResolvedReferences clears nexthop where nexthopPortRef or
// nexthopPortSelector resolves it again (see following).
func (mg *RouterRoutes) ClearResolvedReferences() {
	p := &mg.Spec.ForProvider
	unresolve(&p.Nexthop, &p.NexthopPortRef, p.NexthopPortSelector)
}
