package floatingipbinding

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// Error messages; %s are floating IPs (address or Neutron ID), ports and
// networks.
const (
	errGone          = "cannot read floating IP %s: Neutron no longer has it"
	errAllocate      = "cannot allocate a floating IP from network %s"
	errAssociate     = "cannot associate floating IP %s with port %s"
	errUpdate        = "cannot update floating IP %s"
	errDisassociate  = "cannot disassociate floating IP %s from port %s"
	errNoExternal    = "cannot update the floating IP of this binding: it is not known yet (no external name)"
	errLookupAddress = "cannot look up floating IP %s"
	errLookupPort    = "cannot look up the floating IP on port %s"
	errAmbiguous     = "cannot tell which of %d floating IPs matching %s (%v) is this binding's: remove the extra ones"

	// errPinnedMissing and errBoundElsewhere are the runbook's pinning
	// contract: a pinned floating IP must exist, and it is never taken from
	// another port. errBoundElsewhere does not name that other port: in a
	// project shared by tenants it may be another namespace's (a VM's in
	// the runbook's pre-stage, whose owner knows it); %s are the address,
	// the binding's port and the address again.
	errPinnedMissing  = "floating IP %s does not exist in the project: a pinned floating IP (spec.forProvider.floatingIpAddress) must be allocated beforehand"
	errBoundElsewhere = "floating IP %s is associated with another port, not this binding's port %s: disassociate it there first " +
		"(runbook: cutover, openstack floating ip unset --port %s), or pin another address"
	// errReleased is a pinned floating IP someone took off the binding's
	// port: %s are the address, the port, hold and when it left.
	errReleased = "floating IP %s was taken off port %s and is on no port (runbook: rollback, set it on the VM's port next): " +
		"the binding takes it back if it is still on no port %s after it left (status.atProvider.releasedAt %s)"

	// errPortTaken is Neutron's 409 FloatingIPPortAlreadyAssociated told
	// from the binding's side: %s are the port, the floating IP already on
	// it and its ID, what the binding wanted, and that floating IP again
	// (the OpenStack client's unset takes the floating IP; --port is a
	// flag). The binding never takes
	// a floating IP it does not own from its port, nor releases it.
	errPortTaken = "port %s already has floating IP %s (%s), which is not this binding's %s: " +
		"disassociate it from the port (openstack floating ip unset --port %s), or pin it with spec.forProvider.floatingIpAddress"
	// conflictPortTaken is Neutron's error type for a port that already
	// has a floating IP.
	conflictPortTaken = "FloatingIPPortAlreadyAssociated"
)

// external binds one FloatingIPBinding's floating IP through Neutron.
type external struct {
	neutron *gophercloud.ServiceClient
	// settle says when an interrupted create has surely made nothing.
	settle openstack.Settling
	// observed is the floating IP as Observe read it, for Update and
	// Delete in the same reconcile (the reconciler connects anew for every
	// reconcile): one GET per reconcile.
	observed *floatingips.FloatingIP
}

// Observe reads the binding's floating IP with one GET: by its ID (the
// external name) once known; before that, a pinned binding looks its
// address up and an allocated one looks up the floating IP whose
// description carries the binding's marker (openstack.LookupCreated: a
// create whose answer was lost, or a deleted binding of the same name
// applied again), and adopts what it finds as the external name. Observe never changes
// Neutron.
//
// A pinned address that does not exist is an error naming the address
// (Synced=False), except while the binding is being deleted. A floating
// IP bound to another port is reported as not up to date: Update refuses
// it with an error saying so, without naming that port. During deletion a pinned floating IP
// exists for the reconciler only while it is bound to the binding's port,
// since Delete only disassociates it. A pinned floating IP that the last
// observation had on the binding's port and that is on no port now is
// noted as released (status.atProvider.releasedAt, written with the
// status as every observation: no update of the object of its own): the
// rollback's first step, after which associate leaves it alone for hold.
func (e *external) Observe(ctx context.Context, mg *v1alpha1.FloatingIPBinding) (managed.ExternalObservation, error) {
	fip, adopted, err := e.find(ctx, mg)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	e.observed = fip
	prev := mg.Status.AtProvider
	if fip == nil {
		mg.Status.AtProvider = v1alpha1.FloatingIPBindingObservation{Pinned: pinned(mg)}
		return managed.ExternalObservation{ResourceExists: false}, nil
	}
	if adopted {
		meta.SetExternalName(mg, fip.ID)
	}
	mg.Status.AtProvider = observation(mg, fip)
	mg.Status.AtProvider.ReleasedAt = releasedAt(mg, prev, fip)
	if meta.WasDeleted(mg) {
		if pinned(mg) {
			return managed.ExternalObservation{ResourceExists: boundToUs(mg, fip)}, nil
		}
		return managed.ExternalObservation{ResourceExists: true}, nil
	}
	// An allocated binding whose create followed an interrupted one
	// releases a twin that Neutron allocated late (SweepTwins).
	swept := false
	if !pinned(mg) {
		if swept, err = openstack.SweepTwins(ctx, e.neutron, openstack.FloatingIPs, mg, e.settle); err != nil {
			return managed.ExternalObservation{}, err
		}
	}
	// An adopted external name is saved with the late-initialised spec,
	// so that the next Observe is one GET by ID; so is the end of the
	// twin check.
	lateInit := lateInitialize(mg, fip) || adopted || swept
	d := diff(mg, fip)
	setReadiness(mg)
	return managed.ExternalObservation{
		ResourceExists:          true,
		ResourceUpToDate:        d == "",
		ResourceLateInitialized: lateInit,
		Diff:                    d,
	}, nil
}

// find returns the binding's floating IP, or nil when it does not exist,
// and whether it was found by a lookup rather than by the external name.
func (e *external) find(ctx context.Context, mg *v1alpha1.FloatingIPBinding) (*floatingips.FloatingIP, bool, error) {
	if id := externalID(mg); id != "" {
		fip, err := e.read(ctx, id)
		switch {
		case err != nil:
			return nil, false, err
		case fip != nil:
			return fip, false, nil
		case !pinned(mg):
			return e.relocate(ctx, mg, id)
		}
		// A pinned floating IP whose ID is gone: the address may have
		// been allocated again; look it up.
	}
	if addr := pinnedAddress(mg); addr != "" {
		fip, err := byAddress(ctx, e.neutron, addr)
		switch {
		case err != nil:
			return nil, false, err
		case fip == nil && meta.WasDeleted(mg):
			return nil, false, nil
		case fip == nil:
			return nil, false, fmt.Errorf(errPinnedMissing, addr)
		}
		return fip, true, nil
	}
	id, err := openstack.LookupCreated(ctx, e.neutron, openstack.FloatingIPs, mg, e.settle)
	if err != nil || id == "" {
		return nil, false, err
	}
	fip, err := e.read(ctx, id)
	if err == nil && fip == nil {
		err = fmt.Errorf(errGone, id)
	}
	return fip, err == nil, err
}

// relocate returns the allocated floating IP carrying the binding's marker
// when the one its external name names (gone) is not it
// (openstack.Relocate), or nil when there is none, and whether it was
// found.
func (e *external) relocate(ctx context.Context, mg *v1alpha1.FloatingIPBinding, gone string) (*floatingips.FloatingIP, bool, error) {
	id, err := openstack.Relocate(ctx, e.neutron, openstack.FloatingIPs, mg, gone)
	if err != nil || id == "" {
		return nil, false, err
	}
	fip, err := e.read(ctx, id)
	return fip, fip != nil, err
}

// Create binds a floating IP to the port. Pinned: it looks the address up
// (an error naming it when it does not exist), records its ID as the
// external name and associates it as Update does, refusing one bound to
// another port. Allocated: it allocates a floating IP from
// floatingNetworkId with the port, fixed IP and description in one POST,
// the description carrying the binding's marker (openstack.Mark) by which
// Observe, or the CreateRecovery of a provider killed before the ID was
// saved, finds it again, and records its ID. A port that already has a
// floating IP (409 FloatingIPPortAlreadyAssociated) is answered by
// adopted (see portTaken).
func (e *external) Create(ctx context.Context, mg *v1alpha1.FloatingIPBinding) (managed.ExternalCreation, error) {
	p := mg.Spec.ForProvider
	if addr := pinnedAddress(mg); addr != "" {
		fip, err := byAddress(ctx, e.neutron, addr)
		if err != nil {
			return managed.ExternalCreation{}, err
		}
		if fip == nil {
			return managed.ExternalCreation{}, fmt.Errorf(errPinnedMissing, addr)
		}
		meta.SetExternalName(mg, fip.ID)
		_, err = e.associate(ctx, mg, fip)
		return managed.ExternalCreation{}, err
	}
	network := string(ptr.Deref(p.FloatingNetworkID, ""))
	fip, err := floatingips.Create(ctx, e.neutron, floatingips.CreateOpts{
		FloatingNetworkID: network,
		PortID:            ptr.Deref(p.PortID, ""),
		FixedIP:           string(ptr.Deref(p.FixedIP, "")),
		Description:       openstack.Mark(mg, ptr.Deref(p.Description, "")),
	}).Extract()
	if err != nil {
		err = openstack.RecordRefusal(mg, err)
		ours, terr := e.portTaken(ctx, mg, err)
		if ours == nil {
			return managed.ExternalCreation{}, cmp.Or(terr, openstack.Wrap(err, fmt.Sprintf(errAllocate, network)))
		}
		fip = ours
	}
	meta.SetExternalName(mg, fip.ID)
	return managed.ExternalCreation{}, nil
}

// portTaken looks at the floating IPs already on the binding's port when
// err is Neutron's 409 FloatingIPPortAlreadyAssociated, with one GET
// floatingips?port_id=...&floating_network_id=... (and fixed_ip_address
// when the spec names one: a port with two fixed IPs may hold a floating
// IP on each). One that carries the binding's marker, anywhere in the
// list, was allocated by this binding (its create answer lost, or the
// provider killed, while its description changed since) and is returned
// to be adopted; otherwise the first is not the binding's and is an error
// that names it and the fix (errPortTaken), never taken or released. For
// any other err it returns nil and no error.
func (e *external) portTaken(ctx context.Context, mg *v1alpha1.FloatingIPBinding, err error) (*floatingips.FloatingIP, error) {
	a, ok := openstack.AsAPIError(err)
	port := ptr.Deref(mg.Spec.ForProvider.PortID, "")
	if !ok || a.Type != conflictPortTaken || port == "" {
		return nil, nil
	}
	p := mg.Spec.ForProvider
	pages, lerr := floatingips.List(e.neutron, floatingips.ListOpts{PortID: port, FixedIP: string(ptr.Deref(p.FixedIP, "")),
		FloatingNetworkID: string(ptr.Deref(p.FloatingNetworkID, ""))}).AllPages(ctx)
	if lerr != nil {
		return nil, openstack.Wrap(lerr, fmt.Sprintf("%s: "+errLookupPort, a, port))
	}
	on, lerr := floatingips.ExtractFloatingIPs(pages)
	if lerr != nil || len(on) == 0 {
		// Gone in the meantime: the next reconcile tries again.
		return nil, cmp.Or(lerr, error(a))
	}
	if !pinned(mg) {
		for i := range on {
			if _, marked := openstack.Unmark(mg, on[i].Description); marked {
				return &on[i], nil
			}
		}
	}
	fip := &on[0]
	want := "allocated floating IP"
	if pinned(mg) {
		want = "pinned floating IP " + pinnedAddress(mg)
	}
	return nil, fmt.Errorf(errPortTaken, port, fip.FloatingIP, fip.ID, want, fip.FloatingIP)
}

// Update associates the floating IP as Observe read it (read again only
// when Update runs without Observe) with the wanted port (and fixed IP)
// with If-Match: revision_number, so that a concurrent change
// gets 412 RevisionNumberConstraintFailed, a retryable error, instead of
// a stolen floating IP. A pinned floating IP bound to another port is left
// untouched and the error says so (without naming that port). An allocated floating IP also
// gets its description corrected, keeping the binding's marker
// (openstack.KeepMark).
func (e *external) Update(ctx context.Context, mg *v1alpha1.FloatingIPBinding) (managed.ExternalUpdate, error) {
	id := externalID(mg)
	if id == "" {
		return managed.ExternalUpdate{}, errors.New(errNoExternal)
	}
	fip, err := e.read(ctx, id)
	if err == nil && fip == nil {
		err = fmt.Errorf(errGone, id)
	}
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	if fip, err = e.associate(ctx, mg, fip); err != nil {
		return managed.ExternalUpdate{}, err
	}
	// After a successful update the reconciler waits a poll interval
	// before it observes again: status says at once what Neutron answered,
	// so that the cutover shows (and the Gateway starts) without that wait.
	mg.Status.AtProvider = observation(mg, fip)
	setReadiness(mg)
	return managed.ExternalUpdate{}, nil
}

// associate sends the one PUT that makes fip what the binding wants, if
// any, guarded by fip's revision number, and returns the floating IP as
// Neutron answered it (fip when nothing was sent). It refuses to take a
// pinned floating IP from another port: Neutron would move it silently
// (200), nor, for hold, one that someone took off its port (the runbook's
// rollback, noteRelease). An allocated floating IP, owned by the binding,
// is moved.
func (e *external) associate(ctx context.Context, mg *v1alpha1.FloatingIPBinding, fip *floatingips.FloatingIP) (*floatingips.FloatingIP, error) {
	p := mg.Spec.ForProvider
	wanted := ptr.Deref(p.PortID, "")
	opts := floatingips.UpdateOpts{}
	change := false
	what := fmt.Sprintf(errUpdate, fip.FloatingIP)
	if wanted != "" && !attached(mg, fip) {
		if pinned(mg) && fip.PortID != "" && fip.PortID != wanted {
			// The runbook's pre-stage: the cutover frees it.
			return nil, mrsetup.RetryWithin(fmt.Errorf(errBoundElsewhere, fip.FloatingIP, wanted, fip.FloatingIP), fast)
		}
		if pinned(mg) && fip.PortID == "" && holding(mg) {
			// The runbook's rollback: its next step sets it on the VM's port.
			return nil, mrsetup.RetryWithin(fmt.Errorf(errReleased, fip.FloatingIP, wanted, hold, mg.Status.AtProvider.ReleasedAt.UTC().Format(time.RFC3339)), fast)
		}
		opts.PortID = &wanted
		opts.FixedIP = string(ptr.Deref(p.FixedIP, ""))
		change = true
		what = fmt.Sprintf(errAssociate, fip.FloatingIP, wanted)
	}
	if d := newDescription(mg, fip); d != nil {
		opts.Description = d
		change = true
	}
	if !change {
		return fip, nil
	}
	rev := fip.RevisionNumber
	opts.RevisionNumber = &rev
	updated, err := floatingips.Update(ctx, e.neutron, fip.ID, opts).Extract()
	if err != nil {
		if _, terr := e.portTaken(ctx, mg, err); terr != nil {
			return nil, terr
		}
		return nil, openstack.Wrap(err, what)
	}
	return updated, nil
}

// Delete releases an allocated floating IP (DELETE; one already gone is
// released), and any twin a create for the binding allocated
// (openstack.DeleteCreated). A pinned floating IP
// is customer-owned and never released: Delete only disassociates it
// (port_id null, with If-Match: revision_number), and only when it is
// bound to the binding's port. A floating IP already gone is no error.
func (e *external) Delete(ctx context.Context, mg *v1alpha1.FloatingIPBinding) (managed.ExternalDelete, error) {
	id := externalID(mg)
	if id == "" {
		return managed.ExternalDelete{}, nil
	}
	if !pinned(mg) {
		return managed.ExternalDelete{}, openstack.DeleteCreated(ctx, e.neutron, openstack.FloatingIPs, mg, id)
	}
	fip, err := e.read(ctx, id)
	switch {
	case err != nil:
		return managed.ExternalDelete{}, err
	case fip == nil || !boundToUs(mg, fip):
		return managed.ExternalDelete{}, nil
	}
	none, rev := "", fip.RevisionNumber
	_, err = floatingips.Update(ctx, e.neutron, fip.ID, floatingips.UpdateOpts{PortID: &none, RevisionNumber: &rev}).Extract()
	return managed.ExternalDelete{}, openstack.Wrap(err, fmt.Sprintf(errDisassociate, fip.FloatingIP, fip.PortID))
}

// read returns floating IP id as Observe read it, or with one GET when
// Observe did not read it in this reconcile; nil when Neutron has no such
// floating IP (404).
func (e *external) read(ctx context.Context, id string) (*floatingips.FloatingIP, error) {
	if e.observed != nil && e.observed.ID == id {
		return e.observed, nil
	}
	fip := &floatingips.FloatingIP{}
	if found, err := openstack.Get(ctx, e.neutron, openstack.FloatingIPs, id, fip); err != nil || !found {
		return nil, err
	}
	return fip, nil
}

// Disconnect does nothing: the Neutron client is cached per ProviderConfig.
func (e *external) Disconnect(context.Context) error { return nil }

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
