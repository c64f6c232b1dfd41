//go:build integration

package integration

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsbinding"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/ipsecgw/provider-ipsec/cluster/openstack/vif"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// TestTopologyUplink builds the topology in front of the real agents'
// external network, as the site does with AGENTS=1: the router holds
// ext-subnet's gateway and routes the client site, a VM plugged into a
// port is reached through the real qrouter's floating IP with the client's
// own address, and a node's existing tenant link becomes a port's tap
// (vif.Adopt: the node's interface gets the port's MAC and the network's
// MTU, the port goes ACTIVE) and is handed back by vif.Release.
func TestTopologyUplink(t *testing.T) {
	e, h := startAgents(t)
	ctx := context.Background()
	sc := adminNeutron(t, e)
	id := fmt.Sprint(os.Getpid())
	tp := startUplinkTopology(t, h, fmt.Sprintf("ipu%d-", os.Getpid()), 1)
	sg := securityGroup(t, sc, "uplink-"+id, e.Fixtures.Project.ID, rules.CreateOpts{Protocol: rules.ProtocolTCP, PortRangeMin: 8080, PortRangeMax: 8080})
	newPort := func(name string) *ports.Port {
		t.Helper()
		p, err := ports.Create(ctx, sc, ports.CreateOpts{Name: name + "-" + id, NetworkID: e.Fixtures.TenantNet.ID,
			ProjectID: e.Fixtures.Project.ID, SecurityGroups: &[]string{sg.ID}}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ports.Delete(context.Background(), sc, p.ID).ExtractErr() })
		return p
	}

	// A VM behind a floating IP.
	vmPort := newPort("uplink-vm")
	vmNS, err := tp.AddNamespace("vm")
	if err != nil {
		t.Fatal(err)
	}
	plugVM(t, sc, h, vif.Instance{ID: string(uuid.NewUUID()), Namespace: vmNS}, vmPort.ID, "eth0")
	serveWhoAmI(t, vmNS, ":8080")
	fip, err := floatingips.Create(ctx, sc, floatingips.CreateOpts{FloatingNetworkID: e.Fixtures.ExtNet.ID,
		ProjectID: e.Fixtures.Project.ID, PortID: vmPort.ID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = floatingips.Delete(context.Background(), sc, fip.ID).ExtractErr() })
	client := tp.Peers[0]
	want := vmPort.FixedIPs[0].IPAddress + " sees " + client.Address.String()
	got := ""
	for deadline := time.Now().Add(30 * time.Second); got != want && time.Now().Before(deadline); {
		if got = askWhoAmI(client.NS, fip.FloatingIP+":8080"); got != want {
			time.Sleep(500 * time.Millisecond)
		}
	}
	if got != want {
		t.Errorf("the client site through the router and the qrouter's floating IP %s: got %q, want %q", fip.FloatingIP, got, want)
	}

	// A node: its macvlan parent eth1, whose peer eth1p becomes the tap.
	nodePort := newPort("uplink-node")
	nodeNS, err := tp.AddNamespace("node")
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, "ip", "-n", nodeNS, "link", "add", "eth1", "type", "veth", "peer", "name", "eth1p")
	inst := vif.Instance{ID: string(uuid.NewUUID()), Namespace: nodeNS}
	n, err := vif.Adopt(ctx, sc, h, inst, nodePort.ID, "eth1p", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	bound, err := vif.WaitActive(ctx, sc, nodePort.ID, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	link := func(ns, name string) string {
		out, err := output("ip", "-o", "-n", ns, "link", "show", name)
		if err != nil {
			return "missing"
		}
		f := strings.Fields(out)
		attrs := map[string]string{}
		for i := 0; i+1 < len(f); i++ {
			attrs[f[i]] = f[i+1]
		}
		return fmt.Sprintf("mtu %s master %s ether %s", attrs["mtu"], attrs["master"], attrs["link/ether"])
	}
	adopted := struct{ Interface, Tap, DeviceID string }{link(nodeNS, "eth1"), link(h.Namespace, n.Tap), bound.DeviceID}
	if diff := cmp.Diff(struct{ Interface, Tap, DeviceID string }{
		Interface: "mtu 1450 master  ether " + nodePort.MACAddress,
		Tap:       "mtu 1450 master " + n.Bridge + " ether " + strings.Fields(adopted.Tap)[len(strings.Fields(adopted.Tap))-1],
		DeviceID:  inst.ID,
	}, adopted); diff != "" {
		t.Errorf("adopted: the node's interface has the port's MAC and the network's MTU, its peer is the port's tap in the agents' bridge, the port's device_id is the instance (-want +got):\n%s", diff)
	}
	if err := vif.Release(ctx, sc, h, n, "eth1p"); err != nil {
		t.Fatal(err)
	}
	var released struct {
		ports.Port
		portsbinding.PortsBindingExt
	}
	if err := ports.Get(ctx, sc, nodePort.ID).ExtractInto(&released); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"eth1p in the node", "", ""}, []string{
		map[bool]string{true: "eth1p in the node", false: "eth1p missing"}[link(nodeNS, "eth1p") != "missing"],
		released.HostID, released.DeviceID,
	}); diff != "" {
		t.Errorf("released: the link back in the node's namespace, the port unbound (-want +got):\n%s", diff)
	}
}

// output runs a command and returns its combined output.
func output(args ...string) (string, error) {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	return string(out), err
}

// startUplinkTopology builds a topology with peers client sites in front
// of the agents' external network h (the router at ext-subnet's gateway,
// 203.0.113.1), with namespace prefix prefix, and removes it when t ends,
// checking that its uplink went with it. No charon runs.
func startUplinkTopology(t *testing.T, h vif.Host, prefix string, peers int) *topology.Topology {
	t.Helper()
	tp, err := topology.Build(topology.Options{Prefix: prefix, Dir: t.TempDir(), Peers: peers, Uplink: &topology.Uplink{
		NS: h.ExternalNamespace, Bridge: h.ExternalBridge, Address: netip.MustParsePrefix("203.0.113.1/24")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tp.Close(); err != nil {
			t.Error(err)
		}
		// The kernel frees a deleted namespace's links asynchronously.
		gone := func() bool {
			_, err := output("ip", "-n", h.ExternalNamespace, "link", "show", topology.UplinkPeer(prefix))
			return err != nil
		}
		if !settles(true, gone) {
			t.Errorf("the router's uplink %s outlived the topology", topology.UplinkPeer(prefix))
		}
	})
	return tp
}
