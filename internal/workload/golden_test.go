package workload

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json from the code")

// TestGoldenObjects compares every object of a gateway with the JSON in
// testdata: replicas-1.json was written before replicas existed, so a
// Gateway with replicas 1 or none renders byte for byte as before, except
// for what made the agent reload tunnel changes live instead of replacing
// the pod (the start hash in place of the config hash, the agent's flags
// to watch its configuration); replicas-2.json is the active/standby pair.
// LegacyTemplate turns either back into what providers before that
// rendered, byte for byte (legacy-*.json, their goldens): a Deployment
// they made is not rolled by an upgrade.
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
			objs, err := Objects(g, files)
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
			d := objs[len(objs)-1].(*appsv1.Deployment)
			LegacyTemplate(d, files.Hash)
			if got, err = json.MarshalIndent(objs, "", "  "); err != nil {
				t.Fatal(err)
			}
			legacy := filepath.Join("testdata", "legacy-"+tc.golden)
			if want, err = os.ReadFile(legacy); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)+"\n"); diff != "" {
				t.Errorf("LegacyTemplate must render what the older provider did.\n%s: -want, +got:\n%s", legacy, diff)
			}
		})
	}
}
