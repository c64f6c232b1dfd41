package nodeaddresspairs

import (
	"context"
	"net/http"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack/neutrontest"
)

const (
	gwID   = "7d9a7a8e-0000-4000-8000-00000000000a"
	netID  = "5e1b2c3d-0000-4000-8000-0000000000ee"
	portA  = "aaaaaaaa-0000-4000-8000-00000000000a"
	portB  = "bbbbbbbb-0000-4000-8000-00000000000b"
	instA  = "11111111-0000-4000-8000-000000000001"
	instB  = "22222222-0000-4000-8000-000000000002"
	gwMAC  = "fa:16:3e:aa:bb:cc"
	gwPair = `{"ip_address":"10.20.0.50","mac_address":"fa:16:3e:aa:bb:cc"}`
	cidr   = `{"ip_address":"192.168.10.0/24","mac_address":"fa:16:3e:aa:bb:cc"}`
	vip    = `{"ip_address":"10.20.0.222","mac_address":"fa:16:3e:00:00:01"}`
)

// oldGW is a gateway port Neutron deleted, whose pair a node port still
// holds.
const (
	oldGW   = "7d9a7a8e-0000-4000-8000-0000000000ff"
	oldMAC  = "fa:16:3e:aa:bb:00"
	oldPair = `{"ip_address":"10.20.0.49","mac_address":"fa:16:3e:aa:bb:00"}`
)

var oldIP = v1alpha1.ObservedAddressPair{IPAddress: "10.20.0.49", MACAddress: oldMAC}

// gwListed is the gateway's port as the list of its network's ports has it.
var gwListed = `{"id":"` + gwID + `","network_id":"` + netID + `","mac_address":"FA:16:3E:AA:BB:CC","fixed_ips":[{"ip_address":"10.20.0.50"}]}`

// recorded records the network of the pairs in status, as every Observe
// after the first finds it.
func recorded(mg *v1alpha1.NodeAddressPairs) { mg.Status.AtProvider.NetworkID = netID }

var gwPort = `{"port":{"id":"` + gwID + `","network_id":"` + netID + `","mac_address":"FA:16:3E:AA:BB:CC","fixed_ips":[{"ip_address":"10.20.0.50"}]}}`

// nodePort is a node's port on the network with pairs and revision 7.
func nodePort(id, inst string, security bool, pairs ...string) string {
	s := "false"
	if security {
		s = "true"
	}
	ps := ""
	for i, p := range pairs {
		if i > 0 {
			ps += ","
		}
		ps += p
	}
	return `{"id":"` + id + `","network_id":"` + netID + `","device_id":"` + inst + `","revision_number":7,"port_security_enabled":` + s + `,"allowed_address_pairs":[` + ps + `]}`
}

func netPorts(ps ...string) neutrontest.Reply {
	b := `{"ports":[`
	for i, p := range ps {
		if i > 0 {
			b += ","
		}
		b += p
	}
	return neutrontest.Reply{Code: http.StatusOK, Body: b + `]}`}
}

func node(name, providerID string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

var gw = map[string]string{"vpn": "yes"}

type mod func(*v1alpha1.NodeAddressPairs)

// nap is a created NodeAddressPairs of the gateway port gwID with the CIDR
// 192.168.10.0/24 on the nodes labelled vpn=yes.
func nap(mods ...mod) *v1alpha1.NodeAddressPairs {
	mg := &v1alpha1.NodeAddressPairs{
		ObjectMeta: metav1.ObjectMeta{Name: "vpn-pairs"},
		Spec: v1alpha1.NodeAddressPairsSpec{ForProvider: v1alpha1.NodeAddressPairsParameters{
			PortID: ptr.To(gwID), CIDRs: []v1alpha1.CIDR{"192.168.10.0/24"}, NodeSelector: gw,
		}},
	}
	meta.SetExternalName(mg, gwID)
	for _, m := range mods {
		m(mg)
	}
	return mg
}

func owned(n, port string, pairs ...v1alpha1.ObservedAddressPair) mod {
	return func(mg *v1alpha1.NodeAddressPairs) {
		mg.Status.AtProvider.NodePorts = append(mg.Status.AtProvider.NodePorts, v1alpha1.NodePortPairs{Node: n, PortID: port, Pairs: pairs})
	}
}

var (
	oursIP   = v1alpha1.ObservedAddressPair{IPAddress: "10.20.0.50", MACAddress: gwMAC}
	oursCIDR = v1alpha1.ObservedAddressPair{IPAddress: "192.168.10.0/24", MACAddress: gwMAC}
)

func TestReconcile(t *testing.T) {
	const (
		getGW = "GET /ports/" + gwID
		list  = "GET /ports?network_id=" + netID
		putA  = "PUT /ports/" + portA
		putB  = "PUT /ports/" + portB
		provA = "openstack:///" + instA
		provB = "openstack://RegionOne/" + instB
	)
	ok := neutrontest.Reply{Code: http.StatusOK, Body: `{"port":{}}`}
	type want struct {
		obs    managed.ExternalObservation
		seen   []string
		status v1alpha1.NodeAddressPairsObservation
		// saved is the record stored before the first write that adds.
		saved   []v1alpha1.NodePortPairs
		ready   string
		err     string
		message string
		// en is the external name after Observe: gwID when empty.
		en string
	}
	cases := map[string]struct {
		reason  string
		mg      *v1alpha1.NodeAddressPairs
		nodes   []*corev1.Node
		replies map[string]neutrontest.Reply
		want    want
	}{
		"AddsToSelectedNodes": {
			reason: "Each selected node's port gets the gateway's fixed IP and the CIDR with the gateway's MAC, after the pairs it has, in one PUT with If-Match; both nodes' mappings (openstack:/// and openstack://<region>/) are understood and the record lists what was added.",
			mg:     nap(),
			nodes:  []*corev1.Node{node("a", provA, gw), node("b", provB, gw)},
			replies: map[string]neutrontest.Reply{
				getGW: {Code: http.StatusOK, Body: gwPort},
				list:  netPorts(nodePort(portA, instA, true, vip), nodePort(portB, instB, true)),
				putA:  ok, putB: ok,
			},
			want: want{
				obs: managed.ExternalObservation{ResourceExists: true, Diff: "node a port " + portA + ": add [10.20.0.50@" + gwMAC + ", 192.168.10.0/24@" + gwMAC + "] remove []; node b port " + portB + ": add [10.20.0.50@" + gwMAC + ", 192.168.10.0/24@" + gwMAC + "] remove []"},
				seen: []string{getGW, list,
					putA + ` If-Match=revision_number=7 {"port":{"allowed_address_pairs":[` + vip + `,` + gwPair + `,` + cidr + `]}}`,
					putB + ` If-Match=revision_number=7 {"port":{"allowed_address_pairs":[` + gwPair + `,` + cidr + `]}}`},
				status: v1alpha1.NodeAddressPairsObservation{NetworkID: netID, NodePorts: []v1alpha1.NodePortPairs{
					{Node: "a", PortID: portA, Pairs: []v1alpha1.ObservedAddressPair{oursIP, oursCIDR}},
					{Node: "b", PortID: portB, Pairs: []v1alpha1.ObservedAddressPair{oursIP, oursCIDR}}}},
				saved: []v1alpha1.NodePortPairs{
					{Node: "a", PortID: portA, Pairs: []v1alpha1.ObservedAddressPair{oursIP, oursCIDR}},
					{Node: "b", PortID: portB, Pairs: []v1alpha1.ObservedAddressPair{oursIP, oursCIDR}}},
				ready: "False",
			},
		},
		"UpToDate": {
			reason: "At rest (the network recorded) ports holding every pair need no write and one Neutron request: the list of the network's ports, which holds the gateway's port too; Ready.",
			mg:     nap(owned("a", portA, oursIP, oursCIDR), recorded),
			nodes:  []*corev1.Node{node("a", provA, gw)},
			replies: map[string]neutrontest.Reply{
				list: netPorts(gwListed, nodePort(portA, instA, true, gwPair, cidr)),
			},
			want: want{
				obs:    managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				seen:   []string{list},
				status: v1alpha1.NodeAddressPairsObservation{NetworkID: netID, Nodes: 1, NodePorts: []v1alpha1.NodePortPairs{{Node: "a", PortID: portA, Pairs: []v1alpha1.ObservedAddressPair{oursIP, oursCIDR}}}},
				ready:  "True",
			},
		},
		"GatewayPortMadeAnew": {
			reason: "A gateway port deleted out of band and made anew on the same network (portId followed the Port) is found in the one port list: the pairs move to its address and MAC, the old ones go, and the external name follows to the new port for the reconciler to save.",
			mg: nap(owned("a", portA, oldIP), recorded, func(mg *v1alpha1.NodeAddressPairs) {
				mg.Spec.ForProvider.CIDRs = nil
				meta.SetExternalName(mg, oldGW)
			}),
			nodes: []*corev1.Node{node("a", provA, gw)},
			replies: map[string]neutrontest.Reply{
				list: netPorts(gwListed, nodePort(portA, instA, true, oldPair)),
				putA: ok,
			},
			want: want{
				obs: managed.ExternalObservation{ResourceExists: true, ResourceLateInitialized: true,
					Diff: "node a port " + portA + ": add [10.20.0.50@" + gwMAC + "] remove [10.20.0.49@" + oldMAC + "]"},
				seen:   []string{list, putA + ` If-Match=revision_number=7 {"port":{"allowed_address_pairs":[` + gwPair + `]}}`},
				status: v1alpha1.NodeAddressPairsObservation{NetworkID: netID, NodePorts: []v1alpha1.NodePortPairs{{Node: "a", PortID: portA, Pairs: []v1alpha1.ObservedAddressPair{oursIP}}}},
				saved:  []v1alpha1.NodePortPairs{{Node: "a", PortID: portA, Pairs: []v1alpha1.ObservedAddressPair{oldIP, oursIP}}},
				ready:  "False",
				en:     gwID,
			},
		},
		"ForeignEqualPairStaysForeign": {
			reason: "A pair equal to ours that the port had before (another tool's) is not added again and not recorded, so it is never removed; only the missing CIDR is added.",
			mg:     nap(),
			nodes:  []*corev1.Node{node("a", provA, gw)},
			replies: map[string]neutrontest.Reply{
				getGW: {Code: http.StatusOK, Body: gwPort},
				list:  netPorts(nodePort(portA, instA, true, gwPair)),
				putA:  ok,
			},
			want: want{
				obs:    managed.ExternalObservation{ResourceExists: true, Diff: "node a port " + portA + ": add [192.168.10.0/24@" + gwMAC + "] remove []"},
				seen:   []string{getGW, list, putA + ` If-Match=revision_number=7 {"port":{"allowed_address_pairs":[` + gwPair + `,` + cidr + `]}}`},
				status: v1alpha1.NodeAddressPairsObservation{NetworkID: netID, NodePorts: []v1alpha1.NodePortPairs{{Node: "a", PortID: portA, Pairs: []v1alpha1.ObservedAddressPair{oursCIDR}}}},
				saved:  []v1alpha1.NodePortPairs{{Node: "a", PortID: portA, Pairs: []v1alpha1.ObservedAddressPair{oursCIDR}}},
				ready:  "False",
			},
		},
		"UnselectedNodeLosesOurs": {
			reason: "A node no longer selected (relabelled, or deleted) loses the pairs the record says are ours; another tool's pair on its port stays.",
			mg:     nap(owned("b", portB, oursIP, oursCIDR)),
			nodes:  []*corev1.Node{node("b", provB, map[string]string{"vpn": "no"})},
			replies: map[string]neutrontest.Reply{
				getGW: {Code: http.StatusOK, Body: gwPort},
				list:  netPorts(nodePort(portB, instB, true, vip, gwPair, cidr)),
				putB:  ok,
			},
			want: want{
				obs:    managed.ExternalObservation{ResourceExists: true, Diff: "node b port " + portB + ": add [] remove [10.20.0.50@" + gwMAC + ", 192.168.10.0/24@" + gwMAC + "]"},
				seen:   []string{getGW, list, putB + ` If-Match=revision_number=7 {"port":{"allowed_address_pairs":[` + vip + `]}}`},
				status: v1alpha1.NodeAddressPairsObservation{NetworkID: netID},
				ready:  "False",
			},
		},
		"CIDRDropped": {
			reason: "A CIDR dropped from the spec is removed from the ports that hold it as ours.",
			mg:     nap(func(mg *v1alpha1.NodeAddressPairs) { mg.Spec.ForProvider.CIDRs = nil }, owned("a", portA, oursIP, oursCIDR)),
			nodes:  []*corev1.Node{node("a", provA, gw)},
			replies: map[string]neutrontest.Reply{
				getGW: {Code: http.StatusOK, Body: gwPort},
				list:  netPorts(nodePort(portA, instA, true, gwPair, cidr)),
				putA:  ok,
			},
			want: want{
				obs:    managed.ExternalObservation{ResourceExists: true, Diff: "node a port " + portA + ": add [] remove [192.168.10.0/24@" + gwMAC + "]"},
				seen:   []string{getGW, list, putA + ` If-Match=revision_number=7 {"port":{"allowed_address_pairs":[` + gwPair + `]}}`},
				status: v1alpha1.NodeAddressPairsObservation{NetworkID: netID, NodePorts: []v1alpha1.NodePortPairs{{Node: "a", PortID: portA, Pairs: []v1alpha1.ObservedAddressPair{oursIP}}}},
				ready:  "False",
			},
		},
		"Deleting": {
			reason: "While deleted, the resource exists as long as a port holds a pair of its record, and Delete removes exactly those; Nodes are not read.",
			mg:     nap(func(mg *v1alpha1.NodeAddressPairs) { now := metav1.Now(); mg.SetDeletionTimestamp(&now) }, owned("a", portA, oursIP, oursCIDR)),
			nodes:  []*corev1.Node{node("a", provA, gw)},
			replies: map[string]neutrontest.Reply{
				getGW: {Code: http.StatusOK, Body: gwPort},
				list:  netPorts(nodePort(portA, instA, true, vip, gwPair, cidr)),
				putA:  ok,
			},
			want: want{
				obs:    managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				seen:   []string{getGW, list, putA + ` If-Match=revision_number=7 {"port":{"allowed_address_pairs":[` + vip + `]}}`},
				status: v1alpha1.NodeAddressPairsObservation{NetworkID: netID},
				ready:  "Unknown",
			},
		},
		"GatewayPortGone": {
			reason: "When the gateway's port is gone, its pairs are removed from the ports of the network recorded in status, and Ready says why.",
			mg:     nap(owned("a", portA, oursIP), recorded),
			nodes:  []*corev1.Node{node("a", provA, gw)},
			replies: map[string]neutrontest.Reply{
				getGW: {Code: http.StatusNotFound, Body: neutrontest.Error("PortNotFound", "Port could not be found.")},
				list:  netPorts(nodePort(portA, instA, true, gwPair)),
				putA:  ok,
			},
			want: want{
				obs:     managed.ExternalObservation{ResourceExists: true, Diff: "node a port " + portA + ": add [] remove [10.20.0.50@" + gwMAC + "]"},
				seen:    []string{list, getGW, putA + ` If-Match=revision_number=7 {"port":{"allowed_address_pairs":[]}}`},
				status:  v1alpha1.NodeAddressPairsObservation{NetworkID: netID},
				ready:   "False",
				message: "the gateway's Neutron port " + gwID + " (spec.forProvider.portId) is gone: its pairs are being removed",
			},
		},
		"NodeNotMapped": {
			reason: "A selected node whose providerID is not OpenStack's, or whose instance has no port on the network, is named in Ready with the fix; the other nodes are served.",
			mg:     nap(owned("a", portA, oursIP, oursCIDR)),
			nodes:  []*corev1.Node{node("a", provA, gw), node("c", "kind://docker/c", gw), node("d", "openstack:///33333333-0000-4000-8000-000000000003", gw)},
			replies: map[string]neutrontest.Reply{
				getGW: {Code: http.StatusOK, Body: gwPort},
				list:  netPorts(nodePort(portA, instA, true, gwPair, cidr)),
			},
			want: want{
				obs:    managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				seen:   []string{getGW, list},
				status: v1alpha1.NodeAddressPairsObservation{NetworkID: netID, Nodes: 1, NodePorts: []v1alpha1.NodePortPairs{{Node: "a", PortID: portA, Pairs: []v1alpha1.ObservedAddressPair{oursIP, oursCIDR}}}},
				ready:  "False",
				message: `node c: spec.providerID "kind://docker/c" is not openstack:///<instance UUID>: run the OpenStack cloud provider (or set it so), or leave the node out with spec.forProvider.nodeSelector; ` +
					"node d: no Neutron port on network " + netID + " has its instance's device_id: give the node a port on the gateway's network, or leave it out with spec.forProvider.nodeSelector",
			},
		},
		"PortSecurityOff": {
			reason: "A node port without port security drops nothing and takes no pairs (Neutron refuses them): no write.",
			mg:     nap(),
			nodes:  []*corev1.Node{node("a", provA, gw)},
			replies: map[string]neutrontest.Reply{
				getGW: {Code: http.StatusOK, Body: gwPort},
				list:  netPorts(nodePort(portA, instA, false)),
			},
			want: want{
				obs:    managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				seen:   []string{getGW, list},
				status: v1alpha1.NodeAddressPairsObservation{NetworkID: netID, Nodes: 1},
				ready:  "True",
			},
		},
		"RevisionConflict": {
			reason: "A port another tool changed since Observe read it gets 412 from If-Match: the error names the node and port, and the record keeps what the port held, so that nothing is lost or claimed.",
			mg:     nap(owned("b", portB, oursIP)),
			nodes:  []*corev1.Node{node("a", provA, gw), node("b", provB, map[string]string{})},
			replies: map[string]neutrontest.Reply{
				getGW: {Code: http.StatusOK, Body: gwPort},
				list:  netPorts(nodePort(portA, instA, true), nodePort(portB, instB, true, gwPair)),
				putA:  {Code: http.StatusPreconditionFailed, Body: neutrontest.Error("RevisionNumberConstraintFailed", "Constrained to 7, but current revision is 8")},
			},
			want: want{
				obs: managed.ExternalObservation{ResourceExists: true, Diff: "node a port " + portA + ": add [10.20.0.50@" + gwMAC + ", 192.168.10.0/24@" + gwMAC + "] remove []; node b port " + portB + ": add [] remove [10.20.0.50@" + gwMAC + "]"},
				seen: []string{getGW, list,
					putA + ` If-Match=revision_number=7 {"port":{"allowed_address_pairs":[` + gwPair + `,` + cidr + `]}}`},
				status: v1alpha1.NodeAddressPairsObservation{NetworkID: netID, NodePorts: []v1alpha1.NodePortPairs{{Node: "b", PortID: portB, Pairs: []v1alpha1.ObservedAddressPair{oursIP}}}},
				saved: []v1alpha1.NodePortPairs{
					{Node: "a", PortID: portA, Pairs: []v1alpha1.ObservedAddressPair{oursIP, oursCIDR}},
					{Node: "b", PortID: portB, Pairs: []v1alpha1.ObservedAddressPair{oursIP}}},
				ready: "False",
				err:   "cannot update the allowed address pairs of node a's Neutron port " + portA + ": Neutron 412 RevisionNumberConstraintFailed: Constrained to 7, but current revision is 8",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, seen := neutrontest.Serve(t, tc.replies)
			sch := runtime.NewScheme()
			_ = clientgoscheme.AddToScheme(sch)
			_ = v1alpha1.SchemeBuilder.AddToScheme(sch)
			b := fake.NewClientBuilder().WithScheme(sch).WithStatusSubresource(&v1alpha1.NodeAddressPairs{}).WithObjects(stored(tc.mg))
			for _, n := range tc.nodes {
				b = b.WithObjects(n)
			}
			kube := b.Build()
			e := &external{neutron: sc, nodes: kube, kube: kube}
			ctx := context.Background()
			held := &v1alpha1.NodeAddressPairs{}
			if err := kube.Get(ctx, client.ObjectKeyFromObject(tc.mg), held); err != nil {
				t.Fatal(err)
			}
			tc.mg.ResourceVersion = held.ResourceVersion
			obs, err := e.Observe(ctx, tc.mg)
			if err != nil {
				t.Fatalf("%s\nObserve: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want.obs, obs); diff != "" {
				t.Errorf("%s\nObserve (-want +got):\n%s", tc.reason, diff)
			}
			en := tc.want.en
			if en == "" {
				en = gwID
			}
			if diff := cmp.Diff(en, meta.GetExternalName(tc.mg)); diff != "" {
				t.Errorf("%s\nexternal name after Observe (-want +got):\n%s", tc.reason, diff)
			}
			ready := tc.mg.GetCondition(xpv2.TypeReady)
			if tc.mg.GetDeletionTimestamp() != nil {
				_, err = e.Delete(ctx, tc.mg)
			} else {
				if tc.want.message != "" {
					if diff := cmp.Diff(tc.want.message, ready.Message); diff != "" {
						t.Errorf("%s\nReady's message (-want +got):\n%s", tc.reason, diff)
					}
				}
				_, err = e.Update(ctx, tc.mg)
			}
			if diff := cmp.Diff(tc.want.err, neutrontest.Message(err)); diff != "" {
				t.Errorf("%s\nerror (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.ready, string(ready.Status)); diff != "" {
				t.Errorf("%s\nReady (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.status, tc.mg.Status.AtProvider); diff != "" {
				t.Errorf("%s\nstatus.atProvider (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.seen, *seen); diff != "" {
				t.Errorf("%s\nNeutron requests (-want +got):\n%s", tc.reason, diff)
			}
			got := &v1alpha1.NodeAddressPairs{}
			if err := kube.Get(ctx, client.ObjectKeyFromObject(tc.mg), got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want.saved, got.Status.AtProvider.NodePorts); diff != "" {
				t.Errorf("%s\nstatus.atProvider.nodePorts saved before the writes (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// stored is mg as the API server holds it before the step: without
// status, so that what the step saves shows, and with a finalizer, as the
// reconciler adds.
func stored(mg *v1alpha1.NodeAddressPairs) *v1alpha1.NodeAddressPairs {
	s := mg.DeepCopy()
	s.Status = v1alpha1.NodeAddressPairsStatus{}
	s.Finalizers = []string{"finalizer.managedresource.crossplane.io"}
	return s
}

func TestCreateAndRefusals(t *testing.T) {
	const other = "99999999-0000-4000-8000-000000000009"
	cases := map[string]struct {
		reason  string
		mg      *v1alpha1.NodeAddressPairs
		replies map[string]neutrontest.Reply
		step    func(*external, *v1alpha1.NodeAddressPairs) error
		wantEN  string
		err     string
		seen    []string
	}{
		"CreateNamesOnly": {
			reason: "Create sets the external name to the gateway port's ID and sends nothing: a record made here would be lost to the reconciler's update of the external name, so Update adds the pairs.",
			mg:     nap(func(mg *v1alpha1.NodeAddressPairs) { meta.SetExternalName(mg, "") }),
			step: func(e *external, mg *v1alpha1.NodeAddressPairs) error {
				_, err := e.Create(context.Background(), mg)
				return err
			},
			wantEN: gwID,
		},
		"CreateWithoutPort": {
			reason: "Without portId (unresolved reference) Create says which field to set and how.",
			mg: nap(func(mg *v1alpha1.NodeAddressPairs) {
				meta.SetExternalName(mg, "")
				mg.Spec.ForProvider.PortID = nil
			}),
			step: func(e *external, mg *v1alpha1.NodeAddressPairs) error {
				_, err := e.Create(context.Background(), mg)
				return err
			},
			err: errNoPort,
		},
		"NotCreated": {
			reason: "Before Create, the resource does not exist and Observe sends nothing.",
			mg:     nap(func(mg *v1alpha1.NodeAddressPairs) { meta.SetExternalName(mg, "") }),
			step: func(e *external, mg *v1alpha1.NodeAddressPairs) error {
				o, err := e.Observe(context.Background(), mg)
				if o.ResourceExists {
					t.Errorf("Observe says the resource exists before Create")
				}
				return err
			},
		},
		"PortOnOtherNetwork": {
			reason: "A gateway port (followed through its reference) on another network than the pairs this resource added is refused with the way out: the old network's ports would keep them.",
			mg: nap(owned("a", portA, oursIP), func(mg *v1alpha1.NodeAddressPairs) {
				mg.Spec.ForProvider.PortID = ptr.To(other)
				mg.Status.AtProvider.NetworkID = netID
			}),
			replies: map[string]neutrontest.Reply{
				"GET /ports?network_id=" + netID: netPorts(nodePort(portA, instA, true, gwPair)),
				"GET /ports/" + other:            {Code: http.StatusOK, Body: `{"port":{"id":"` + other + `","network_id":"` + other + `","mac_address":"fa:16:3e:00:00:09"}}`},
			},
			step: func(e *external, mg *v1alpha1.NodeAddressPairs) error {
				_, err := e.Observe(context.Background(), mg)
				return err
			},
			wantEN: gwID,
			err:    "cannot move pairs between networks: the gateway's Neutron port " + other + " (spec.forProvider.portId) is on network " + other + ", the pairs this resource added on network " + netID + "; give it a port on " + netID + ", or delete this resource (which removes its pairs) and create a new one",
			seen:   []string{"GET /ports?network_id=" + netID, "GET /ports/" + other},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, seen := neutrontest.Serve(t, tc.replies)
			err := tc.step(&external{neutron: sc}, tc.mg)
			if diff := cmp.Diff(tc.err, neutrontest.Message(err)); diff != "" {
				t.Errorf("%s\nerror (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantEN, meta.GetExternalName(tc.mg)); diff != "" {
				t.Errorf("%s\nexternal name (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.seen, *seen); diff != "" {
				t.Errorf("%s\nNeutron requests (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
