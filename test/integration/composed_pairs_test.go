//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	netv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	ipsecctrl "github.com/ipsecgw/provider-ipsec/internal/controller"
	"github.com/ipsecgw/provider-ipsec/internal/function"
)

// TestComposedNodeAddressPairs runs what the function composes for a
// routed claim with a nodeSelector (function.Compose: its SecurityGroup,
// Port and NodeAddressPairs, controlled by a stand-in composite as
// Crossplane makes them) with the provider's controllers against the real
// Neutron and API server. The NodeAddressPairs finds the Port by
// controller reference and puts the port's fixed IP and the client
// subnets, with the port's MAC, on the Neutron ports of the selected nodes
// (mapped by spec.providerID to the ports' device_id) and on no other;
// another tool's pair stays. Then the claim goes in the worst order for
// the pairs: the Port first, its Neutron port gone, then the
// NodeAddressPairs, whose Delete removes its pairs from the network it
// recorded, and only those.
func TestComposedNodeAddressPairs(t *testing.T) {
	e := startOpenStack(t)
	ctx := context.Background()
	sc := neutron(t, e)
	id := fmt.Sprint(os.Getpid())
	selector := map[string]string{"itest-composed-" + id: "gateway"}
	objs := composeRouted(t, e, "cnap-"+id, selector)
	sg := objs[function.SecurityGroupName].(*netv1alpha1.SecurityGroup)
	gw := objs[function.PortName].(*netv1alpha1.Port)
	pairs := objs[function.NodePairsName].(*netv1alpha1.NodeAddressPairs)

	// Three node VMs' ports on the tenant network: a and b run on
	// selected nodes, c on a node the selector leaves out; b's port has
	// another tool's pair.
	foreign := ports.AddressPair{IPAddress: "10.20.0.223", MACAddress: "fa:16:3e:00:00:02"}
	type node struct {
		name     string
		port     string
		selected bool
	}
	var nodes []node
	for _, n := range []struct {
		name     string
		selected bool
		pairs    []ports.AddressPair
	}{{"a", true, nil}, {"b", true, []ports.AddressPair{foreign}}, {"c", false, nil}} {
		labels := selector
		if !n.selected {
			labels = nil
		}
		k, port := nodeVM(t, e, sc, "cnap-"+n.name+"-"+id, labels, n.pairs...)
		nodes = append(nodes, node{name: k, port: port, selected: n.selected})
	}

	startProvider(t, allControllers(ipsecctrl.Dependencies{OpenStack: e.Clients}))
	mrs := []client.Object{pairs, gw, sg}
	t.Cleanup(func() {
		forgetMRs(mrs...)
		deletePorts(t, sc, []client.Object{gw})
	})
	start := time.Now()
	create(t, sg, gw, pairs)
	eventually(t, 90*time.Second, "the composed NodeAddressPairs Ready", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pairs), pairs); err != nil {
			return err
		}
		return rrReady(pairs)
	})
	t.Logf("composed resources created to the node pairs Ready: %s", time.Since(start).Round(time.Millisecond))
	// The pairs resolve the Port by its external name, which the Port has
	// before its status is written: wait for the status.
	eventually(t, 30*time.Second, "the Port's status.atProvider.id", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		if gw.Status.AtProvider.ID == "" {
			return fmt.Errorf("not written yet")
		}
		return nil
	})
	if got, want := ptr.Deref(pairs.Spec.ForProvider.PortID, ""), gw.Status.AtProvider.ID; got == "" || got != want {
		t.Fatalf("the NodeAddressPairs' portId is %q, want the composite's Port's %q (by controller reference)", got, want)
	}
	if len(gw.Status.AtProvider.FixedIPs) == 0 {
		t.Fatalf("the Port reports no fixed IP: %+v", gw.Status.AtProvider)
	}
	mac := gw.Status.AtProvider.MACAddress
	ours := []string{gw.Status.AtProvider.FixedIPs[0].IPAddress + "@" + mac, "192.168.60.0/24@" + mac, "192.168.61.0/24@" + mac}
	held := map[string][]string{nodes[0].port: ours, nodes[1].port: append([]string{foreign.IPAddress + "@" + foreign.MACAddress}, ours...), nodes[2].port: nil}
	for _, n := range nodes {
		if err := napWant(ctx, sc, n.port, held[n.port]...); err != nil {
			t.Errorf("node %s (selected %t): %v", n.name, n.selected, err)
		}
	}
	if pairs.Status.AtProvider.Nodes != 2 {
		t.Errorf("status.atProvider.nodes = %d, want the 2 selected nodes", pairs.Status.AtProvider.Nodes)
	}

	// The claim goes: the Port first, and its Neutron port with it.
	portID := gw.Status.AtProvider.ID
	if err := kube.Delete(ctx, gw); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the gateway's Neutron port gone", func() error {
		if _, err := ports.Get(ctx, sc, portID).Extract(); !openstack.IsNotFound(err) {
			return fmt.Errorf("port %s: %w, want 404", portID, err)
		}
		return nil
	})
	start = time.Now()
	for _, o := range []client.Object{pairs, sg} {
		if err := kube.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 60*time.Second, "the composed resources deleted", func() error {
		for _, o := range mrs {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object)); err == nil {
				return fmt.Errorf("%s still there", o.GetName())
			}
		}
		return nil
	})
	t.Logf("NodeAddressPairs deleted after its Port: %s", time.Since(start).Round(time.Millisecond))
	for _, n := range nodes {
		want := []string(nil)
		if n.name == nodes[1].name {
			want = []string{foreign.IPAddress + "@" + foreign.MACAddress}
		}
		if err := napWant(ctx, sc, n.port, want...); err != nil {
			t.Errorf("after the claim's resources are deleted, node %s: %v", n.name, err)
		}
	}
}

// composeRouted returns what the function composes for a routed claim
// name with an allocated floating IP and a nodeSelector selector on e's
// fixtures (function.Compose: SecurityGroup, Port, FloatingIPBinding,
// RouterRoutes, NodeAddressPairs and Gateway by their composition names),
// each named name-<its name> and controlled by a stand-in composite of
// that name, as Crossplane makes them.
func composeRouted(t *testing.T, e *openStackEnv, name string, selector map[string]string) map[string]client.Object {
	t.Helper()
	xr := &function.XIPsecGateway{
		Metadata: function.Metadata{Name: name},
		Spec: function.XIPsecGatewaySpec{
			ClaimRef:           &function.ClaimReference{Namespace: "tenant-a", Name: name},
			ProviderConfigName: e.ProviderConfig,
			Endpoint:           function.Endpoint{FloatingNetworkID: e.Fixtures.ExtNet.ID},
			Network:            function.Network{NetworkID: e.Fixtures.TenantNet.ID, SubnetID: e.Fixtures.TenantSub.ID},
			Mode:               gwv1alpha1.ModeRouted,
			Routed:             &function.Routed{RouterID: e.Fixtures.Router.ID, ClientSubnets: []string{"192.168.60.0/24", "192.168.61.0/24"}},
			NodeSelector:       selector,
		},
	}
	objs, warnings := function.Compose(xr, function.Observed{})
	if len(warnings) > 0 {
		t.Fatalf("compose: %v", warnings)
	}
	owner := []metav1.OwnerReference{{APIVersion: "vpn.ipsecgw.io/v1alpha1", Kind: "XIPsecGateway", Name: xr.Metadata.Name,
		UID: uuid.NewUUID(), Controller: ptr.To(true)}}
	out := map[string]client.Object{}
	for n, o := range objs {
		mg := o.(client.Object)
		mg.SetName(name + "-" + n)
		mg.SetOwnerReferences(owner)
		out[n] = mg
	}
	return out
}

// nodeVM makes a node VM's port on e's tenant network (with the allowed
// address pairs pairs) and its Node name with labels, mapped to the port
// by spec.providerID and device_id as the OpenStack cloud provider and
// Nova do; both go when t ends. It returns the Node's name and the port's
// ID.
func nodeVM(t *testing.T, e *openStackEnv, sc *gophercloud.ServiceClient, name string, labels map[string]string, pairs ...ports.AddressPair) (string, string) {
	t.Helper()
	inst := string(uuid.NewUUID())
	p, err := ports.Create(context.Background(), sc, ports.CreateOpts{Name: name, NetworkID: e.Fixtures.TenantNet.ID,
		DeviceID: inst, AllowedAddressPairs: pairs}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ports.Delete(context.Background(), sc, p.ID).ExtractErr() })
	k := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: "openstack:///" + inst}}
	create(t, k)
	t.Cleanup(func() { _ = kube.Delete(context.Background(), k) })
	return k.Name, p.ID
}
