//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/cluster/openstack/vif"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
	"github.com/ipsecgw/provider-ipsec/internal/controller/nodeaddresspairs"
)

// napPairs reads a port's allowed address pairs as "ip@mac", sorted.
func napPairs(ctx context.Context, sc *gophercloud.ServiceClient, id string) ([]string, error) {
	p, err := ports.Get(ctx, sc, id).Extract()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(p.AllowedAddressPairs))
	for _, ap := range p.AllowedAddressPairs {
		out = append(out, ap.IPAddress+"@"+ap.MACAddress)
	}
	slices.Sort(out)
	return out, nil
}

// napWant checks that port id holds exactly the pairs want.
func napWant(ctx context.Context, sc *gophercloud.ServiceClient, id string, want ...string) error {
	got, err := napPairs(ctx, sc, id)
	if err != nil {
		return err
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("port %s has pairs %q, want %q", id, got, want)
	}
	return nil
}

// TestNodeAddressPairs runs the NodeAddressPairs controller against
// Neutron's real agents: two "node VMs" (namespaces plugged into node
// ports as Nova/os-vif would) with Nodes in the API server whose
// spec.providerID names their instances, and the gateway pod's net1 (a
// macvlan with the gateway port's MAC and fixed IP) on the first. Before,
// the real agent drops the macvlan's frames; once the provider added the
// pairs they pass; a node no longer selected loses them (and the frames
// are dropped again); a deleted resource removes them; pairs another tool
// set on the same ports (one different, one equal to ours) stay
// throughout.
func TestNodeAddressPairs(t *testing.T) {
	e, h := startAgents(t)
	ctx := context.Background()
	admin := adminNeutron(t, e)
	sc := neutron(t, e)
	id := fmt.Sprint(os.Getpid())
	project := e.Fixtures.Project.ID
	sg := securityGroup(t, admin, "nap-node-"+id, project)
	newPort := func(name string, sgs []string) *ports.Port {
		t.Helper()
		p, err := ports.Create(ctx, admin, ports.CreateOpts{Name: name + "-" + id, NetworkID: e.Fixtures.TenantNet.ID, ProjectID: project, SecurityGroups: &sgs}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ports.Delete(context.Background(), admin, p.ID).ExtractErr() })
		return p
	}
	gwPort := newPort("nap-gateway", []string{})
	gwIP, gwMAC := gwPort.FixedIPs[0].IPAddress, gwPort.MACAddress
	ours := []string{gwIP + "@" + gwMAC, "192.168.50.0/24@" + gwMAC}
	// Another tool's pairs: a keepalived VIP on node a, and on node b a
	// pair equal to the gateway's.
	foreignA := "10.20.0.222@fa:16:3e:00:00:01"
	foreignB := gwIP + "@" + gwMAC

	type node struct {
		name string
		port *ports.Port
		ns   string
	}
	var nodes []node
	var mrs []client.Object
	t.Cleanup(func() { forgetMRs(mrs...) })
	for i, name := range []string{"nap-a", "nap-b"} {
		p := newPort(name, []string{sg.ID})
		ns := agentsNetns(t, fmt.Sprintf("napvm%d-%s", i, id))
		inst := vif.Instance{ID: string(uuid.NewUUID()), Namespace: ns}
		plugVM(t, admin, h, inst, p.ID, "eth0")
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + id, Labels: map[string]string{"vpn-gateway": "yes"}},
			Spec: corev1.NodeSpec{ProviderID: vif.ProviderID(inst)}}
		create(t, n)
		t.Cleanup(func() { _ = kube.Delete(context.Background(), n) })
		nodes = append(nodes, node{name: n.Name, port: p, ns: ns})
	}
	// A pair for a port another tool set.
	for i, f := range []string{foreignA, foreignB} {
		ip, mac, _ := strings.Cut(f, "@")
		pairs := []ports.AddressPair{{IPAddress: ip, MACAddress: mac}}
		if _, err := ports.Update(ctx, admin, nodes[i].port.ID, ports.UpdateOpts{AllowedAddressPairs: &pairs}).Extract(); err != nil {
			t.Fatal(err)
		}
	}
	// The gateway pod: a macvlan with the gateway's MAC and fixed IP on
	// node a's tenant interface.
	podNS := agentsNetns(t, "nappod-"+id)
	mustRun(t, "ip", "-n", nodes[0].ns, "link", "add", "net1", "link", "eth0", "type", "macvlan", "mode", "bridge")
	mustRun(t, "ip", "-n", nodes[0].ns, "link", "set", "net1", "netns", podNS)
	mustRun(t, "ip", "-n", podNS, "link", "set", "net1", "address", gwMAC, "up")
	mustRun(t, "ip", "-n", podNS, "addr", "add", gwIP+"/24", "dev", "net1")
	gatewayPings := func() bool {
		return exec.Command("ip", "netns", "exec", podNS, "ping", "-n", "-q", "-c", "3", "-i", "0.2", "-W", "1", "-I", gwIP, "10.20.0.1").Run() == nil
	}
	if settles(false, gatewayPings) {
		t.Fatalf("before the pairs, the gateway's macvlan reaches the router through node a's port: the agent does not enforce port security\n%s", portRules(h, vif.TapName(nodes[0].port.ID)))
	}

	logs := startProvider(t, func(mgr ctrl.Manager, o controller.Options) error {
		return nodeaddresspairs.Kind.Setup(mgr, o, mrsetup.Dependencies{OpenStack: e.Clients})
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("provider log:\n%s", logs)
		}
	})
	mg := &netv1alpha1.NodeAddressPairs{
		ObjectMeta: metav1.ObjectMeta{Name: "itest-nap-" + id},
		Spec: netv1alpha1.NodeAddressPairsSpec{
			ClusterManagedResourceSpec: xpv2.ClusterManagedResourceSpec{ProviderConfigReference: &xpv2.Reference{Name: e.ProviderConfig}},
			ForProvider: netv1alpha1.NodeAddressPairsParameters{
				PortID:       ptr.To(gwPort.ID),
				CIDRs:        []netv1alpha1.CIDR{"192.168.50.0/24"},
				NodeSelector: map[string]string{"vpn-gateway": "yes"},
			},
		},
	}
	mrs = append(mrs, mg)
	start := time.Now()
	create(t, mg)
	key := client.ObjectKeyFromObject(mg)
	eventually(t, 30*time.Second, "NodeAddressPairs Ready", func() error {
		if err := kube.Get(ctx, key, mg); err != nil {
			return err
		}
		return rrReady(mg)
	})
	t.Logf("create to Ready: %s", time.Since(start).Round(time.Millisecond))
	if err := napWant(ctx, sc, nodes[0].port.ID, append([]string{foreignA}, ours...)...); err != nil {
		t.Error(err)
	}
	// Node b's equal foreign pair is kept as it is; only the CIDR is added.
	if err := napWant(ctx, sc, nodes[1].port.ID, foreignB, ours[1]); err != nil {
		t.Error(err)
	}
	// The agent applies a port's new pairs in its next loop, which a busy
	// machine stretches (measured 1.4 s to 30 s on two shared cores).
	start = time.Now()
	if !settlesWithin(90*time.Second, true, gatewayPings) {
		t.Fatalf("with the pairs, the gateway's macvlan does not reach the router\n%s", portRules(h, vif.TapName(nodes[0].port.ID)))
	}
	t.Logf("pairs Ready to the macvlan's frames passing: %s", time.Since(start).Round(time.Millisecond))
	if mg.Status.AtProvider.Nodes != 2 {
		t.Errorf("status.atProvider.nodes = %d, want 2", mg.Status.AtProvider.Nodes)
	}

	t.Run("NodeNoLongerSelected", func(t *testing.T) {
		n := &corev1.Node{}
		if err := kube.Get(ctx, client.ObjectKey{Name: nodes[0].name}, n); err != nil {
			t.Fatal(err)
		}
		n.Labels["vpn-gateway"] = "no"
		if err := kube.Update(ctx, n); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "node a's port loses our pairs only", func() error {
			return napWant(ctx, sc, nodes[0].port.ID, foreignA)
		})
		if settles(false, gatewayPings) {
			t.Error("without the pairs, the gateway's macvlan still reaches the router through node a's port")
		}
		n.Labels["vpn-gateway"] = "yes"
		if err := kube.Update(ctx, n); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "node a's port gets our pairs again", func() error {
			return napWant(ctx, sc, nodes[0].port.ID, append([]string{foreignA}, ours...)...)
		})
	})

	t.Run("NodeDeleted", func(t *testing.T) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodes[1].name}}
		if err := kube.Delete(ctx, n); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "node b's port loses the CIDR pair and keeps the other tool's equal pair", func() error {
			return napWant(ctx, sc, nodes[1].port.ID, foreignB)
		})
	})

	t.Run("Deleted", func(t *testing.T) {
		if err := kube.Delete(ctx, mg); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "NodeAddressPairs gone", func() error {
			if err := kube.Get(ctx, key, &netv1alpha1.NodeAddressPairs{}); err == nil {
				return fmt.Errorf("still there")
			}
			return nil
		})
		for i, want := range []string{foreignA, foreignB} {
			if err := napWant(ctx, sc, nodes[i].port.ID, want); err != nil {
				t.Error(err)
			}
		}
		if settles(false, gatewayPings) {
			t.Error("after delete, the gateway's macvlan still reaches the router through node a's port")
		}
	})
}
