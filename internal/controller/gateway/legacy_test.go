package gateway

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

func TestKeepLegacyTemplate(t *testing.T) {
	gw := &v1alpha1.Gateway{}
	gw.Name = "vpn"
	gw.Spec.ForProvider = v1alpha1.GatewayParameters{Namespace: "tenant-a", GatewayConfig: v1alpha1.GatewayConfig{
		Endpoint: v1alpha1.Endpoint{PrivateAddress: "10.20.0.10", PrefixLength: 24, Gateway: "10.20.0.1", MACAddress: "fa:16:3e:00:00:0a"},
		Images:   v1alpha1.Images{StrongSwan: "gw:1", Agent: "gw:1"},
	}}
	libipsec := gw.DeepCopy()
	libipsec.Spec.ForProvider.DataPlane = v1alpha1.DataPlaneLibipsec
	files := func(g *v1alpha1.Gateway, conf string) *render.Files {
		ss := []byte(nil)
		if g.Spec.ForProvider.DataPlane == v1alpha1.DataPlaneLibipsec {
			ss = []byte("charon {\n}\n")
		}
		f := &render.Files{SwanctlConf: []byte(conf), NATRules: []byte("table ip ipsecgw {\n}\n"), StrongSwanConf: ss}
		f.Hash, f.StartHash = contract.ConfigHash(f.SwanctlConf, f.NATRules, ss, nil), render.StartHash(ss)
		return f
	}
	objects := func(g *v1alpha1.Gateway, f *render.Files) *workload.Objects {
		objs, err := workload.Build(g, f)
		if err != nil {
			t.Fatal(err)
		}
		return objs
	}
	n := workload.NamesOf("vpn")
	// legacy is what a provider before start hashes applied for g and f:
	// the same objects, the pod template with the config hash instead.
	legacy := func(g *v1alpha1.Gateway, f *render.Files) *workload.Objects {
		objs := objects(g, f)
		workload.LegacyTemplate(objs.Deployment, f.Hash)
		return objs
	}
	// known is legacy after this provider took it over once: the
	// Deployment says which fragment its pod started with.
	known := func(objs *workload.Objects, start string) *workload.Objects {
		objs.Deployment.WithAnnotations(map[string]string{workload.AnnotationStartHash: start})
		return objs
	}
	// withConfig is objs with the ConfigMap of other.
	withConfig := func(objs, other *workload.Objects) *workload.Objects {
		objs.Config = other.Config
		return objs
	}
	// Hash and StartHash are the pod template's, Started the Deployment's.
	type want struct{ Hash, StartHash, Started string }
	old, edited := files(gw, "connections {\n}\n"), files(gw, "connections {\n  a {\n  }\n}\n")
	cases := map[string]struct {
		reason string
		live   *workload.Objects
		gw     *v1alpha1.Gateway
		f      *render.Files
		want   want
	}{
		"NewForm": {
			reason: "A Deployment with a start hash keeps the new form.",
			live:   objects(gw, old), gw: gw, f: edited,
			want: want{StartHash: edited.StartHash},
		},
		"LegacyTunnelEdit": {
			reason: "A legacy Deployment made for the live ConfigMap keeps its config hash, value unchanged, and gets no start hash, even when the tunnels changed: the agent loads them live.",
			live:   legacy(gw, old), gw: gw, f: edited,
			want: want{Hash: old.Hash, Started: old.StartHash},
		},
		"LegacyKnownStart": {
			reason: "A legacy Deployment taken over before keeps its config hash after the ConfigMap moved on: the Deployment says which fragment its pod started with.",
			live:   withConfig(known(legacy(gw, old), old.StartHash), objects(gw, edited)),
			gw:     gw, f: files(gw, "connections {\n  b {\n  }\n}\n"),
			want: want{Hash: old.Hash, Started: old.StartHash},
		},
		"LegacyKnownStartChanged": {
			reason: "A legacy Deployment taken over before whose fragment changes takes the new form.",
			live:   known(legacy(gw, old), old.StartHash), gw: libipsec, f: files(libipsec, "connections {\n}\n"),
			want: want{StartHash: files(libipsec, "connections {\n}\n").StartHash},
		},
		"LegacyLibipsec": {
			reason: "A legacy Libipsec Deployment whose fragment is unchanged keeps its config hash.",
			live:   legacy(libipsec, files(libipsec, "connections {\n}\n")), gw: libipsec, f: files(libipsec, "connections {\n  a {\n  }\n}\n"),
			want: want{Hash: files(libipsec, "connections {\n}\n").Hash, Started: files(libipsec, "connections {\n}\n").StartHash},
		},
		"LegacyDataPlaneChange": {
			reason: "A legacy Deployment whose strongswan.conf fragment changes is replaced anyway: it takes the new form.",
			live:   legacy(gw, old), gw: libipsec, f: files(libipsec, "connections {\n}\n"),
			want: want{StartHash: files(libipsec, "connections {\n}\n").StartHash},
		},
		"LegacyOtherConfigMap": {
			reason: "A legacy pod template that was not made for the live ConfigMap (an older provider stopped between the two) cannot be trusted: the new form.",
			live:   withConfig(legacy(gw, edited), objects(gw, old)), gw: gw, f: edited,
			want: want{StartHash: edited.StartHash},
		},
		"LegacyImageChange": {
			reason: "A legacy Deployment whose image changes is replaced anyway: it takes the new form.",
			live:   legacy(gw, old), gw: func() *v1alpha1.Gateway { g := gw.DeepCopy(); g.Spec.ForProvider.Images.Agent = "gw:2"; return g }(), f: old,
			want: want{StartHash: old.StartHash},
		},
		"LegacyNetworkChange": {
			reason: "A legacy Deployment whose network attachment changes is replaced anyway: it takes the new form.",
			live:   legacy(gw, old), gw: func() *v1alpha1.Gateway {
				g := gw.DeepCopy()
				g.Spec.ForProvider.Endpoint.PrivateAddress = "10.20.0.11"
				return g
			}(), f: old,
			want: want{StartHash: old.StartHash},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := newTarget(nil)
			applyAll(t, c, tc.live, fieldManager)
			e := &external{target: c, live: &readOnce{Reader: c}, objects: objects(tc.gw, tc.f)}
			live := &appsv1.Deployment{}
			if err := c.Get(context.Background(), types.NamespacedName{Namespace: "tenant-a", Name: n.Gateway}, live); err != nil {
				t.Fatal(err)
			}
			if err := e.keepLegacyTemplate(context.Background(), live, n); err != nil {
				t.Fatal(err)
			}
			d := e.objects.Deployment
			a := d.Spec.Template.Annotations
			if diff := cmp.Diff(tc.want, want{Hash: a[workload.AnnotationHash], StartHash: a[workload.AnnotationStartHash], Started: d.Annotations[workload.AnnotationStartHash]}); diff != "" {
				t.Errorf("%s\npod template hashes: -want, +got:\n%s", tc.reason, diff)
			}
			if tc.want.Hash != "" {
				template := &corev1.PodTemplateSpec{}
				decode(t, d.Spec.Template, template)
				if diff := cmp.Diff(&live.Spec.Template, template); diff != "" {
					t.Errorf("%s\nthe kept legacy template differs from the live one: -live, +desired:\n%s", tc.reason, diff)
				}
			}
		})
	}
}
