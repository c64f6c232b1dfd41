package v1alpha1

import (
	"reflect"
	"testing"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cluster "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
)

// TestTwinFields proves that the namespaced parameters have exactly the
// fields of their cluster twins', so that a field added to one kind and
// not to the other fails here rather than being dropped by a conversion.
func TestTwinFields(t *testing.T) {
	fields := func(v any) []string {
		var names []string
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			names = append(names, rt.Field(i).Name+" "+rt.Field(i).Tag.Get("json"))
		}
		return names
	}
	cases := map[string]struct {
		reason     string
		ns, parent any
	}{
		"Port": {
			reason: "PortParameters has the fields of cluster.PortParameters.",
			ns:     PortParameters{}, parent: cluster.PortParameters{},
		},
		"FloatingIPBinding": {
			reason: "FloatingIPBindingParameters has the fields of cluster.FloatingIPBindingParameters.",
			ns:     FloatingIPBindingParameters{}, parent: cluster.FloatingIPBindingParameters{},
		},
		"RouterRoutes": {
			reason: "RouterRoutesParameters has the fields of cluster.RouterRoutesParameters.",
			ns:     RouterRoutesParameters{}, parent: cluster.RouterRoutesParameters{},
		},
		"NodeAddressPairs": {
			reason: "NodeAddressPairsParameters has the fields of cluster.NodeAddressPairsParameters.",
			ns:     NodeAddressPairsParameters{}, parent: cluster.NodeAddressPairsParameters{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(fields(tc.parent), fields(tc.ns)); diff != "" {
				t.Errorf("%s\n-cluster, +namespaced:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestTwinRoundTrip proves that a namespaced resource seen as its cluster
// twin and back is unchanged, and that the twin is a copy.
func TestTwinRoundTrip(t *testing.T) {
	policy := &xpv2.Policy{Resolve: ptr.To(xpv2.ResolvePolicy("Always"))}
	meta := metav1.ObjectMeta{Namespace: "tenant-a", Name: "gw", UID: "uid", Annotations: map[string]string{"crossplane.io/external-name": "id"}}
	status := xpv2.ManagedResourceStatus{ConditionedStatus: xpv2.ConditionedStatus{Conditions: []xpv2.Condition{xpv2.Available()}}}
	port := &Port{ObjectMeta: meta,
		Spec: PortSpec{ForProvider: PortParameters{
			NetworkID: ptr.To("net"), NetworkIDRef: &xpv2.NamespacedReference{Name: "net", Policy: policy},
			NetworkIDSelector: &xpv2.NamespacedSelector{MatchLabels: map[string]string{"a": "b"}, MatchControllerRef: ptr.To(true)},
			Name:              ptr.To("n"), Description: ptr.To("d"), FixedIPs: []cluster.FixedIP{{SubnetID: ptr.To(cluster.UUID("s"))}},
			SecurityGroupIDs: []string{"sg"}, SecurityGroupIDRefs: []xpv2.NamespacedReference{{Name: "sg"}},
			SecurityGroupIDSelector: &xpv2.NamespacedSelector{MatchLabels: map[string]string{"c": "d"}},
			AllowedAddressPairs:     []cluster.AddressPair{{IPAddress: "10.0.0.0/24"}}, PortSecurityEnabled: ptr.To(true), Tags: []string{"t"},
		}},
		Status: PortStatus{ManagedResourceStatus: status, AtProvider: cluster.PortObservation{ID: "id", MACAddress: "fa:16:3e:00:00:01"}},
	}
	binding := &FloatingIPBinding{ObjectMeta: meta,
		Spec: FloatingIPBindingSpec{ForProvider: FloatingIPBindingParameters{
			FloatingIPAddress: ptr.To(cluster.IPAddress("192.0.2.10")), PortID: ptr.To("port"),
			PortIDRef: &xpv2.NamespacedReference{Name: "gw"}, PortIDSelector: &xpv2.NamespacedSelector{MatchControllerRef: ptr.To(true)},
			FixedIP: ptr.To(cluster.IPAddress("10.0.0.5")), Description: ptr.To("d"),
		}},
		Status: FloatingIPBindingStatus{ManagedResourceStatus: status, AtProvider: cluster.FloatingIPBindingObservation{Attached: true}},
	}
	routes := &RouterRoutes{ObjectMeta: meta,
		Spec: RouterRoutesSpec{ForProvider: RouterRoutesParameters{
			RouterID: "r", Routes: []cluster.Route{{Destination: "192.168.10.0/24", Nexthop: ptr.To(cluster.IPAddress("10.0.0.5"))}},
			Nexthop: ptr.To("10.0.0.5"), NexthopPortRef: &xpv2.NamespacedReference{Name: "gw", Policy: policy},
			NexthopPortSelector: &xpv2.NamespacedSelector{MatchLabels: map[string]string{"a": "b"}},
		}},
		Status: RouterRoutesStatus{ManagedResourceStatus: status, AtProvider: cluster.RouterRoutesObservation{RevisionNumber: 3}},
	}
	pairs := &NodeAddressPairs{ObjectMeta: meta,
		Spec: NodeAddressPairsSpec{ForProvider: NodeAddressPairsParameters{
			PortID: ptr.To("port"), PortIDRef: &xpv2.NamespacedReference{Name: "gw", Policy: policy},
			PortIDSelector: &xpv2.NamespacedSelector{MatchControllerRef: ptr.To(true)},
			CIDRs:          []cluster.CIDR{"192.168.10.0/24"}, NodeSelector: map[string]string{"ipsec": "yes"},
		}},
		Status: NodeAddressPairsStatus{ManagedResourceStatus: status, AtProvider: cluster.NodeAddressPairsObservation{
			NetworkID: "net", Nodes: 1, NodePorts: []cluster.NodePortPairs{{Node: "n1", PortID: "p1", Pairs: []cluster.ObservedAddressPair{{IPAddress: "10.0.0.5", MACAddress: "fa:16:3e:00:00:01"}}}},
		}},
	}
	cases := map[string]struct {
		reason string
		trip   func() (before, after any)
	}{
		"NodeAddressPairs": {
			reason: "NodeAddressPairs convert to their twin and back without loss.",
			trip: func() (any, any) {
				back := &NodeAddressPairs{}
				back.FromCluster(pairs.Cluster())
				return pairs, back
			},
		},
		"RouterRoutes": {
			reason: "RouterRoutes convert to their twin and back without loss.",
			trip: func() (any, any) {
				back := &RouterRoutes{}
				back.FromCluster(routes.Cluster())
				return routes, back
			},
		},
		"Port": {
			reason: "A Port converts to its twin and back without loss.",
			trip: func() (any, any) {
				back := &Port{}
				back.FromCluster(port.Cluster())
				return port, back
			},
		},
		"Copy": {
			reason: "The twin is a copy: what the external client changes on it reaches the resource only by FromCluster.",
			trip: func() (any, any) {
				before := port.DeepCopy()
				c := port.Cluster()
				c.Annotations["edited"] = "yes"
				c.Spec.ForProvider.Tags[0] = "edited"
				c.Status.AtProvider.ID = "edited"
				return before, port
			},
		},
		"FloatingIPBinding": {
			reason: "A FloatingIPBinding converts to its twin and back without loss.",
			trip: func() (any, any) {
				back := &FloatingIPBinding{}
				back.FromCluster(binding.Cluster())
				return binding, back
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before, after := tc.trip()
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestOmitReferenceNamespaces proves that the references a namespaced
// resolver selected, which it records with the resource's own namespace,
// lose that namespace (which the schema refuses) and nothing else.
func TestOmitReferenceNamespaces(t *testing.T) {
	ref := func(ns string) *xpv2.NamespacedReference { return &xpv2.NamespacedReference{Name: "gw", Namespace: ns} }
	sel := &xpv2.NamespacedSelector{MatchControllerRef: ptr.To(true)}
	cases := map[string]struct {
		reason    string
		got, want interface{ OmitReferenceNamespaces() }
	}{
		"Port": {
			reason: "A Port's network and security group references lose their namespace.",
			got: &Port{Spec: PortSpec{ForProvider: PortParameters{NetworkIDRef: ref("tenant-a"), SecurityGroupIDRefs: []xpv2.NamespacedReference{*ref("tenant-a")},
				SecurityGroupIDSelector: sel, SecurityGroupIDs: []string{"sg"}}}},
			want: &Port{Spec: PortSpec{ForProvider: PortParameters{NetworkIDRef: ref(""), SecurityGroupIDRefs: []xpv2.NamespacedReference{*ref("")},
				SecurityGroupIDSelector: sel, SecurityGroupIDs: []string{"sg"}}}},
		},
		"FloatingIPBinding": {
			reason: "A binding's port reference loses its namespace.",
			got:    &FloatingIPBinding{Spec: FloatingIPBindingSpec{ForProvider: FloatingIPBindingParameters{PortIDRef: ref("tenant-a"), PortIDSelector: sel}}},
			want:   &FloatingIPBinding{Spec: FloatingIPBindingSpec{ForProvider: FloatingIPBindingParameters{PortIDRef: ref(""), PortIDSelector: sel}}},
		},
		"RouterRoutes": {
			reason: "RouterRoutes' nexthop port reference loses its namespace.",
			got:    &RouterRoutes{Spec: RouterRoutesSpec{ForProvider: RouterRoutesParameters{NexthopPortRef: ref("tenant-a"), NexthopPortSelector: sel}}},
			want:   &RouterRoutes{Spec: RouterRoutesSpec{ForProvider: RouterRoutesParameters{NexthopPortRef: ref(""), NexthopPortSelector: sel}}},
		},
		"NodeAddressPairs": {
			reason: "NodeAddressPairs' port reference loses its namespace.",
			got:    &NodeAddressPairs{Spec: NodeAddressPairsSpec{ForProvider: NodeAddressPairsParameters{PortIDRef: ref("tenant-a"), PortIDSelector: sel}}},
			want:   &NodeAddressPairs{Spec: NodeAddressPairsSpec{ForProvider: NodeAddressPairsParameters{PortIDRef: ref(""), PortIDSelector: sel}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.got.OmitReferenceNamespaces()
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
