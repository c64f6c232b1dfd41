//go:build integration

package configuration

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	xpv1alpha1 "github.com/crossplane/crossplane/apis/v2/apiextensions/v1alpha1"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/ipsecgw/provider-ipsec/test/crds"
)

// documents returns the YAML documents of file, each as an object.
func documents(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("%s: %v", file, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// TestActivationCoversComposedKinds checks the Configuration's
// ManagedResourceActivationPolicy against what the Compositions compose:
// the provider has the safe-start capability, so a kind the policy does
// not name has no CRD once the Configuration is installed (an IPsecGateway
// composing it would never be Ready), and a kind it names that nothing
// composes would be activated for nothing. What they compose is what every
// golden of TestRender holds besides the composite; a kind's activation
// name is its CRD's (package/crds).
func TestActivationCoversComposedKinds(t *testing.T) {
	names := map[schema.GroupKind]string{}
	read, err := crds.Read(filepath.Join(root, "package", "crds"))
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range read {
		names[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = crd.GetName()
	}

	goldens, err := filepath.Glob(filepath.Join("testdata", "*", "rendered.yaml"))
	if err != nil || len(goldens) == 0 {
		t.Fatalf("no goldens in testdata: %v", err)
	}
	var composed []string
	for _, g := range goldens {
		// The first is the composite; function results (none yet) are
		// render.crossplane.io's.
		for _, o := range documents(t, g)[1:] {
			if o.GroupVersionKind().Group == "render.crossplane.io" {
				continue
			}
			gk := o.GroupVersionKind().GroupKind()
			name, ok := names[gk]
			if !ok {
				t.Errorf("%s composes %s, which is no kind of the provider's package", g, gk)
				continue
			}
			if !slices.Contains(composed, name) {
				composed = append(composed, name)
			}
		}
	}
	slices.Sort(composed)

	b, err := os.ReadFile(filepath.Join(root, "package", "configuration", "activation.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p := &xpv1alpha1.ManagedResourceActivationPolicy{}
	if err := yaml.UnmarshalStrict(b, p); err != nil {
		t.Fatalf("package/configuration/activation.yaml: %v", err)
	}
	var activated []string
	for _, name := range names {
		if p.Activates(name) {
			activated = append(activated, name)
		}
	}
	slices.Sort(activated)
	if diff := cmp.Diff(composed, activated); diff != "" {
		t.Errorf("the kinds the Configuration activates (package/configuration/activation.yaml) are not those its Compositions compose: -composed +activated:\n%s", diff)
	}
}
