//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// upgradeField is the optional field the second provider package adds to
// the Port CRDs.
const upgradeField = "upgradeProbe"

// upgradedCRDs are the CRDs the second provider package adds upgradeField
// to: the Port of each scope, so that the managed resources of either
// style of IPsecGateway see their CRD upgraded.
var upgradedCRDs = []string{"ports.networking.ipsecgw.io", "ports.networking.m.ipsecgw.io"}

// upgradeProvider upgrades the provider as a platform team does, through
// the stack's registry and Crossplane's dependency resolution: it pushes
// v0.1.1 of the provider package (its Port CRDs with an added optional
// field) and v0.1.1 of the Configuration, whose dependsOn asks for the
// provider >=v0.1.1, points the installed Configuration at that tag, and
// checks that Crossplane resolved and installed the new provider (the CRD
// upgraded, two provider revisions, one active) while the claim stayed as
// it was: Ready, its composed resources untouched, its tunnel up.
func upgradeProvider(t *testing.T, s *stack, claim string) {
	var before *unstructured.Unstructured
	eventually(t, "the claim shows its rendered configuration", time.Minute, func() (bool, string) {
		before = s.get(t, s.xr.gvk, tenant, claim)
		return str(before, "status", "gateway", "configHash") != "", "no status.gateway.configHash"
	})
	registry := s.registry(t)
	dir := t.TempDir()
	start := time.Now()
	mustRun(t, s.env, "cluster/local/packages.sh", "push", "provider-ipsec", secondProviderPackage(t, dir), "v0.1.1")
	mustRun(t, s.env, "cluster/local/packages.sh", "push", "ipsecgw-configuration", secondConfiguration(t, dir, registry), "v0.1.1")
	t.Logf("provider and Configuration v0.1.1 built and pushed in %s", time.Since(start).Round(100*time.Millisecond))

	start = time.Now()
	s.kubectl(t, "patch", "configuration.pkg.crossplane.io", "ipsecgw-configuration", "--type", "merge",
		"-p", `{"spec":{"package":"`+registry+`/ipsecgw-configuration:v0.1.1"}}`)
	want := registry + "/provider-ipsec:v0.1.1"
	took := eventually(t, "Crossplane resolves the Configuration's new constraint to the provider "+want, 3*time.Minute, func() (bool, string) {
		got := s.kubectl(t, "get", "provider.pkg.crossplane.io", "provider-ipsec", "-o", "jsonpath={.spec.package}")
		return got == want, "the provider package is " + got
	})
	t.Logf("provider upgrade resolved by Crossplane %s after the Configuration's update", took.Round(100*time.Millisecond))
	mustRun(t, s.env, "cluster/local/packages.sh", "runtime")
	t.Logf("provider upgrade installed and healthy in %s", time.Since(start).Round(100*time.Millisecond))

	for _, name := range upgradedCRDs {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		if err := s.kube.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
			t.Fatal(err)
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		if _, ok, _ := unstructured.NestedMap(versions[0].(map[string]any), forProviderPath(upgradeField)...); !ok {
			t.Errorf("the CRD %s has no %s after the upgrade", name, upgradeField)
		}
	}
	revs := &unstructured.UnstructuredList{}
	revs.SetGroupVersionKind(schema.GroupVersionKind{Group: "pkg.crossplane.io", Version: "v1", Kind: "ProviderRevisionList"})
	if err := s.kube.List(context.Background(), revs, client.MatchingLabels{"pkg.crossplane.io/package": "provider-ipsec"}); err != nil {
		t.Fatal(err)
	}
	var active []string
	for _, r := range revs.Items {
		if str(&r, "spec", "desiredState") == "Active" {
			active = append(active, str(&r, "spec", "image"))
		}
	}
	if len(revs.Items) != 2 || len(active) != 1 || active[0] != want {
		t.Errorf("after the upgrade there are %d provider revisions, active %v; want 2, [%s]", len(revs.Items), active, want)
	}

	// The claim and what it is made of are undisturbed.
	time.Sleep(5 * time.Second)
	after := s.get(t, s.xr.gvk, tenant, claim)
	for _, p := range [][]string{
		{"status", "floatingIP", "attached"}, {"status", "floatingIP", "address"}, {"status", "port", "id"},
		{"status", "securityGroup", "id"}, {"status", "gateway", "configHash"}, {"status", "gateway", "tunnelsUp"},
	} {
		if b, a := str(before, p...), str(after, p...); a != b {
			t.Errorf("claim %v changed with the upgrade: %q, was %q", p, a, b)
		}
	}
	if st, msg := condition(after, "Ready", "status", "conditions"); st != "True" {
		t.Errorf("after the upgrade the claim is Ready=%q: %s", st, msg)
	}
	for _, step := range []string{"securityGroup", "port", "floatingIP"} {
		if st, msg := condition(after, "Synced", "status", step, "conditions"); st != "True" {
			t.Errorf("after the upgrade the claim's %s is Synced=%q: %s", step, st, msg)
		}
	}
}

// registry returns the stack's registry (cluster/local/lib.sh), from the
// ports its bring-up recorded.
func (s *stack) registry(t *testing.T) string {
	t.Helper()
	port := stackPorts(t, s.state)["REGISTRY_PORT"]
	if port == "" {
		t.Fatalf("no REGISTRY_PORT in %s/ports", s.state)
	}
	return "127.0.0.1:" + port
}

// forProviderPath is the path of a forProvider field's schema within a CRD
// version.
func forProviderPath(field string) []string {
	return []string{"schema", "openAPIV3Schema", "properties", "spec", "properties", "forProvider", "properties", field}
}

// secondProviderPackage builds the provider package again in dir, with the
// upgradedCRDs given an optional field, and the runtime image `make xpkg`
// built.
func secondProviderPackage(t *testing.T, dir string) string {
	t.Helper()
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
		// package/crds/<group>_<plural>.yaml
		group, plural, _ := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".yaml"), "_")
		if slices.Contains(upgradedCRDs, plural+"."+group) {
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
	crankBuild(t, "--package-root", pkg, "--examples-root", filepath.Join(dir, "no-examples"),
		"--embed-runtime-image-tarball", filepath.Join(root, "_output", "xpkg", "provider-image.tar"), "-o", out)
	return out
}

// secondConfiguration builds the Configuration package in dir as
// hack/xpkg.sh does for registry, with its dependency on the provider
// raised to >=v0.1.1.
func secondConfiguration(t *testing.T, dir, registry string) string {
	t.Helper()
	pkg := filepath.Join(dir, "configuration")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "package", "configuration", "*.yaml"))
	for _, f := range files {
		copyFile(t, f, filepath.Join(pkg, filepath.Base(f)))
	}
	meta := filepath.Join(pkg, "crossplane.yaml")
	b, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	provider := "package: ${REPO}/provider-ipsec\n    version: \">=v0.1.0\""
	if !strings.Contains(string(b), provider) {
		t.Fatalf("package/configuration/crossplane.yaml has no %q", provider)
	}
	m := strings.Replace(string(b), provider, "package: ${REPO}/provider-ipsec\n    version: \">=v0.1.1\"", 1)
	if err := os.WriteFile(meta, []byte(strings.ReplaceAll(m, "${REPO}", registry)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "ipsecgw-configuration-upgrade.xpkg")
	crankBuild(t, "--package-root", pkg, "--examples-root", filepath.Join(dir, "no-examples"), "-o", out)
	return out
}

// crankBuild runs crossplane xpkg build with args.
func crankBuild(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "crank"), append([]string{"xpkg", "build"}, args...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("crank xpkg build: %v\n%s", err, b)
	}
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
