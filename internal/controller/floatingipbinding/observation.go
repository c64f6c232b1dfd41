package floatingipbinding

import (
	"slices"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// observation is status.atProvider for fip.
func observation(mg *v1alpha1.FloatingIPBinding, fip *floatingips.FloatingIP) v1alpha1.FloatingIPBindingObservation {
	return v1alpha1.FloatingIPBindingObservation{
		FloatingIPID:      fip.ID,
		FloatingIPAddress: fip.FloatingIP,
		PortID:            fip.PortID,
		FixedIP:           fip.FixedIP,
		Attached:          attached(mg, fip),
		Pinned:            pinned(mg),
		Status:            fip.Status,
		RevisionNumber:    fip.RevisionNumber,
	}
}

// attached says whether fip is bound to mg's port (and fixed IP, when the
// spec names one).
func attached(mg *v1alpha1.FloatingIPBinding, fip *floatingips.FloatingIP) bool {
	p := mg.Spec.ForProvider
	return boundToUs(mg, fip) && (p.FixedIP == nil || string(*p.FixedIP) == fip.FixedIP)
}

// boundToUs says whether fip is bound to mg's port.
func boundToUs(mg *v1alpha1.FloatingIPBinding, fip *floatingips.FloatingIP) bool {
	want := ptr.Deref(mg.Spec.ForProvider.PortID, "")
	return want != "" && fip.PortID == want
}

// hasTag says whether fip carries tag.
func hasTag(fip *floatingips.FloatingIP, tag string) bool {
	return slices.Contains(fip.Tags, tag)
}

// setReadiness makes mg Available when its floating IP is attached, or
// exists when no port is wanted; Unavailable otherwise (a pinned floating
// IP still bound to another port, before the cutover).
func setReadiness(mg *v1alpha1.FloatingIPBinding) {
	if mg.Status.AtProvider.Attached || mg.Spec.ForProvider.PortID == nil {
		mg.SetConditions(xpv2.Available())
		return
	}
	mg.SetConditions(xpv2.Unavailable())
}

// lateInitialize fills the description of an allocated binding from fip
// when the spec leaves it nil, and says whether it did. Nothing else is
// late-initialised: taking the port from Neutron would make a pinned
// binding adopt the port that holds the floating IP before the cutover.
func lateInitialize(p *v1alpha1.FloatingIPBindingParameters, fip *floatingips.FloatingIP) bool {
	if p.FloatingIPAddress != nil || p.Description != nil || fip.Description == "" {
		return false
	}
	p.Description = ptr.To(fip.Description)
	return true
}

// state is what a binding controls of a floating IP.
type state struct {
	PortID      string
	FixedIP     string
	Description string
	Tagged      bool
}

// diff compares what mg wants of fip with what fip is, as go-cmp's diff
// (empty when up to date). A binding with no port leaves the association
// alone; a pinned binding never controls the description or tags of the
// customer's floating IP.
func diff(mg *v1alpha1.FloatingIPBinding, fip *floatingips.FloatingIP) string {
	p := mg.Spec.ForProvider
	observed := state{PortID: fip.PortID, FixedIP: fip.FixedIP, Description: fip.Description}
	desired := observed
	if p.PortID != nil {
		desired.PortID = *p.PortID
	}
	if p.FixedIP != nil && p.PortID != nil {
		desired.FixedIP = string(*p.FixedIP)
	}
	if !pinned(mg) {
		desired.Description = ptr.Deref(p.Description, fip.Description)
		observed.Tagged = hasTag(fip, openstack.CreatedByTag(mg))
		desired.Tagged = true
	}
	return cmp.Diff(desired, observed)
}
