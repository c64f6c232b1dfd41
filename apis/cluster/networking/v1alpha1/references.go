package v1alpha1

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/reference"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
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
