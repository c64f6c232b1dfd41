//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// badClaims creates (dry run) variants of the pinned-FIP example that the
// XRD's schema and CEL rules must refuse, each with a message naming the
// field at fault.
func badClaims(t *testing.T, s *stack) {
	b, err := os.ReadFile(filepath.Join(s.state, "claims", "pinned-fip.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		change func(spec map[string]any)
		want   string
	}{
		"a client subnet overlapping a tenant subnet": {
			change: func(spec map[string]any) { spec["tenantSubnets"] = []any{"192.168.0.0/16"} },
			want:   "a tunnel's remote traffic selector overlaps a tenantSubnets entry",
		},
		"both a pinned and an allocated floating IP": {
			change: func(spec map[string]any) {
				spec["endpoint"].(map[string]any)["floatingNetworkId"] = s.runbook.ExtNetID
			},
			want: "endpoint needs exactly one of floatingIP",
		},
		"a tunnel without a PSK reference": {
			change: func(spec map[string]any) {
				delete(spec["tunnels"].([]any)[0].(map[string]any), "preSharedKeySecretRef")
			},
			want: "spec.tunnels[0]: Invalid value: give exactly one of preSharedKeySecretRef (a pre-shared key) and certificate (X.509 certificates)",
		},
		"mode routed without a router": {
			change: func(spec map[string]any) { spec["mode"] = "routed"; delete(spec, "exposures") },
			want:   "mode routed needs spec.routed",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(b, &u.Object); err != nil {
				t.Fatal(err)
			}
			u.SetName("bad-claim")
			tc.change(u.Object["spec"].(map[string]any))
			err := s.kube.Create(context.Background(), u, client.DryRunAll)
			if err == nil {
				t.Fatalf("the claim was accepted, want it refused with %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("refused with\n%v\nwant a message containing %q", err, tc.want)
			}
		})
	}
}
