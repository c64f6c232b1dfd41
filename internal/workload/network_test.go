package workload

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

func TestNetworkScript(t *testing.T) {
	routing := "ip route replace 10.20.0.0/24 dev net1 src 10.20.0.10 table 120\n" +
		"ip route replace default via 10.20.0.1 dev net1 table 120\n" +
		"ip rule del priority 1000 2>/dev/null || true\n" +
		"ip rule add priority 1000 from 10.20.0.10 lookup 120\n"
	tunnel := func(name string, locals ...string) v1alpha1.Tunnel {
		t := v1alpha1.Tunnel{Name: name}
		for _, l := range locals {
			t.TrafficSelectors = append(t.TrafficSelectors, v1alpha1.TrafficSelector{Local: v1alpha1.CIDR(l), Remote: "192.168.10.0/24"})
		}
		return t
	}
	cases := map[string]struct {
		dp      v1alpha1.DataPlane
		tunnels []v1alpha1.Tunnel
		want    string
	}{
		"KernelXFRM: routing only, whatever the selectors": {
			dp: v1alpha1.DataPlaneKernelXFRM, tunnels: []v1alpha1.Tunnel{tunnel("a", "100.64.0.0/24")},
			want: routing,
		},
		"Libipsec, nat: the first address of the inside subnet": {
			dp: v1alpha1.DataPlaneLibipsec, tunnels: []v1alpha1.Tunnel{tunnel("a", "100.64.0.0/24")},
			want: routing + "ip address replace 100.64.0.1/32 dev net1\n",
		},
		"Libipsec, routed: the private address lies inside the tenant subnet": {
			dp: v1alpha1.DataPlaneLibipsec, tunnels: []v1alpha1.Tunnel{tunnel("a", "10.20.0.0/16")},
			want: routing,
		},
		"Libipsec: one address per selector, none for a selector an earlier one covers": {
			dp: v1alpha1.DataPlaneLibipsec,
			tunnels: []v1alpha1.Tunnel{
				tunnel("a", "100.64.0.0/24", "100.64.1.0/24"),
				tunnel("b", "100.64.0.0/23", "100.64.2.7/32", "100.64.0.0/24"),
			},
			want: routing + "ip address replace 100.64.0.1/32 dev net1\n" +
				"ip address replace 100.64.1.1/32 dev net1\n" +
				"ip address replace 100.64.2.7/32 dev net1\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gw(nil)
			g.Spec.ForProvider.DataPlane = tc.dp
			g.Spec.ForProvider.Tunnels = tc.tunnels
			if diff := cmp.Diff(tc.want, networkScript(g)); diff != "" {
				t.Errorf("-want, +got:\n%s", diff)
			}
			objs, err := typedObjects(g, files)
			if err != nil {
				t.Fatal(err)
			}
			want := []corev1.Container{{
				Name: "network", Image: "gw:1", Command: []string{"/bin/sh", "-euc", tc.want},
				SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}},
			}}
			if diff := cmp.Diff(want, objs[9].(*appsv1.Deployment).Spec.Template.Spec.InitContainers); diff != "" {
				t.Errorf("init containers: -want, +got:\n%s", diff)
			}
		})
	}
}

func TestNetworkHash(t *testing.T) {
	hash := func(mutate func(*v1alpha1.Gateway)) string {
		g := gw(nil)
		mutate(g)
		objs, err := typedObjects(g, files)
		if err != nil {
			t.Fatal(err)
		}
		return objs[9].(*appsv1.Deployment).Spec.Template.Annotations[AnnotationNetworkHash]
	}
	base := hash(func(*v1alpha1.Gateway) {})
	if len(base) != 64 {
		t.Fatalf("network hash %q, want 64 hex digits", base)
	}
	if got := hash(func(g *v1alpha1.Gateway) { g.Spec.ForProvider.Active = ptr.To(false) }); got != base {
		t.Errorf("the network hash changed with spec.active (%s → %s): only the attachment should change it", base, got)
	}
	if got := hash(func(g *v1alpha1.Gateway) { g.Spec.ForProvider.Endpoint.Gateway = "10.20.0.254" }); got == base {
		t.Errorf("the network hash did not change with the endpoint's gateway: a changed attachment would not roll the pod")
	}
}

func TestSilentStart(t *testing.T) {
	const arpIgnore = "net.ipv4.conf.net1.arp_ignore"
	cases := map[string]struct {
		reason   string
		replicas *int32
		seen     string
		want     bool
	}{
		"NeverSeen": {
			reason: "Without an agent seen to reset arp_ignore, the pod's net1 answers from its start, as before.",
		},
		"ItsImageSeen": {
			reason: "The single pod of an image whose agent was seen to reset arp_ignore starts silent.",
			seen:   "gw:1",
			want:   true,
		},
		"OtherImageSeen": {
			reason: "An image whose agent was not seen to reset arp_ignore (an older one kept through a provider upgrade) would never answer: no silent start.",
			seen:   "gw:2",
		},
		"TwoReplicas": {
			reason:   "An active/standby pair has no address from the CNI to keep quiet: its agents add it.",
			replicas: ptr.To[int32](2),
			seen:     "gw:1",
		},
	}
	base := gw(nil)
	baseObjs, err := typedObjects(base, files)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gw(nil)
			g.Spec.ForProvider.Replicas = tc.replicas
			g.Status.AtProvider.SilentStartImage = tc.seen
			objs, err := typedObjects(g, files)
			if err != nil {
				t.Fatal(err)
			}
			_, got := nadSysctl(t, objs)[arpIgnore]
			if got != tc.want {
				t.Errorf("%s\n%s in the NAD: got %v, want %v", tc.reason, arpIgnore, got, tc.want)
			}
			if tc.replicas != nil {
				return
			}
			// A running pod is not replaced for it: the pod template,
			// network hash included, is that of a gateway never seen.
			if diff := cmp.Diff(baseObjs[9], objs[9]); diff != "" {
				t.Errorf("%s\nthe Deployment changed with silentStartImage: -before, +after:\n%s", tc.reason, diff)
			}
		})
	}
}

// nadSysctl returns the sysctls of the tuning plugin (the second) of the
// network attachment, the first of objs.
func nadSysctl(t *testing.T, objs []client.Object) map[string]any {
	t.Helper()
	cfg, _, _ := unstructured.NestedString(objs[0].(*unstructured.Unstructured).Object, "spec", "config")
	var nad struct {
		Plugins []struct {
			Sysctl map[string]any `json:"sysctl"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(cfg), &nad); err != nil {
		t.Fatal(err)
	}
	if len(nad.Plugins) < 2 {
		t.Fatalf("the NAD has %d plugins, want the interface's and tuning", len(nad.Plugins))
	}
	return nad.Plugins[1].Sysctl
}
