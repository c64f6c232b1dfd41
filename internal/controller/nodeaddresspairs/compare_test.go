package nodeaddresspairs

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsecurity"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
)

func TestInstanceID(t *testing.T) {
	cases := map[string]struct {
		reason, providerID, want string
		ok                       bool
	}{
		"NoRegion":  {reason: "The OpenStack cloud provider's usual form.", providerID: "openstack:///" + instA, want: instA, ok: true},
		"Region":    {reason: "With a region.", providerID: "openstack://RegionOne/" + instA, want: instA, ok: true},
		"Other":     {reason: "Another cloud's providerID names no instance.", providerID: "aws:///eu-west-1a/i-0abc", ok: false},
		"Empty":     {reason: "A node without providerID names no instance.", providerID: "", ok: false},
		"NoID":      {reason: "openstack:/// alone names no instance.", providerID: "openstack:///", ok: false},
		"NoSlashes": {reason: "openstack://<id> without the path slash is not the cloud provider's form.", providerID: "openstack://" + instA, ok: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := instanceID(tc.providerID)
			if diff := cmp.Diff([]any{tc.want, tc.ok}, []any{got, ok}); diff != "" {
				t.Errorf("%s\ninstanceID(%q) (-want +got):\n%s", tc.reason, tc.providerID, diff)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	want := []pair{pairOf("10.20.0.50", gwMAC)}
	stranger := ports.AddressPair{IPAddress: "10.20.0.222", MACAddress: "fa:16:3e:00:00:01"}
	ours := ports.AddressPair{IPAddress: "10.20.0.50", MACAddress: gwMAC}
	port := func(id, inst string, security bool, aps ...ports.AddressPair) neutronPort {
		return neutronPort{Port: ports.Port{ID: id, DeviceID: inst, AllowedAddressPairs: aps}, PortSecurityExt: portsecurity.PortSecurityExt{PortSecurityEnabled: security}}
	}
	record := []v1alpha1.NodePortPairs{{Node: "b", PortID: portB, Pairs: []v1alpha1.ObservedAddressPair{{IPAddress: "10.20.0.50", MACAddress: gwMAC}}}}
	type change struct {
		Node, Port       string
		Add, Remove, Own []pair
	}
	cases := map[string]struct {
		reason   string
		want     []pair
		targets  []target
		ports    []neutronPort
		owned    []v1alpha1.NodePortPairs
		changes  []change
		unmapped []string
	}{
		"Add": {
			reason:  "A selected node's port with port security gets the pairs it lacks; another tool's pair stays and is not ours.",
			want:    want,
			targets: []target{{node: "a", instance: instA}},
			ports:   []neutronPort{port(portA, instA, true, stranger)},
			changes: []change{{Node: "a", Port: portA, Add: want, Own: want}},
		},
		"Held": {
			reason:  "A port that holds the pair already, recorded as ours, needs nothing.",
			want:    want,
			targets: []target{{node: "b", instance: instB}},
			ports:   []neutronPort{port(portB, instB, true, ours)},
			owned:   record,
			changes: []change{{Node: "b", Port: portB, Own: want}},
		},
		"NoPortSecurity": {
			reason:  "A port without port security takes no pairs.",
			want:    want,
			targets: []target{{node: "a", instance: instA}},
			ports:   []neutronPort{port(portA, instA, false)},
			changes: []change{{Node: "a", Port: portA}},
		},
		"Deselected": {
			reason:  "A node no longer selected loses the recorded pair it holds, and only that.",
			want:    want,
			ports:   []neutronPort{port(portB, instB, true, ours, stranger)},
			owned:   record,
			changes: []change{{Node: "b", Port: portB, Remove: want}},
		},
		"NotOurs": {
			reason:  "A pair equal to ours that the record does not hold was there before: never removed.",
			ports:   []neutronPort{port(portB, instB, true, ours)},
			changes: []change{},
		},
		"Unmapped": {
			reason:   "A selected node without a port on the network is named.",
			want:     want,
			targets:  []target{{node: "a", instance: instA}},
			changes:  []change{},
			unmapped: []string{"a"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, unmapped := plan(tc.want, tc.targets, tc.ports, tc.owned)
			changes := []change{}
			for _, c := range got {
				changes = append(changes, change{Node: c.node, Port: c.port.ID, Add: c.add, Remove: c.remove, Own: c.ours})
			}
			if diff := cmp.Diff(tc.changes, changes); diff != "" {
				t.Errorf("%s\nplan(...) changes: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.unmapped, unmapped); diff != "" {
				t.Errorf("%s\nplan(...) unmapped: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
