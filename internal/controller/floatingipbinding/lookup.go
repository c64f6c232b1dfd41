package floatingipbinding

import (
	"context"
	"fmt"
	"regexp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

const (
	errLookupAddress = "cannot look up floating IP %s"
	errAmbiguous     = "%d floating IPs match %s (%v): expected at most one; remove the extra ones"
)

// uuid matches a Neutron ID.
var uuid = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// externalID is the floating IP's ID from mg's external name, or "" while
// it is not known. Only a Neutron UUID counts: an external name set to
// anything else (by hand, or by an initializer naming it after the MR) is
// not looked up as an ID.
func externalID(mg *v1alpha1.FloatingIPBinding) string {
	if n := meta.GetExternalName(mg); uuid.MatchString(n) {
		return n
	}
	return ""
}

// pinned says whether mg pins an existing, customer-owned floating IP.
func pinned(mg *v1alpha1.FloatingIPBinding) bool {
	return mg.Spec.ForProvider.FloatingIPAddress != nil
}

// pinnedAddress is mg's pinned floating IP address, or "".
func pinnedAddress(mg *v1alpha1.FloatingIPBinding) string {
	if a := mg.Spec.ForProvider.FloatingIPAddress; a != nil {
		return string(*a)
	}
	return ""
}

// byAddress returns the project's floating IP with address addr, or nil
// when there is none (Neutron answers 200 with an empty list), with one GET
// floatingips?floating_ip_address=addr.
func byAddress(ctx context.Context, sc *gophercloud.ServiceClient, addr string) (*floatingips.FloatingIP, error) {
	fip, err := only(ctx, sc, floatingips.ListOpts{FloatingIP: addr}, addr)
	if err != nil {
		return nil, fmt.Errorf(errLookupAddress+": %w", addr, err)
	}
	return fip, nil
}

// only lists the floating IPs opts selects and returns the one there is,
// nil when there is none, and an error when there are several.
func only(ctx context.Context, sc *gophercloud.ServiceClient, opts floatingips.ListOpts, what string) (*floatingips.FloatingIP, error) {
	pages, err := floatingips.List(sc, opts).AllPages(ctx)
	if err != nil {
		return nil, openstack.Wrap(err, "list")
	}
	all, err := floatingips.ExtractFloatingIPs(pages)
	if err != nil {
		return nil, err
	}
	switch len(all) {
	case 0:
		return nil, nil
	case 1:
		return &all[0], nil
	}
	ids := make([]string, len(all))
	for i := range all {
		ids[i] = all[i].ID
	}
	return nil, fmt.Errorf(errAmbiguous, len(all), what, ids)
}
