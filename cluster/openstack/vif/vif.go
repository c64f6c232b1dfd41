// Package vif plugs a lab "VM" (a network namespace standing for a Nova
// instance) into a Neutron port of the lab's Neutron with its real agents
// (AGENTS=1 cluster/openstack/up.sh), the way Nova and os-vif do for the
// linuxbridge agent's vif_type bridge: the port is bound to the agents'
// host for the instance, a tap named from the port's ID is enslaved into the
// agent's bridge of the port's network, and the instance's end of it carries
// the port's MAC and fixed IPs. From then on the agents enforce on that port
// what a real cloud does: security groups and port security (iptables for
// the source IP, ebtables for the source MAC and ARP), allowed address
// pairs, floating-IP DNAT/SNAT in the router's qrouter namespace.
//
// The same wiring stands for a local Kubernetes node's tenant interface:
// the node's instance ID is the port's device_id and the Node's
// spec.providerID is ProviderID(instance).
package vif

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/mtu"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsbinding"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/pkg/errors"
)

const (
	errReadHost = "cannot read the agents' host from agents.json (is the OpenStack up with AGENTS=1?)"
	errBind     = "cannot bind the port to the agents' host"
	errSubnet   = "cannot get the subnet of the port's fixed IP"
	errNetwork  = "cannot get the port's network (for its MTU)"
	errWire     = "cannot wire the port's tap"
	errBridge   = "the agent made no bridge for the port's network"
	errUnbind   = "cannot unbind the port"
	errActive   = "the port did not become ACTIVE"
)

// DeviceOwner is the device_owner Nova gives an instance's port; the
// linuxbridge agent leaves plugging such a port's tap to os-vif.
const DeviceOwner = "compute:nova"

// Host is the compute host of the lab's agents, as up.sh records it in
// $OS_STATE/agents.json.
type Host struct {
	// Name is the host the agents report: a port's binding:host_id.
	Name string `json:"host"`
	// Namespace is the agents' network namespace: their bridges
	// brq<network-id[:11]> and the instances' taps live there.
	Namespace string `json:"namespace"`
	// ExternalNamespace holds ExternalBridge, the external network's wire
	// (flat physical network "external", ext-net): the outside plugs a veth
	// into it.
	ExternalNamespace string `json:"external_namespace"`
	ExternalBridge    string `json:"external_bridge"`
	// L3AgentPID is the L3 agent's process; its mount namespace holds the
	// qrouter-<router-id> namespaces.
	L3AgentPID int `json:"l3_agent_pid"`
}

// LoadHost reads the agents' host of the OpenStack whose OS_STATE is state.
func LoadHost(state string) (Host, error) {
	var h Host
	b, err := os.ReadFile(filepath.Join(state, "agents.json"))
	if err == nil {
		err = json.Unmarshal(b, &h)
	}
	return h, errors.Wrap(err, errReadHost)
}

// RouterCommand returns a command running args in the qrouter namespace of
// the router routerID.
func (h Host) RouterCommand(ctx context.Context, routerID string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "nsenter", append([]string{"-t", fmt.Sprint(h.L3AgentPID), "-m", "--",
		"ip", "netns", "exec", "qrouter-" + routerID}, args...)...)
}

// Instance is a VM: a Nova instance UUID and the network namespace that
// stands for it (made by the caller).
type Instance struct {
	ID        string
	Namespace string
}

// ProviderID is the spec.providerID of the Node running on inst, as the
// OpenStack cloud provider sets it.
func ProviderID(inst Instance) string { return "openstack:///" + inst.ID }

// TapName is the host end of a port's VIF: "tap" and the port ID's first
// 11 characters (Nova's and the agent's convention).
func TapName(portID string) string { return "tap" + prefix(portID) }

// BridgeName is the linuxbridge agent's bridge of a network.
func BridgeName(networkID string) string { return "brq" + prefix(networkID) }

func prefix(id string) string { return id[:min(11, len(id))] }

// VIF is a port plugged into an instance.
type VIF struct {
	// Port is the port as bound.
	Port ports.Port
	// Tap is the host end, in the agents' namespace, in Bridge.
	Tap, Bridge string
	// Instance and Interface are the VM and its end of the VIF.
	Instance  Instance
	Interface string
}

// bindOpts is what Nova sets on a port it attaches to an instance.
func bindOpts(host, owner, device string) portsbinding.UpdateOptsExt {
	return portsbinding.UpdateOptsExt{
		UpdateOptsBuilder: ports.UpdateOpts{DeviceOwner: &owner, DeviceID: &device},
		HostID:            &host,
	}
}

// Plug binds the port portID to h for inst (binding:host_id = h.Name,
// device_owner compute:nova, device_id inst.ID) and wires it as os-vif
// would: a veth whose end TapName(port) in h.Namespace is enslaved into
// BridgeName(network), once the agent has made it (within timeout), and
// whose end ifname in inst.Namespace carries the port's MAC, its fixed IPs
// with their subnets' prefix lengths, and a default route via the first
// fixed IP's subnet gateway. Both ends get the network's MTU (1450 on a
// vxlan network), as os-vif sets it. The port's status is left to
// WaitActive.
func Plug(ctx context.Context, sc *gophercloud.ServiceClient, h Host, inst Instance, portID, ifname string, timeout time.Duration) (*VIF, error) {
	p, mtu, err := bind(ctx, sc, h, inst, portID)
	if err != nil {
		return nil, err
	}
	v := &VIF{Port: *p, Tap: TapName(p.ID), Bridge: BridgeName(p.NetworkID), Instance: inst, Interface: ifname}
	var addrs []string
	gateway := ""
	for i, ip := range p.FixedIPs {
		s, err := subnets.Get(ctx, sc, ip.SubnetID).Extract()
		if err != nil {
			return nil, errors.Wrap(err, errSubnet)
		}
		pfx, err := netip.ParsePrefix(s.CIDR)
		if err != nil {
			return nil, errors.Wrap(err, errSubnet)
		}
		addrs = append(addrs, fmt.Sprintf("%s/%d", ip.IPAddress, pfx.Bits()))
		if i == 0 {
			gateway = s.GatewayIP
		}
	}
	steps := [][]string{
		{"-n", h.Namespace, "link", "add", v.Tap, "type", "veth", "peer", "name", ifname, "netns", inst.Namespace},
		linkSet(inst.Namespace, ifname, "address", p.MACAddress, "mtu", mtu),
		linkSet(inst.Namespace, ifname, "up"),
		linkSet(h.Namespace, v.Tap, "mtu", mtu, "up"),
	}
	for _, a := range addrs {
		steps = append(steps, []string{"-n", inst.Namespace, "addr", "add", a, "dev", ifname})
	}
	if gateway != "" {
		steps = append(steps, []string{"-n", inst.Namespace, "route", "add", "default", "via", gateway, "dev", ifname})
	}
	if err := ipAll(ctx, steps); err != nil {
		return v, errors.Wrap(err, errWire)
	}
	return v, enslave(ctx, h, v, timeout)
}

// Adopt is Plug for an instance whose interface exists already, without
// addresses: link is a veth end in inst.Namespace whose peer is the
// instance's interface (a local node's macvlan parent, cluster/node). The
// peer gets the port's MAC and the network's MTU; link is moved into
// h.Namespace as TapName(port) and enslaved into the network's bridge.
// Release hands it back.
func Adopt(ctx context.Context, sc *gophercloud.ServiceClient, h Host, inst Instance, portID, link string, timeout time.Duration) (*VIF, error) {
	peer, err := vethPeer(ctx, inst.Namespace, link)
	if err != nil {
		return nil, errors.Wrap(err, errWire)
	}
	p, mtu, err := bind(ctx, sc, h, inst, portID)
	if err != nil {
		return nil, err
	}
	v := &VIF{Port: *p, Tap: TapName(p.ID), Bridge: BridgeName(p.NetworkID), Instance: inst, Interface: peer}
	if err := ipAll(ctx, [][]string{
		linkSet(inst.Namespace, peer, "down"),
		linkSet(inst.Namespace, peer, "address", p.MACAddress, "mtu", mtu, "up"),
		linkSet(inst.Namespace, link, "down"),
		linkSet(inst.Namespace, link, "netns", h.Namespace),
		linkSet(h.Namespace, link, "name", v.Tap, "mtu", mtu, "up"),
	}); err != nil {
		return v, errors.Wrap(err, errWire)
	}
	return v, enslave(ctx, h, v, timeout)
}

// Release undoes Adopt: the tap goes back to the instance's namespace
// under its name link, and the port is unbound (Unplug). A tap that is
// gone (the agents' namespace deleted) is not an error.
func Release(ctx context.Context, sc *gophercloud.ServiceClient, h Host, v *VIF, link string) error {
	if ip(ctx, "-n", h.Namespace, "link", "show", v.Tap) == nil {
		if err := ipAll(ctx, [][]string{
			linkSet(h.Namespace, v.Tap, "nomaster", "down"),
			linkSet(h.Namespace, v.Tap, "netns", v.Instance.Namespace),
			linkSet(v.Instance.Namespace, v.Tap, "name", link, "up"),
		}); err != nil {
			return errors.Wrap(err, errWire)
		}
	}
	return Unplug(ctx, sc, h, v)
}

// bind binds the port portID to h for inst and returns it with its
// network's MTU.
func bind(ctx context.Context, sc *gophercloud.ServiceClient, h Host, inst Instance, portID string) (*ports.Port, string, error) {
	p, err := ports.Update(ctx, sc, portID, bindOpts(h.Name, DeviceOwner, inst.ID)).Extract()
	if err != nil {
		return nil, "", errors.Wrap(err, errBind)
	}
	var network mtu.NetworkMTUExt
	if err := networks.Get(ctx, sc, p.NetworkID).ExtractInto(&network); err != nil {
		return nil, "", errors.Wrap(err, errNetwork)
	}
	return p, fmt.Sprint(network.MTU), nil
}

// enslave waits (up to timeout) for the bridge of v's network and
// enslaves v's tap into it. The agent makes the bridge once it has seen
// the tap and asked Neutron for the port's details; it does not enslave a
// compute port's tap.
func enslave(ctx context.Context, h Host, v *VIF, timeout time.Duration) error {
	wait, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for ip(wait, "-n", h.Namespace, "link", "show", v.Bridge) != nil {
		select {
		case <-wait.Done():
			return errors.Errorf("%s %s in namespace %s after %s", errBridge, v.Bridge, h.Namespace, timeout)
		case <-time.After(250 * time.Millisecond):
		}
	}
	return errors.Wrap(ip(ctx, "-n", h.Namespace, "link", "set", v.Tap, "master", v.Bridge), errWire)
}

// vethPeer returns the name of the peer of the veth link in namespace ns,
// which must be in ns too.
func vethPeer(ctx context.Context, ns, link string) (string, error) {
	out, err := exec.CommandContext(ctx, "ip", "-j", "-n", ns, "link", "show", link).Output()
	if err != nil {
		return "", fmt.Errorf("ip -n %s link show %s: %w", ns, link, err)
	}
	var l []struct {
		Link string `json:"link"`
	}
	if err := json.Unmarshal(out, &l); err != nil || len(l) != 1 || l[0].Link == "" {
		return "", fmt.Errorf("%s in namespace %s is not a veth whose peer is there too", link, ns)
	}
	return l[0].Link, nil
}

// Unplug deletes the VIF's veth (both ends) and unbinds the port as Nova
// does when it detaches it (binding:host_id, device_owner and device_id
// cleared). A port that no longer exists is not an error.
func Unplug(ctx context.Context, sc *gophercloud.ServiceClient, h Host, v *VIF) error {
	if err := ip(ctx, "-n", h.Namespace, "link", "show", v.Tap); err == nil {
		if err := ip(ctx, "-n", h.Namespace, "link", "del", v.Tap); err != nil {
			return errors.Wrap(err, errWire)
		}
	}
	_, err := ports.Update(ctx, sc, v.Port.ID, bindOpts("", "", "")).Extract()
	if gophercloud.ResponseCodeIs(err, 404) {
		return nil
	}
	return errors.Wrap(err, errUnbind)
}

// WaitActive waits until the port portID is ACTIVE (the agent has wired
// it and told Neutron), polling every half second until timeout.
func WaitActive(ctx context.Context, sc *gophercloud.ServiceClient, portID string, timeout time.Duration) (*ports.Port, error) {
	wait, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		p, err := ports.Get(wait, sc, portID).Extract()
		if err == nil && p.Status == "ACTIVE" {
			return p, nil
		}
		select {
		case <-wait.Done():
			status := "unknown"
			if p != nil {
				status = p.Status
			}
			return p, errors.Errorf("%s within %s: status %s", errActive, timeout, status)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// linkSet is the ip(8) arguments setting link dev of namespace ns: args.
func linkSet(ns, dev string, args ...string) []string {
	return append([]string{"-n", ns, "link", "set", dev}, args...)
}

// ip runs ip(8) with args.
func ip(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ipAll runs each command of steps in turn, stopping at the first failure.
func ipAll(ctx context.Context, steps [][]string) error {
	for _, s := range steps {
		if err := ip(ctx, s...); err != nil {
			return err
		}
	}
	return nil
}
