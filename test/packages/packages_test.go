//go:build integration

package packages

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

var root, _ = filepath.Abs(filepath.Join("..", ".."))

// files are what hack/xpkg.sh writes.
var files = []string{"provider-image.tar", "provider-ipsec.xpkg", "function-image.tar", "function-ipsecgw.xpkg", "ipsecgw-configuration.xpkg"}

// repo is the registry path the Configuration built here depends on its
// packages under (hack/xpkg.sh's REPO).
const repo = "127.0.0.1:5000"

// build runs hack/xpkg.sh (all three packages, the Configuration for repo)
// into a directory of its own and returns the digest of each file, by name.
func build(t *testing.T) (string, map[string]string) {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command(filepath.Join(root, "hack", "xpkg.sh"))
	cmd.Env = append(os.Environ(), "OUT="+out, "REPO="+repo)
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		cmd.Env = append(cmd.Env, "TOOLS_BIN="+dir)
	}
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hack/xpkg.sh: %v\n%s", err, b)
	}
	digests := map[string]string{}
	for _, f := range files {
		img, err := tarball.ImageFromPath(filepath.Join(out, f), nil)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests[f] = d.String()
	}
	return out, digests
}

// packageObjects returns the objects of the package.yaml of an xpkg.
func packageObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("%s has no package.yaml", path)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != "package.yaml" {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		var objs []*unstructured.Unstructured
		for _, doc := range bytes.Split(b, []byte("\n---\n")) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &u.Object); err != nil {
				t.Fatal(err)
			}
			if len(u.Object) > 0 {
				objs = append(objs, u)
			}
		}
		return objs
	}
}

// kinds returns "Kind name" of each object, sorted.
func kinds(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+" "+o.GetName())
	}
	slices.Sort(out)
	return out
}

// TestPackages builds the packages twice and checks that the digests match
// and what each package holds.
func TestPackages(t *testing.T) {
	out, first := build(t)
	_, second := build(t)
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("two builds of one tree give different digests: -first +second:\n%s", diff)
	}
	for _, f := range files {
		st, _ := os.Stat(filepath.Join(out, f))
		t.Logf("%-28s %6d KiB  %s", f, st.Size()/1024, first[f])
	}

	t.Run("provider", func(t *testing.T) {
		objs := packageObjects(t, filepath.Join(out, "provider-ipsec.xpkg"))
		want := []string{"Provider provider-ipsec"}
		crds, err := filepath.Glob(filepath.Join(root, "package", "crds", "*.yaml"))
		if err != nil || len(crds) == 0 {
			t.Fatalf("no CRDs in package/crds: %v", err)
		}
		for _, f := range crds {
			b := strings.TrimSuffix(filepath.Base(f), ".yaml")
			group, plural, _ := strings.Cut(b, "_")
			want = append(want, "CustomResourceDefinition "+plural+"."+group)
		}
		slices.Sort(want)
		if diff := cmp.Diff(want, kinds(objs)); diff != "" {
			t.Errorf("the provider package holds -want +got:\n%s", diff)
		}
		for _, o := range objs {
			if o.GetKind() == "Provider" {
				if v, _, _ := unstructured.NestedString(o.Object, "spec", "crossplane", "version"); v != ">=v2.0.0" {
					t.Errorf("the provider needs Crossplane %q, want >=v2.0.0", v)
				}
				// Safe start: Crossplane installs the kinds inactive until an
				// activation policy names them, and the provider starts each
				// controller once its CRD is established.
				if c, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "capabilities"); !slices.Equal(c, []string{"safe-start"}) {
					t.Errorf("the provider's capabilities are %q, want [safe-start]", c)
				}
			}
		}
	})

	t.Run("function", func(t *testing.T) {
		objs := packageObjects(t, filepath.Join(out, "function-ipsecgw.xpkg"))
		if diff := cmp.Diff([]string{"Function function-ipsecgw"}, kinds(objs)); diff != "" {
			t.Errorf("the function package holds -want +got:\n%s", diff)
		}
		if v, _, _ := unstructured.NestedString(objs[0].Object, "spec", "crossplane", "version"); v != ">=v2.0.0" {
			t.Errorf("the function needs Crossplane %q, want >=v2.0.0", v)
		}
	})

	t.Run("configuration", func(t *testing.T) {
		objs := packageObjects(t, filepath.Join(out, "ipsecgw-configuration.xpkg"))
		want := []string{"CompositeResourceDefinition ipsecgateways.vpn.m.ipsecgw.io", "CompositeResourceDefinition xipsecgateways.vpn.ipsecgw.io",
			"Composition ipsecgateways.vpn.m.ipsecgw.io", "Composition xipsecgateways.vpn.ipsecgw.io", "Configuration ipsecgw-configuration",
			"ManagedResourceActivationPolicy ipsecgw-configuration"}
		if diff := cmp.Diff(want, kinds(objs)); diff != "" {
			t.Errorf("the Configuration package holds -want +got:\n%s", diff)
		}
		for _, o := range objs {
			if o.GetKind() != "Configuration" {
				continue
			}
			deps, _, _ := unstructured.NestedSlice(o.Object, "spec", "dependsOn")
			var got []string
			for _, d := range deps {
				m := d.(map[string]any)
				got = append(got, m["kind"].(string)+" "+m["package"].(string)+" "+m["version"].(string))
			}
			want := []string{
				"Provider " + repo + "/provider-ipsec >=v0.1.0",
				"Function " + repo + "/function-ipsecgw >=v0.1.0",
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the Configuration depends on -want +got:\n%s", diff)
			}
			if v, _, _ := unstructured.NestedString(o.Object, "spec", "crossplane", "version"); v != ">=v2.0.0" {
				t.Errorf("the Configuration needs Crossplane %q, want >=v2.0.0", v)
			}
		}
	})
}
