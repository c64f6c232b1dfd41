package floatingipbinding

import (
	"regexp"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
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

// observation is status.atProvider for fip. The port and fixed IP of a
// floating IP bound to a port that is not the binding's are left out: in a
// project shared by tenants that port may be another namespace's, and a
// tenant reads its binding's status.
func observation(mg *v1alpha1.FloatingIPBinding, fip *floatingips.FloatingIP) v1alpha1.FloatingIPBindingObservation {
	o := v1alpha1.FloatingIPBindingObservation{
		FloatingIPID:      fip.ID,
		FloatingIPAddress: fip.FloatingIP,
		Attached:          attached(mg, fip),
		Pinned:            pinned(mg),
		Status:            fip.Status,
		RevisionNumber:    fip.RevisionNumber,
	}
	if boundToUs(mg, fip) {
		o.PortID, o.FixedIP = fip.PortID, fip.FixedIP
	}
	return o
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

// newDescription returns the description an Update writes to fip, nil
// when it needs none: for an allocated binding the spec's when it differs,
// the marker kept, and the marker in place of an earlier release's
// (openstack.Remark); for a pinned one never (the customer's).
func newDescription(mg *v1alpha1.FloatingIPBinding, fip *floatingips.FloatingIP) *string {
	if pinned(mg) {
		return nil
	}
	desc, _ := openstack.Unmark(mg, fip.Description)
	_, stale := openstack.Remark(mg, fip.Description)
	if p := mg.Spec.ForProvider; stale || p.Description != nil && *p.Description != desc {
		return ptr.To(openstack.KeepMark(mg, fip.Description, ptr.Deref(p.Description, desc)))
	}
	return nil
}

// state is what a binding controls of a floating IP.
type state struct {
	PortID      string
	FixedIP     string
	Description string
	// LegacyMarker says that the description carries an earlier
	// release's marker, which an allocated binding replaces with its
	// marker (openstack.Remark).
	LegacyMarker bool
}

// diff compares what mg wants of fip with what fip is, as go-cmp's diff
// (empty when up to date). A binding with no port leaves the association
// alone; a pinned binding never controls the description of the
// customer's floating IP; the marker in an allocated one's is no drift, an
// earlier release's is.
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
		_, observed.LegacyMarker = openstack.Remark(mg, fip.Description)
	}
	return cmp.Diff(desired, observed)
}

// hold is how long a pinned binding leaves alone a floating IP that
// someone took off its port before it takes it back: the time a person has
// between the rollback's two commands (unset, set on the VM's port).
// Taking it back meanwhile races the second command, and Neutron's
// If-Match does not settle that race: its revision plugin clears the
// constraint from the request's context the first time it reads it, so a
// transaction retried after a concurrent update (StaleDataError) runs
// without it, and the binding's PUT can land after the person's and move
// the floating IP off the VM again (read in Neutron's
// revision_plugin.py; the symptom seen once in TestLiveRunbook: the
// claim attached, the qrouter DNATing to the gateway, 3 minutes after the
// rollback).
const hold = 2 * time.Minute

// releasedAt is status.atProvider.releasedAt of a pinned binding that
// observes fip after prev, its last observation: the time it first saw fip
// on no port after prev had it attached, kept while fip stays on no port;
// nil otherwise.
func releasedAt(mg *v1alpha1.FloatingIPBinding, prev v1alpha1.FloatingIPBindingObservation, fip *floatingips.FloatingIP) *metav1.Time {
	switch {
	case !pinned(mg) || fip.PortID != "":
		return nil
	case prev.ReleasedAt != nil:
		return prev.ReleasedAt
	case prev.Attached:
		now := metav1.Now()
		return &now
	}
	return nil
}

// holding says whether mg saw its floating IP released less than hold ago.
func holding(mg *v1alpha1.FloatingIPBinding) bool {
	at := mg.Status.AtProvider.ReleasedAt
	return at != nil && time.Since(at.Time) < hold
}
