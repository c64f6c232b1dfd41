//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// upgradeField is the optional field the second provider package adds to
// the Port CRD.
const upgradeField = "upgradeProbe"

// upgradeProvider builds a second provider package whose Port CRD has an
// added optional field, installs it over the first through the package
// manager and checks that the CRD is upgraded while the claim's composed
// resources stay as they were.
func upgradeProvider(t *testing.T, s *stack, claim string) {
	var before *unstructured.Unstructured
	eventually(t, "the claim shows its rendered configuration", time.Minute, func() (bool, string) {
		before = s.get(t, claimGVK, tenant, claim)
		return str(before, "status", "gateway", "configHash") != "", "no status.gateway.configHash"
	})
	xpkg := secondProviderPackage(t)
	start := time.Now()
	if out, err := runScript(s.env, "cluster/local/install-package.sh", "provider", "provider-ipsec", xpkg); err != nil {
		t.Fatalf("install-package.sh: %v\n%s", err, out)
	}
	t.Logf("provider upgrade installed and healthy in %s", time.Since(start).Round(100*time.Millisecond))

	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	if err := s.kube.Get(context.Background(), client.ObjectKey{Name: "ports.networking.ipsecgw.io"}, crd); err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if _, ok, _ := unstructured.NestedMap(versions[0].(map[string]any), forProviderPath(upgradeField)...); !ok {
		t.Errorf("the Port CRD has no %s after the upgrade", upgradeField)
	}
	revs := &unstructured.UnstructuredList{}
	revs.SetGroupVersionKind(schema.GroupVersionKind{Group: "pkg.crossplane.io", Version: "v1", Kind: "ProviderRevisionList"})
	if err := s.kube.List(context.Background(), revs, client.MatchingLabels{"pkg.crossplane.io/package": "provider-ipsec"}); err != nil {
		t.Fatal(err)
	}
	active := 0
	for _, r := range revs.Items {
		if str(&r, "spec", "desiredState") == "Active" {
			active++
		}
	}
	if len(revs.Items) != 2 || active != 1 {
		t.Errorf("after the upgrade there are %d provider revisions, %d active; want 2, 1", len(revs.Items), active)
	}

	// The claim and what it is made of are undisturbed.
	time.Sleep(5 * time.Second)
	after := s.get(t, claimGVK, tenant, claim)
	for _, p := range [][]string{
		{"status", "floatingIP", "attached"}, {"status", "floatingIP", "address"}, {"status", "port", "id"},
		{"status", "securityGroup", "id"}, {"status", "gateway", "configHash"},
	} {
		if b, a := str(before, p...), str(after, p...); a != b {
			t.Errorf("claim %v changed with the upgrade: %q, was %q", p, a, b)
		}
	}
	for _, step := range []string{"securityGroup", "port", "floatingIP"} {
		if st, msg := condition(after, "Synced", "status", step, "conditions"); st != "True" {
			t.Errorf("after the upgrade the claim's %s is Synced=%q: %s", step, st, msg)
		}
	}
}

// forProviderPath is the path of a forProvider field's schema within a CRD
// version.
func forProviderPath(field string) []string {
	return []string{"schema", "openAPIV3Schema", "properties", "spec", "properties", "forProvider", "properties", field}
}

// secondProviderPackage builds the provider package again, with the Port
// CRD given an optional field, and the runtime image `make xpkg` built.
func secondProviderPackage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	pkg := filepath.Join(dir, "package")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(root, "package", "crossplane.yaml"), filepath.Join(pkg, "crossplane.yaml"))
	crds, _ := filepath.Glob(filepath.Join(root, "package", "crds", "*.yaml"))
	for _, f := range crds {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(f) == "networking.ipsecgw.io_ports.yaml" {
			u := map[string]any{}
			if err := yaml.Unmarshal(b, &u); err != nil {
				t.Fatal(err)
			}
			versions := u["spec"].(map[string]any)["versions"].([]any)
			props, _, _ := unstructured.NestedMap(versions[0].(map[string]any), forProviderPath("")[:7]...)
			props[upgradeField] = map[string]any{"type": "string", "description": "An optional field the upgrade test adds."}
			if err := unstructured.SetNestedMap(versions[0].(map[string]any), props, forProviderPath("")[:7]...); err != nil {
				t.Fatal(err)
			}
			if b, err = yaml.Marshal(u); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(pkg, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "provider-ipsec-upgrade.xpkg")
	cmd := exec.Command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "crank"), "xpkg", "build",
		"--package-root", pkg, "--examples-root", filepath.Join(dir, "no-examples"),
		"--embed-runtime-image-tarball", filepath.Join(root, "_output", "xpkg", "provider-image.tar"), "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("crank xpkg build: %v\n%s", err, b)
	}
	return out
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
