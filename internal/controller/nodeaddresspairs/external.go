package nodeaddresspairs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// Error messages; %s are Neutron IDs of ports and networks, and a Node's
// name.
const (
	errNoPort       = "cannot add pairs: spec.forProvider.portId is not set; set it to the gateway's Neutron port ID, or name the gateway's Port with portIdRef or portIdSelector"
	errNetworkMoved = "cannot move pairs between networks: the gateway's Neutron port %s (spec.forProvider.portId) is on network %s, the pairs this resource added on network %s; give it a port on %s, or delete this resource (which removes its pairs) and create a new one"
	errListPorts    = "cannot list the Neutron ports of network %s"
	errListNodes    = "cannot list the Nodes selected by spec.forProvider.nodeSelector"
	errUpdatePort   = "cannot update the allowed address pairs of node %s's Neutron port %s"
	errSaveRecord   = "cannot save status.atProvider.nodePorts before adding pairs"
)

// external manages one NodeAddressPairs' pairs with one Neutron client and
// a reader of the gateway cluster's Nodes.
//
// Allowed address pairs are a list inside a node's port, which other tools
// (keepalived setups, other gateways) share. This resource owns only the
// pairs it added, recorded with their port in
// status.atProvider.nodePorts; it writes a port with one PUT of its whole
// list carrying If-Match: revision_number, so that a port another tool
// changed since Observe read it gets 412 RevisionNumberConstraintFailed
// (and the next reconcile reads it again) instead of losing that tool's
// change.
//
// The record is saved before the write (see apply): a provider that dies
// between the PUT and the reconciler's status update must not leave pairs
// it added unrecorded, which it would then take for another tool's and
// never remove.
type external struct {
	neutron *gophercloud.ServiceClient
	nodes   client.Reader
	// kube saves the resource's status (the record) before a port write.
	kube client.StatusClient
	// observed is the plan Observe made, for Create, Update and Delete in
	// the same reconcile (the reconciler connects anew for every one).
	observed []change
}

// created says whether Create has run: it sets the external name (to the
// gateway port's ID at the time). Setup runs no initializer; should one
// set the external name to metadata.name, that placeholder, unless it
// happens to be the port's ID, means "not created" too.
func created(mg *v1alpha1.NodeAddressPairs) bool {
	en := meta.GetExternalName(mg)
	return en != "" && (en != mg.GetName() || en == ptr.Deref(mg.Spec.ForProvider.PortID, ""))
}

// Observe reads the gateway's port and the ports of its network (see
// ports: one port list at rest) and the selected Nodes (from the cache),
// and plans each node port's change (see plan). The resource exists once
// Create has run; while it is being deleted, only as long as a port holds
// one of its pairs. It is up to date when no port needs a change.
// status.atProvider.nodePorts records the pairs of this resource the ports
// hold; Ready is True when every selected node's port holds every pair.
// portId follows the Port it references: a gateway port made anew on the
// same network moves the pairs to its address and MAC (the old ones are in
// the record) and the external name to the new port; one on another
// network is refused.
func (e *external) Observe(ctx context.Context, mg *v1alpha1.NodeAddressPairs) (managed.ExternalObservation, error) {
	if !created(mg) {
		// Create has not run, so no pair was added (Update adds them).
		return managed.ExternalObservation{}, nil
	}
	deleting := meta.WasDeleted(mg)
	id := ptr.Deref(mg.Spec.ForProvider.PortID, "")
	if id == "" {
		// Deleted while its reference no longer resolves.
		id = meta.GetExternalName(mg)
	}
	gw, netPorts, err := e.ports(ctx, id, mg, deleting)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	var want []pair
	var tg []target
	var problems []string
	if gw != nil && !deleting {
		want = desiredPairs(gw, mg.Spec.ForProvider.CIDRs)
		if tg, problems, err = e.targets(ctx, mg); err != nil {
			return managed.ExternalObservation{}, err
		}
	}
	obs := v1alpha1.NodeAddressPairsObservation{NetworkID: networkOf(gw, mg)}
	changes, unmapped := plan(want, tg, netPorts, mg.Status.AtProvider.NodePorts)
	e.observed = changes
	diff := summarize(changes, &obs)
	mg.Status.AtProvider = obs
	if deleting {
		return managed.ExternalObservation{ResourceExists: len(obs.NodePorts) > 0, ResourceUpToDate: true}, nil
	}
	gone := ""
	if gw == nil {
		gone = id
	}
	setReady(mg, problems, unmapped, obs.NetworkID, gone, diff)
	// The external name follows the gateway's port, so that it names no
	// port Neutron has deleted; the reconciler saves it.
	followed := gw != nil && meta.GetExternalName(mg) != gw.ID
	if followed {
		meta.SetExternalName(mg, gw.ID)
	}
	return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: len(diff) == 0, Diff: strings.Join(diff, "; "),
		ResourceLateInitialized: followed}, nil
}

// ports reads the gateway's port id (nil when it is gone) and the ports of
// the network whose ports hold the pairs. At rest that is one request: the
// network recorded in status is listed, and its ports include the
// gateway's. A gateway port missing from that list (gone, or made anew on
// another network) is read by ID, and a network not yet recorded (the
// first Observe) or new is listed after it: two or three requests, once.
// A gateway port on another network than the pairs this resource added is
// refused, as the pairs cannot move between networks.
func (e *external) ports(ctx context.Context, id string, mg *v1alpha1.NodeAddressPairs, deleting bool) (*neutronPort, []neutronPort, error) {
	was := mg.Status.AtProvider.NetworkID
	var netPorts []neutronPort
	if was != "" {
		var err error
		if netPorts, err = e.networkPorts(ctx, was); err != nil {
			return nil, nil, err
		}
		for i := range netPorts {
			if netPorts[i].ID == id {
				return &netPorts[i], netPorts, nil
			}
		}
	}
	gw, err := e.gatewayPort(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if gw != nil && !deleting && was != "" && gw.NetworkID != was && len(mg.Status.AtProvider.NodePorts) > 0 {
		return nil, nil, fmt.Errorf(errNetworkMoved, id, gw.NetworkID, was, was)
	}
	if network := networkOf(gw, mg); network != was {
		netPorts, err = e.networkPorts(ctx, network)
	}
	return gw, netPorts, err
}

// summarize records in obs the pairs of this resource each node port holds
// and the number of selected nodes whose port needs no change, and returns
// the changes still needed, one line per port.
func summarize(changes []change, obs *v1alpha1.NodeAddressPairsObservation) []string {
	var diff []string
	for _, c := range changes {
		if r := record(c.node, c.port.ID, c.before); r != nil {
			obs.NodePorts = append(obs.NodePorts, *r)
		}
		if c.needed() {
			diff = append(diff, fmt.Sprintf("node %s port %s: add [%s] remove [%s]", c.node, c.port.ID, describe(c.add), describe(c.remove)))
		} else if c.selected {
			obs.Nodes++
		}
	}
	return diff
}

// setReady sets Ready: False naming the problems (nodes that cannot be
// mapped, the selected nodes unmapped that have no port on network, the
// gateway port gone when gone is its ID) or else the ports not yet updated
// (diff); True when there are neither.
func setReady(mg *v1alpha1.NodeAddressPairs, problems, unmapped []string, network, gone string, diff []string) {
	for _, n := range unmapped {
		problems = append(problems, fmt.Sprintf("node %s: no Neutron port on network %s has its instance's device_id: give the node a port on the gateway's network, or leave it out with spec.forProvider.nodeSelector", n, network))
	}
	if gone != "" {
		problems = append(problems, fmt.Sprintf("the gateway's Neutron port %s (spec.forProvider.portId) is gone: its pairs are being removed", gone))
	}
	switch {
	case len(problems) > 0:
		mg.SetConditions(xpv2.Unavailable().WithMessage(strings.Join(problems, "; ")))
	case len(diff) > 0:
		mg.SetConditions(xpv2.Unavailable().WithMessage("node ports not yet updated: " + strings.Join(diff, "; ")))
	default:
		mg.SetConditions(xpv2.Available())
	}
}

// gatewayPort reads the gateway's port; nil when it is gone (404).
func (e *external) gatewayPort(ctx context.Context, id string) (*neutronPort, error) {
	gw := &neutronPort{}
	if found, err := openstack.Get(ctx, e.neutron, openstack.Ports, id, gw); err != nil || !found {
		return nil, err
	}
	return gw, nil
}

// targets lists the Nodes that spec.forProvider.nodeSelector selects and
// maps them to their instances (see targets).
func (e *external) targets(ctx context.Context, mg *v1alpha1.NodeAddressPairs) ([]target, []string, error) {
	nl := &corev1.NodeList{}
	if err := e.nodes.List(ctx, nl, client.MatchingLabels(mg.Spec.ForProvider.NodeSelector)); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", errListNodes, err)
	}
	tg, problems := targets(nl.Items)
	return tg, problems, nil
}

// networkPorts lists the ports of network with one request; none when
// network is "" (the gateway's port gone before any was recorded).
func (e *external) networkPorts(ctx context.Context, network string) ([]neutronPort, error) {
	if network == "" {
		return nil, nil
	}
	var out []neutronPort
	pages, err := ports.List(e.neutron, ports.ListOpts{NetworkID: network}).AllPages(ctx)
	if err == nil {
		err = ports.ExtractPortsInto(pages, &out)
	}
	if err != nil {
		return nil, openstack.Wrap(err, fmt.Sprintf(errListPorts, network))
	}
	return out, nil
}

// networkOf is the network whose ports hold the pairs: the gateway port's,
// or, once that port is gone, the one recorded in status.
func networkOf(gw *neutronPort, mg *v1alpha1.NodeAddressPairs) string {
	if gw != nil {
		return gw.NetworkID
	}
	return mg.Status.AtProvider.NetworkID
}

// Create sets the external name to the gateway port's ID and writes
// nothing: the reconciler's update of the external name replaces the
// in-memory status with the stored one, which would lose a record made
// here. The next reconcile observes the resource as existing and Update
// adds the pairs.
func (e *external) Create(_ context.Context, mg *v1alpha1.NodeAddressPairs) (managed.ExternalCreation, error) {
	id := ptr.Deref(mg.Spec.ForProvider.PortID, "")
	if id == "" {
		return managed.ExternalCreation{}, errors.New(errNoPort)
	}
	meta.SetExternalName(mg, id)
	return managed.ExternalCreation{}, nil
}

// Update applies the plan Observe made: one PUT per node port that needs a
// change (see external), recording each written port's pairs in status.
func (e *external) Update(ctx context.Context, mg *v1alpha1.NodeAddressPairs) (managed.ExternalUpdate, error) {
	return managed.ExternalUpdate{}, e.apply(ctx, mg)
}

// Delete removes every pair of this resource from the ports that still
// hold it (Observe plans no additions while the resource is deleted);
// pairs other tools hold, equal or not, stay.
func (e *external) Delete(ctx context.Context, mg *v1alpha1.NodeAddressPairs) (managed.ExternalDelete, error) {
	mg.SetConditions(xpv2.Deleting())
	return managed.ExternalDelete{}, e.apply(ctx, mg)
}

// apply writes the planned changes, port by port, and keeps
// status.atProvider.nodePorts in step with what was written: before the
// first write it saves the record of every pair it is about to add (a
// recorded pair the port then lacks is dropped from the record at the next
// Observe, so an intent that failed claims nothing); after the writes, a
// port written gets its new record, one that failed keeps its old one.
// It stops at the first failed write.
func (e *external) apply(ctx context.Context, mg *v1alpha1.NodeAddressPairs) error {
	var intent []v1alpha1.NodePortPairs
	adds := false
	for _, c := range e.observed {
		if r := record(c.node, c.port.ID, append(slices.Clone(c.before), c.add...)); r != nil {
			intent = append(intent, *r)
		}
		adds = adds || len(c.add) > 0
	}
	if adds {
		mg.Status.AtProvider.NodePorts = intent
		if err := e.kube.Status().Update(ctx, mg); err != nil {
			return fmt.Errorf("%s: %w", errSaveRecord, err)
		}
	}
	var records []v1alpha1.NodePortPairs
	var firstErr error
	for _, c := range e.observed {
		ours := c.before
		if c.needed() && firstErr == nil {
			pairs := newPairs(c)
			rev := c.port.RevisionNumber
			err := ports.Update(ctx, e.neutron, c.port.ID, ports.UpdateOpts{AllowedAddressPairs: &pairs, RevisionNumber: &rev}).Err
			if err != nil {
				firstErr = openstack.Wrap(err, fmt.Sprintf(errUpdatePort, c.node, c.port.ID))
			} else {
				ours = c.ours
			}
		}
		if r := record(c.node, c.port.ID, ours); r != nil {
			records = append(records, *r)
		}
	}
	mg.Status.AtProvider.NodePorts = records
	return firstErr
}

// Disconnect does nothing: the Neutron client is shared per ProviderConfig.
func (e *external) Disconnect(context.Context) error { return nil }
