package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/ipsecgw/provider-ipsec/cluster/openstack/vif"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// The site lives with Neutron's real agents (cluster/openstack/agents.sh):
// the router stands for the internet in front of Neutron's external
// network (it holds ext-subnet's gateway and routes the client sites), and every
// tenant-side host is a VM on a Neutron port of tenant-net bound to the
// agents' host, so that the linuxbridge agent's port security and
// security groups apply to its frames and the L3 agent's qrouter does the
// floating IPs.
var (
	// uplinkAddress is the router's address on ext-net: ext-subnet's
	// gateway (cluster/openstack/fixtures.py).
	uplinkAddress = netip.MustParsePrefix("203.0.113.1/24")
	// firstNodeIP is the fixed IP of the first node's port; the others
	// follow. Fixed, so that no node's port takes an address the runbook
	// pins (the VM's, the service's, the gateway's 10.20.0.10).
	firstNodeIP = netip.MustParseAddr("10.20.0.100")
)

const (
	// siteGroup is the security group of the site's ports: what the VM
	// gateway, the tenant service and a node running the gateway pod must
	// admit.
	siteGroup = "site"
	// servicePortName names the tenant service's port, which the site
	// makes and deletes; nodePortPrefix + the node's namespace a node's.
	servicePortName = "site-service"
	standinPortName = "gateway-standin"
	nodePortPrefix  = "node-"
	vmPortName      = "vm-gateway" // made by cluster/openstack/runbook.py vm-up
	plugTimeout     = time.Minute
)

// fixtures is what the site reads of $OS_STATE/fixtures.json.
type fixtures struct {
	Project      ref `json:"project"`
	TenantNet    ref `json:"tenant_net"`
	TenantSubnet ref `json:"tenant_subnet"`
	Router       ref `json:"router"`
}

// ref is an object of fixtures.json.
type ref struct {
	ID string `json:"id"`
}

// agents is the site's part in Neutron's real agents' world.
type agents struct {
	host vif.Host
	fx   fixtures
	// admin binds ports (binding:host_id is an admin's); tenant owns the
	// site's ports and security group, as the tenant owns its VMs'.
	admin, tenant *gophercloud.ServiceClient
	group         string
	// vifs are the VM's and the service's; nodes the nodes' by their
	// tenant link's name; made lists the ports the site created.
	vifs  []*vif.VIF
	nodes map[string]*vif.VIF
	made  []string
}

// newAgents connects to the Neutron of the clouds.yaml at clouds, whose
// directory is the OpenStack's state (agents.json, fixtures.json), and
// finds or makes the site's security group.
func newAgents(ctx context.Context, clouds string) (*agents, error) {
	state := filepath.Dir(clouds)
	h, err := vif.LoadHost(state)
	if err != nil {
		return nil, err
	}
	a := &agents{host: h, nodes: map[string]*vif.VIF{}}
	b, err := os.ReadFile(filepath.Join(state, "fixtures.json"))
	if err == nil {
		err = json.Unmarshal(b, &a.fx)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the OpenStack's fixtures: %w", err)
	}
	if a.admin, err = networkClient(ctx, clouds, "admin"); err != nil {
		return nil, err
	}
	if a.tenant, err = networkClient(ctx, clouds, "tenant-a"); err != nil {
		return nil, err
	}
	a.group, err = a.ensureGroup(ctx)
	return a, err
}

// ensureGroup finds the site's security group or makes it: ingress IKE
// (UDP 500), NAT-T (UDP 4500), ESP, HTTPS (the tenant service) and ICMP,
// from anywhere. It stays when the site ends, as the VM's port uses it.
func (a *agents) ensureGroup(ctx context.Context) (string, error) {
	pages, err := groups.List(a.tenant, groups.ListOpts{Name: siteGroup, ProjectID: a.fx.Project.ID}).AllPages(ctx)
	if err != nil {
		return "", fmt.Errorf("cannot list security groups: %w", err)
	}
	found, err := groups.ExtractGroups(pages)
	if err != nil {
		return "", err
	}
	if len(found) > 0 {
		return found[0].ID, nil
	}
	g, err := groups.Create(ctx, a.tenant, groups.CreateOpts{Name: siteGroup,
		Description: "the local site's VM gateway, tenant service and nodes: IKE, NAT-T, ESP, 443, ICMP"}).Extract()
	if err != nil {
		return "", fmt.Errorf("cannot create security group %s: %w", siteGroup, err)
	}
	for _, r := range []rules.CreateOpts{
		{Protocol: rules.ProtocolUDP, PortRangeMin: 500, PortRangeMax: 500},
		{Protocol: rules.ProtocolUDP, PortRangeMin: 4500, PortRangeMax: 4500},
		{Protocol: rules.ProtocolESP},
		{Protocol: rules.ProtocolTCP, PortRangeMin: servicePort, PortRangeMax: servicePort},
		{Protocol: rules.ProtocolICMP},
	} {
		r.SecGroupID, r.Direction, r.EtherType = g.ID, rules.DirIngress, rules.EtherType4
		if _, err := rules.Create(ctx, a.tenant, r).Extract(); err != nil {
			// Not half made: the next site finds the group by its name.
			return "", errors.Join(fmt.Errorf("cannot add a rule to security group %s: %w", siteGroup, err),
				groups.Delete(ctx, a.tenant, g.ID).ExtractErr())
		}
	}
	return g.ID, nil
}

// port finds the tenant's port name on tenant-net, or makes it with the
// fixed IP addr (recorded for close) when make is set, and puts it in the
// site's security group.
func (a *agents) port(ctx context.Context, name string, addr netip.Addr, create bool) (*ports.Port, error) {
	pages, err := ports.List(a.tenant, ports.ListOpts{Name: name, NetworkID: a.fx.TenantNet.ID}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot list ports: %w", err)
	}
	found, err := ports.ExtractPorts(pages)
	if err != nil {
		return nil, err
	}
	groups := []string{a.group}
	if len(found) > 0 {
		p, err := ports.Update(ctx, a.tenant, found[0].ID, ports.UpdateOpts{SecurityGroups: &groups}).Extract()
		if err != nil {
			return nil, fmt.Errorf("cannot set the security group of port %s: %w", name, err)
		}
		return p, nil
	}
	if !create {
		return nil, fmt.Errorf("no port %s on tenant-net (cluster/openstack/runbook.py vm-up makes the VM's)", name)
	}
	p, err := ports.Create(ctx, a.tenant, ports.CreateOpts{Name: name, NetworkID: a.fx.TenantNet.ID, SecurityGroups: &groups,
		FixedIPs: []ports.IP{{SubnetID: a.fx.TenantSubnet.ID, IPAddress: addr.String()}}}).Extract()
	if err != nil {
		return nil, fmt.Errorf("cannot create port %s: %w", name, err)
	}
	a.made = append(a.made, p.ID)
	return p, nil
}

// plug plugs the namespace ns (a new instance) into the port named name
// (made at addr if create) and waits until the port is ACTIVE.
func (a *agents) plug(ctx context.Context, ns, name string, addr netip.Addr, create bool) error {
	p, err := a.port(ctx, name, addr, create)
	if err != nil {
		return err
	}
	v, err := vif.Plug(ctx, a.admin, a.host, vif.Instance{ID: string(uuid.NewUUID()), Namespace: ns}, p.ID, "eth0", plugTimeout)
	if v != nil {
		a.vifs = append(a.vifs, v)
	}
	if err != nil {
		return err
	}
	_, err = vif.WaitActive(ctx, a.admin, p.ID, plugTimeout)
	return err
}

// unplug unplugs the namespace ns and deletes its port if the site made it.
func (a *agents) unplug(ctx context.Context, ns string) error {
	for i, v := range a.vifs {
		if v.Instance.Namespace != ns {
			continue
		}
		a.vifs = slices.Delete(a.vifs, i, i+1)
		err := vif.Unplug(ctx, a.admin, a.host, v)
		if j := slices.Index(a.made, v.Port.ID); j >= 0 {
			a.made = slices.Delete(a.made, j, j+1)
			err = errors.Join(err, a.deletePort(ctx, v.Port.ID))
		}
		return err
	}
	return nil
}

// deletePort deletes the port id; one that is gone is not an error.
func (a *agents) deletePort(ctx context.Context, id string) error {
	err := ports.Delete(ctx, a.tenant, id).ExtractErr()
	if err != nil && !gophercloud.ResponseCodeIs(err, 404) {
		return fmt.Errorf("cannot delete port %s: %w", id, err)
	}
	return nil
}

// attach makes a node's tenant interface a port of tenant-net bound to the
// agents' host for the node's instance: the veth end link of netns (the
// node's macvlan parent's peer) becomes the port's tap. Attaching a link
// already attached changes nothing.
func (a *agents) attach(ctx context.Context, netns, link, instance string) (string, error) {
	if _, ok := a.nodes[link]; ok {
		return fmt.Sprintf("%s of %s is on port %s already\n", link, netns, a.nodes[link].Port.ID), nil
	}
	if instance == "" {
		return "", errors.New("attach: the node's instance UUID is missing (cluster/node/up.sh writes it to $STATE/node/N/instance-id)")
	}
	addr := firstNodeIP
	for range a.nodes {
		addr = addr.Next()
	}
	p, err := a.port(ctx, nodePortPrefix+netns, addr, true)
	if err != nil {
		return "", err
	}
	v, err := vif.Adopt(ctx, a.admin, a.host, vif.Instance{ID: instance, Namespace: netns}, p.ID, link, plugTimeout)
	if v != nil {
		a.nodes[link] = v
	}
	if err != nil {
		return "", err
	}
	if _, err := vif.WaitActive(ctx, a.admin, p.ID, plugTimeout); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s of %s is port %s (%s, %s) of instance %s on host %s\n", link, netns, p.ID, p.FixedIPs[0].IPAddress, p.MACAddress, instance, a.host.Name), nil
}

// close hands the nodes' links back, unplugs the VM and the service and
// deletes the ports the site made.
func (a *agents) close(ctx context.Context) error {
	errs := make([]error, 0, len(a.nodes)+len(a.vifs)+len(a.made))
	for link, v := range a.nodes {
		errs = append(errs, vif.Release(ctx, a.admin, a.host, v, link))
	}
	for _, v := range a.vifs {
		errs = append(errs, vif.Unplug(ctx, a.admin, a.host, v))
	}
	for _, id := range a.made {
		errs = append(errs, a.deletePort(ctx, id))
	}
	return errors.Join(errs...)
}

// status is the qrouter's NAT table: the real L3 agent's floating IPs.
func (a *agents) status(ctx context.Context) (string, error) {
	out, err := a.host.RouterCommand(ctx, a.fx.Router.ID, "iptables-save", "-t", "nat").CombinedOutput()
	var b strings.Builder
	fmt.Fprintf(&b, "floating IPs: the L3 agent's qrouter-%s (host %s)\n", a.fx.Router.ID, a.host.Name)
	for l := range strings.Lines(string(out)) {
		if strings.Contains(l, "-j DNAT") || strings.Contains(l, "-j SNAT") {
			b.WriteString(l)
		}
	}
	if err != nil {
		return b.String(), err
	}
	return b.String() + a.nodeRules(ctx), nil
}

// nodeRules is what the linuxbridge agent enforces on the nodes' ports,
// with its counters: the ebtables MAC and ARP chains of their taps and the
// iptables rules (port security, security groups) of their ports. Frames
// a node's port does not own (a gateway pod's net1 without an allowed
// address pair) are what the DROP policies and rules count.
func (a *agents) nodeRules(ctx context.Context) string {
	if len(a.nodes) == 0 {
		return ""
	}
	in := func(args ...string) string {
		//nolint:gosec // G702: the agents' namespace of agents.json and this function's own commands
		out, err := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", a.host.Namespace}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Sprintf("%s: %v\n", strings.Join(args, " "), err)
		}
		return string(out)
	}
	var b strings.Builder
	eb := in("ebtables", "-t", "nat", "-L", "--Lc")
	ipt := in("iptables-save", "-c")
	for link, v := range a.nodes {
		pairs := "unknown"
		if p, err := ports.Get(ctx, a.admin, v.Port.ID).Extract(); err == nil {
			pairs = fmt.Sprint(p.AllowedAddressPairs)
		}
		fmt.Fprintf(&b, "\nnode port %s (%s of %s, tap %s): allowed address pairs %s\n", v.Port.ID, link, v.Instance.Namespace, v.Tap, pairs)
		chain := ""
		for l := range strings.Lines(eb) {
			if strings.HasPrefix(l, "Bridge chain: ") {
				chain = l
			}
			if strings.Contains(chain, v.Tap) || strings.Contains(l, v.Tap) {
				b.WriteString("ebtables " + l)
			}
		}
		for l := range strings.Lines(ipt) {
			if strings.Contains(l, v.Tap) || strings.Contains(l, v.Port.ID[:10]) {
				b.WriteString("iptables " + l)
			}
		}
	}
	return b.String()
}

// uplink is the router's place on ext-net's wire.
func (a *agents) uplink() *topology.Uplink {
	return &topology.Uplink{NS: a.host.ExternalNamespace, Bridge: a.host.ExternalBridge, Address: uplinkAddress}
}
