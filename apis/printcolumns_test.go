package apis

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/google/go-cmp/cmp"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ipsecgw/provider-ipsec/test/crds"
)

// TestManagedKindsPrintReadyAndSynced proves that every managed resource
// kind of the provider, in both scopes, prints READY and SYNCED in its
// CRD's (package/crds) first columns, as Crossplane's own kinds do: `kubectl
// get managed` lines up every kind's state, and a kind without them (the
// namespaced FloatingIPBinding had no READY) hides whether it is up. The
// kinds come from the scheme, so that a kind added later is checked too.
func TestManagedKindsPrintReadyAndSynced(t *testing.T) {
	want := []extv1.CustomResourceColumnDefinition{
		{Name: "READY", Type: "string", JSONPath: ".status.conditions[?(@.type=='Ready')].status"},
		{Name: "SYNCED", Type: "string", JSONPath: ".status.conditions[?(@.type=='Synced')].status"},
	}
	read, err := crds.Read(filepath.Join("..", "package", "crds"))
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[schema.GroupKind]*extv1.CustomResourceDefinition{}
	for _, crd := range read {
		byKind[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = crd
	}
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	managed := reflect.TypeFor[resource.Managed]()
	kinds := 0
	for gvk, typ := range s.AllKnownTypes() {
		if strings.HasSuffix(gvk.Kind, "List") || !reflect.PointerTo(typ).Implements(managed) {
			continue
		}
		kinds++
		t.Run(gvk.GroupKind().String(), func(t *testing.T) {
			crd, ok := byKind[gvk.GroupKind()]
			if !ok {
				t.Fatalf("no CRD of managed kind %s in package/crds: run make generate", gvk.GroupKind())
			}
			for _, v := range crd.Spec.Versions {
				var got []extv1.CustomResourceColumnDefinition
				if n := len(v.AdditionalPrinterColumns); n >= 2 {
					got = v.AdditionalPrinterColumns[:2]
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s version %s: the first printer columns are not READY and SYNCED (add the kubebuilder:printcolumn markers): -want, +got:\n%s", gvk.GroupKind(), v.Name, diff)
				}
			}
		})
	}
	// The provider has six managed kinds in each scope; fewer found means
	// the scheme walk is broken, not that every kind passed.
	if kinds < 12 {
		t.Errorf("found %d managed kinds in the scheme, want at least 12 (six in each scope)", kinds)
	}
}
