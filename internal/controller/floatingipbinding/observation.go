package floatingipbinding

import (
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
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
// (the user's part, without the binding's marker) when the spec leaves it
// nil, and says whether it did. Nothing else is
// late-initialised: taking the port from Neutron would make a pinned
// binding adopt the port that holds the floating IP before the cutover.
func lateInitialize(mg *v1alpha1.FloatingIPBinding, fip *floatingips.FloatingIP) bool {
	p := &mg.Spec.ForProvider
	desc, _ := openstack.Unmark(mg, fip.Description)
	if p.FloatingIPAddress != nil || p.Description != nil || desc == "" {
		return false
	}
	p.Description = ptr.To(desc)
	return true
}

// state is what a binding controls of a floating IP.
type state struct {
	PortID      string
	FixedIP     string
	Description string
}

// diff compares what mg wants of fip with what fip is, as go-cmp's diff
// (empty when up to date). A binding with no port leaves the association
// alone; a pinned binding never controls the description of the
// customer's floating IP; the marker in an allocated one's is no drift.
func diff(mg *v1alpha1.FloatingIPBinding, fip *floatingips.FloatingIP) string {
	p := mg.Spec.ForProvider
	desc, _ := openstack.Unmark(mg, fip.Description)
	observed := state{PortID: fip.PortID, FixedIP: fip.FixedIP, Description: desc}
	desired := observed
	if p.PortID != nil {
		desired.PortID = *p.PortID
	}
	if p.FixedIP != nil && p.PortID != nil {
		desired.FixedIP = string(*p.FixedIP)
	}
	if !pinned(mg) {
		desired.Description = ptr.Deref(p.Description, desc)
	}
	return cmp.Diff(desired, observed)
}

// annotationReleased notes on a pinned binding when it saw its floating IP
// taken off its port by someone else (RFC 3339, UTC): the runbook's
// rollback, whose next step sets it on the VM's port. While the note is
// younger than hold, the binding leaves the free floating IP alone.
const annotationReleased = "networking.ipsecgw.io/released-at"

// hold is how long a pinned binding leaves alone a floating IP that
// someone took off its port before it takes it back: the time a person has
// between the rollback's two commands (unset, set on the VM's port).
// Taking it back meanwhile would race the second command, and Neutron's
// If-Match does not settle that race: it forgets the constraint when it
// retries a transaction that met a concurrent update, so the binding's
// PUT can land after the person's and move the floating IP off the VM
// again (seen in TestLiveRunbook: the claim attached for 3 minutes after
// the rollback).
const hold = 2 * time.Minute

// noteRelease keeps annotationReleased of a pinned binding: it sets it when
// fip is on no port while the binding's last observation, prev, had it
// attached, and removes it once fip is on a port again. It says whether
// it changed the annotations (to be saved with the late-initialised spec).
func noteRelease(mg *v1alpha1.FloatingIPBinding, prev v1alpha1.FloatingIPBindingObservation, fip *floatingips.FloatingIP) bool {
	_, noted := mg.GetAnnotations()[annotationReleased]
	switch {
	case !pinned(mg):
		return false
	case fip.PortID != "" && noted:
		meta.RemoveAnnotations(mg, annotationReleased)
		return true
	case fip.PortID == "" && !noted && prev.Attached && prev.PortID == ptr.Deref(mg.Spec.ForProvider.PortID, ""):
		meta.AddAnnotations(mg, map[string]string{annotationReleased: time.Now().UTC().Format(time.RFC3339)})
		return true
	}
	return false
}

// holding says whether mg's annotationReleased is younger than hold
// (false without one, or when it does not parse).
func holding(mg *v1alpha1.FloatingIPBinding) bool {
	at, err := time.Parse(time.RFC3339, mg.GetAnnotations()[annotationReleased])
	return err == nil && time.Since(at) < hold
}
