package workload

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
)

// TestRouteMode proves what a route-mode tunnel adds to the gateway's
// objects, and only then: xfrm.json in the ConfigMap (the agent's input)
// and, in the NAD's tuning sysctls, loose reverse-path filtering for the
// interfaces created after the CNI and ECMP hashing by ports.
func TestRouteMode(t *testing.T) {
	xfrm := []byte(`{"interfaces": [], "routes": []}` + "\n")
	cases := map[string]struct {
		reason     string
		mode       v1alpha1.TunnelMode
		xfrm       []byte
		wantKeys   []string
		wantSysctl map[string]any
	}{
		"Policy": {
			reason:     "A policy-mode gateway's ConfigMap and NAD are as before.",
			wantKeys:   []string{contract.KeyNATRules, contract.KeySwanctlConf},
			wantSysctl: map[string]any{"net.ipv4.ip_forward": "1"},
		},
		"Route": {
			reason:     "A route-mode tunnel adds xfrm.json, rp_filter 2 for the interfaces to come and ECMP by ports.",
			mode:       v1alpha1.TunnelModeRoute,
			xfrm:       xfrm,
			wantKeys:   []string{contract.KeyNATRules, contract.KeySwanctlConf, contract.KeyXFRMInterfaces},
			wantSysctl: map[string]any{"net.ipv4.ip_forward": "1", "net.ipv4.conf.default.rp_filter": "2", "net.ipv4.fib_multipath_hash_policy": "1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gw(nil)
			g.Spec.ForProvider.Tunnels = []v1alpha1.Tunnel{{Name: "cloud-vpn-1", Mode: tc.mode}}
			f := *files
			f.XFRMInterfaces = tc.xfrm
			objs, err := typedObjects(g, &f)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			cm := objs[1].(*corev1.ConfigMap)
			for k := range cm.Data {
				keys = append(keys, k)
			}
			if diff := cmp.Diff(tc.wantKeys, keys, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("%s\nConfigMap keys: -want, +got:\n%s", tc.reason, diff)
			}
			if tc.xfrm != nil && cm.Data[contract.KeyXFRMInterfaces] != string(tc.xfrm) {
				t.Errorf("%s\nConfigMap %s = %q, want the rendered file", tc.reason, contract.KeyXFRMInterfaces, cm.Data[contract.KeyXFRMInterfaces])
			}
			if diff := cmp.Diff(tc.wantSysctl, nadSysctl(t, objs)); diff != "" {
				t.Errorf("%s\nNAD tuning sysctls: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
