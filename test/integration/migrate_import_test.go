//go:build integration

package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/ipsecgw/provider-ipsec/internal/migrate"
)

// TestImportAdmitted imports every configuration of internal/migrate's
// testdata (the VM-shaped cases of its golden tests) and offers the
// IPsecGateway to the real API server with the CRDs Crossplane makes of the
// XRDs (dry run): the namespaced IPsecGateway and the legacy claim. Every
// case that imports a tunnel must be admitted, CEL rules included; the case
// whose every conn is refused imports none.
func TestImportAdmitted(t *testing.T) {
	installXRDCRD(t, xrdCRDs(t, "zz_generated_definition_namespaced.yaml")[0])
	installXRDCRD(t, xrdCRDs(t, "zz_generated_definition.yaml")[1])
	dir := filepath.Join(repoRoot, "internal", "migrate", "testdata")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		for _, legacy := range []bool{false, true} {
			name := e.Name()
			if legacy {
				name += "/legacy-claim"
			}
			t.Run(name, func(t *testing.T) {
				opts := migrate.Options{Name: "imported", Namespace: "default", FloatingIP: "203.0.113.10", VMAddress: "10.20.0.5",
					NetworkID: "00000000-0000-4000-8000-00000000aaaa", SubnetID: "00000000-0000-4000-8000-00000000bbbb",
					FixedIP: "10.20.0.10", RouterID: "00000000-0000-4000-8000-00000000cccc", LegacyClaim: legacy}
				conf := "ipsec.conf"
				if _, err := os.Stat(filepath.Join(dir, e.Name(), "swanctl.conf")); err == nil {
					conf = "swanctl.conf"
				}
				res, err := migrate.Import(os.DirFS(filepath.Join(dir, e.Name())), conf, "ipsec.secrets", opts)
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Tunnels) == 0 {
					if e.Name() != "refused" {
						t.Fatalf("no tunnel imported from %s", e.Name())
					}
					return
				}
				b, err := migrate.GatewayManifest(res, opts)
				if err != nil {
					t.Fatal(err)
				}
				u := &unstructured.Unstructured{}
				if err := yaml.Unmarshal(b, &u.Object); err != nil {
					t.Fatal(err)
				}
				if err := kube.Create(context.Background(), u, client.DryRunAll); err != nil {
					t.Errorf("the API server refuses the IPsecGateway imported from %s: %v\n%s", e.Name(), err, b)
				}
			})
		}
	}
}
