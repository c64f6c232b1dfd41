//go:build integration

package integration

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// TestGatewayAdmissionStartActionDataPlane proves the API server refuses a
// tunnel with startAction trap on dataPlane Libipsec (kernel-libipsec
// raises no acquires: the tunnel would never initiate), naming the field
// and what to use instead, and admits every other combination, the
// fields left out included.
func TestGatewayAdmissionStartActionDataPlane(t *testing.T) {
	const refused = "a tunnel's startAction trap never initiates with dataPlane Libipsec"
	cases := map[string]struct {
		reason      string
		dataPlane   gwv1alpha1.DataPlane
		startAction []string
		want        string
	}{
		"TrapLibipsec": {
			reason:    "trap on the userspace data plane is refused, naming spec.forProvider.tunnels and the way out.",
			dataPlane: gwv1alpha1.DataPlaneLibipsec, startAction: []string{"trap"},
			want: "spec.forProvider.tunnels: Invalid value: " + refused,
		},
		"SecondTunnelTrapLibipsec": {
			reason:    "One trapped tunnel among others is enough to refuse.",
			dataPlane: gwv1alpha1.DataPlaneLibipsec, startAction: []string{"start", "trap"},
			want: "use startAction start (or respond), or dataPlane KernelXFRM",
		},
		"TrapKernelXFRM": {
			reason:    "The kernel's XFRM raises acquires: trap is admitted.",
			dataPlane: gwv1alpha1.DataPlaneKernelXFRM, startAction: []string{"trap"},
		},
		"TrapDefaultDataPlane": {
			reason:      "dataPlane left out is KernelXFRM: trap is admitted.",
			startAction: []string{"trap"},
		},
		"LibipsecDefaultStartAction": {
			reason:      "startAction left out is start: admitted on Libipsec.",
			dataPlane:   gwv1alpha1.DataPlaneLibipsec,
			startAction: []string{""},
		},
		"RespondLibipsec": {
			reason:    "respond needs no acquire: admitted on Libipsec.",
			dataPlane: gwv1alpha1.DataPlaneLibipsec, startAction: []string{"respond"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := gatewaySpec("tenant-admission")
			spec.DataPlane = tc.dataPlane
			base := spec.Tunnels[0]
			spec.Tunnels = nil
			for i, a := range tc.startAction {
				tn := base
				tn.Name = base.Name + string(rune('a'+i))
				tn.Peer.Address = "198.51.100." + string(rune('1'+i))
				tn.StartAction = a
				spec.Tunnels = append(spec.Tunnels, tn)
			}
			gw := &gwv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "admission-" + strings.ToLower(name)}, Spec: gwv1alpha1.GatewaySpec{ForProvider: spec}}
			err := kube.Create(context.Background(), gw, client.DryRunAll)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("\n%s\nrefused: %v", tc.reason, err)
			case tc.want != "" && err == nil:
				t.Errorf("\n%s\nadmitted, want refused with %q", tc.reason, tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("\n%s\nrefused with\n%v\nwant a message containing %q", tc.reason, err, tc.want)
			}
		})
	}
}
