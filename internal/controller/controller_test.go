package controller

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// registrations records what is registered with a gate; no callback runs.
type registrations struct {
	gvks [][]schema.GroupVersionKind
}

func (r *registrations) Register(_ func(), gvks ...schema.GroupVersionKind) {
	r.gvks = append(r.gvks, gvks)
}

func (r *registrations) Set(schema.GroupVersionKind, bool) bool { return false }

// untouched is a manager whose every method panics (nil embedded
// interface): SetupGated must leave the manager alone until a gate opens.
type untouched struct{ manager.Manager }

// packageKinds returns the kinds of the CRDs of the provider's package
// (package/crds), by their storage version.
func packageKinds(t *testing.T) []schema.GroupVersionKind {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "package", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in package/crds: %v", err)
	}
	var gvks []schema.GroupVersionKind
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				gvks = append(gvks, schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind})
			}
		}
	}
	return gvks
}

func TestSetupGated(t *testing.T) {
	// What each controller waits for, by the CRDs of the package: a
	// managed resource kind its own CRD, a ProviderConfig kind its own and
	// its usages' (ProviderConfigUsage of its group), which have no
	// controller of their own.
	var want []string
	for _, gvk := range packageKinds(t) {
		switch {
		case gvk.Kind == "ProviderConfigUsage":
		case strings.HasSuffix(gvk.Kind, "ProviderConfig"):
			want = append(want, gvk.String()+" + "+gvk.GroupVersion().WithKind("ProviderConfigUsage").String())
		default:
			want = append(want, gvk.String())
		}
	}
	slices.Sort(want)

	cases := map[string]struct {
		reason string
		gate   bool
		want   []string
		err    bool
	}{
		"EveryKindGated": {
			reason: "Every kind of the package has one controller, registered to start once the CRDs it needs are established, and none starts before.",
			gate:   true,
			want:   want,
		},
		"NoGate": {
			reason: "Without a gate (the provider did not wire customresourcesgate) no controller is registered.",
			err:    true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &registrations{}
			o := controller.Options{Logger: logging.NewNopLogger()}
			if tc.gate {
				o.Gate = r
			}
			err := SetupGated(untouched{}, o, Dependencies{OpenStack: openstack.NewClients()})
			if (err != nil) != tc.err {
				t.Errorf("%s\nSetupGated(): error %v, want error: %t", tc.reason, err, tc.err)
			}
			var got []string
			for _, gvks := range r.gvks {
				s := make([]string, len(gvks))
				for i, gvk := range gvks {
					s[i] = gvk.String()
				}
				got = append(got, strings.Join(s, " + "))
			}
			slices.Sort(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nregistered controllers, by the kinds each waits for: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
