package workload

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json from the code")

// TestGoldenObjects compares every object of a gateway with the JSON in
// testdata: replicas-1.json was written before replicas existed, so a
// Gateway with replicas 1 or none renders byte for byte as before, except
// for what made the agent reload tunnel changes live instead of replacing
// the pod (the start hash in place of the config hash, the agent's flags
// to watch its configuration), and beside the Deployment for the single
// pod's handover (the Lease and the agent's rule on it; arp_ignore in the
// NAD with silentStartImage, which the network hash leaves out:
// TestSilentStart); replicas-2.json is the
// active/standby pair. LegacyTemplate turns either Deployment back into
// what providers before that rendered, byte for byte (legacy-*.json, their
// goldens): a Deployment they made is not rolled by an upgrade.
func TestGoldenObjects(t *testing.T) {
	cases := map[string]struct {
		reason   string
		replicas *int32
		golden   string
	}{
		"Unset": {
			reason: "A Gateway without replicas renders as before replicas existed.",
			golden: "replicas-1.json",
		},
		"One": {
			reason:   "replicas 1 renders exactly as a Gateway without it: the Deployment's pod template does not change on upgrade.",
			replicas: ptr.To[int32](1),
			golden:   "replicas-1.json",
		},
		"Two": {
			reason:   "replicas 2 renders two pods on different nodes that elect the active one with the gateway's Lease.",
			replicas: ptr.To[int32](2),
			golden:   "replicas-2.json",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gw(nil)
			g.Spec.ForProvider.Replicas = tc.replicas
			g.Spec.ForProvider.Tunnels = []v1alpha1.Tunnel{{Name: "branch-a", TrafficSelectors: []v1alpha1.TrafficSelector{{Local: "100.64.0.0/24", Remote: "192.168.10.0/24"}}}}
			g.Spec.ForProvider.DataPlane = v1alpha1.DataPlaneLibipsec
			o, err := Build(g, files)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := typed(o)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(objs, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tc.golden)
			if *update && tc.replicas != nil {
				if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)+"\n"); diff != "" {
				t.Errorf("%s\n%s: -want, +got:\n%s", tc.reason, path, diff)
			}
			LegacyTemplate(o.Deployment, files.Hash)
			if objs, err = typed(o); err != nil {
				t.Fatal(err)
			}
			legacy := filepath.Join("testdata", "legacy-"+tc.golden)
			if want, err = os.ReadFile(legacy); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(deploymentOf(t, apiServerDefaults(t, want)), deploymentOf(t, generic(t, objs))); diff != "" {
				t.Errorf("LegacyTemplate must render what the older provider did.\n%s: -want, +got:\n%s", legacy, diff)
			}
		})
	}
}

// apiServerDefaults is golden, a JSON array of objects an older provider
// applied, with the defaults the API server gives what the provider now
// applies itself (it owns every key of a list entry and all of an atomic
// struct): the protocol (TCP) of each container port, the API version (v1)
// of each downward API field selector. The live objects an older provider
// made hold them already, so applying them changes no pod template.
func apiServerDefaults(t *testing.T, golden []byte) []any {
	t.Helper()
	var objs []any
	if err := json.Unmarshal(golden, &objs); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		containers, _, _ := unstructured.NestedSlice(o.(map[string]any), "spec", "template", "spec", "containers")
		for _, c := range containers {
			c := c.(map[string]any)
			ports, _ := c["ports"].([]any)
			for _, p := range ports {
				if p := p.(map[string]any); p["protocol"] == nil {
					p["protocol"] = string(corev1.ProtocolTCP)
				}
			}
			env, _ := c["env"].([]any)
			for _, e := range env {
				if ref, ok, _ := unstructured.NestedMap(e.(map[string]any), "valueFrom", "fieldRef"); ok && ref["apiVersion"] == nil {
					ref["apiVersion"] = "v1"
					_ = unstructured.SetNestedMap(e.(map[string]any), ref, "valueFrom", "fieldRef")
				}
			}
		}
		if len(containers) > 0 {
			_ = unstructured.SetNestedSlice(o.(map[string]any), containers, "spec", "template", "spec", "containers")
		}
	}
	return objs
}

// generic is objs as JSON values.
func generic(t *testing.T, objs any) []any {
	t.Helper()
	b, err := json.Marshal(objs)
	if err != nil {
		t.Fatal(err)
	}
	var out []any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// deploymentOf returns the one Deployment of objs, generic objects.
func deploymentOf(t *testing.T, objs []any) any {
	t.Helper()
	for _, o := range objs {
		if o.(map[string]any)["kind"] == "Deployment" {
			return o
		}
	}
	t.Fatal("no Deployment")
	return nil
}
