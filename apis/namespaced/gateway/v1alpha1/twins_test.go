package v1alpha1

import (
	"testing"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cluster "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// TestTwin proves that a namespaced Gateway seen as its cluster twin runs
// its objects in its own namespace, converts back without loss, and that
// the twin is a copy.
func TestTwin(t *testing.T) {
	gw := &Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "vpn", UID: "uid", Labels: map[string]string{"cutover": "1"}},
		Spec: GatewaySpec{ForProvider: cluster.GatewayConfig{
			Active: ptr.To(true), Mode: cluster.ModeNAT, TenantSubnets: []cluster.CIDR{"10.96.0.0/12"},
			Endpoint: cluster.Endpoint{PrivateAddress: "10.20.0.10", PrefixLength: 24, Gateway: "10.20.0.1", MACAddress: "fa:16:3e:00:00:0a", LocalID: "203.0.113.10"},
			Tunnels:  []cluster.Tunnel{{Name: "branch", PreSharedKeySecretRef: &xpv2.LocalSecretKeySelector{LocalSecretReference: xpv2.LocalSecretReference{Name: "psk"}, Key: "psk"}}},
		}},
		Status: GatewayStatus{
			ManagedResourceStatus: xpv2.ManagedResourceStatus{ConditionedStatus: xpv2.ConditionedStatus{Conditions: []xpv2.Condition{xpv2.Available()}}},
			AtProvider:            cluster.GatewayObservation{ConfigHash: "h", TunnelsUp: "1/1"},
		},
	}
	cases := map[string]struct {
		reason string
		trip   func() (want, got any)
	}{
		"OwnNamespace": {
			reason: "The twin's objects (spec.forProvider.namespace) are in the Gateway's own namespace.",
			trip:   func() (any, any) { return "tenant-a", gw.Cluster().Spec.ForProvider.Namespace },
		},
		"RoundTrip": {
			reason: "A Gateway converts to its twin and back without loss.",
			trip: func() (any, any) {
				back := &Gateway{}
				back.FromCluster(gw.Cluster())
				return gw, back
			},
		},
		"Copy": {
			reason: "The twin is a copy: what the external client changes on it reaches the Gateway only by FromCluster.",
			trip: func() (any, any) {
				before := gw.DeepCopy()
				c := gw.Cluster()
				c.Labels["cutover"] = "2"
				c.Spec.ForProvider.Tunnels[0].Name = "edited"
				c.Status.AtProvider.TunnelsUp = "0/1"
				return before, gw
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want, got := tc.trip()
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
