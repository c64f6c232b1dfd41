package function

import (
	"testing"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	nv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	nsnet "github.com/ipsecgw/provider-ipsec/apis/namespaced/networking/v1alpha1"
)

func TestNamespacedRef(t *testing.T) {
	cases := map[string]struct {
		reason string
		xr     map[string]any
		want   *xpv2.ProviderConfigReference
	}{
		"Legacy": {
			reason: "The legacy claim's composite composes cluster-scoped resources: no namespaced ProviderConfig reference.",
			xr:     map[string]any{"apiVersion": "vpn.ipsecgw.io/v1alpha1", "spec": map[string]any{"providerConfigName": "default"}},
		},
		"Named": {
			reason: "A namespaced IPsecGateway's spec.providerConfigRef is its resources'.",
			xr: map[string]any{"apiVersion": NamespacedGroup + "/v1alpha1", "spec": map[string]any{
				"providerConfigRef": map[string]any{"kind": "ProviderConfig", "name": "own"}}},
			want: &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "own"},
		},
		"Defaulted": {
			reason: "A namespaced IPsecGateway without spec.providerConfigRef (the XRD defaults it) uses the ClusterProviderConfig default.",
			xr:     map[string]any{"apiVersion": NamespacedGroup + "/v1alpha1", "spec": map[string]any{}},
			want:   &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := namespacedRef(tc.xr)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nnamespacedRef(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestNamespaced(t *testing.T) {
	pc := &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "own"}
	params := nv1alpha1.FloatingIPBindingParameters{FloatingIPAddress: ptr.To(nv1alpha1.IPAddress("203.0.113.10")),
		PortIDSelector: &xpv2.Selector{MatchControllerRef: ptr.To(true)}}
	binding := func(p xpv2.DeletionPolicy) *nv1alpha1.FloatingIPBinding {
		return &nv1alpha1.FloatingIPBinding{Spec: nv1alpha1.FloatingIPBindingSpec{
			ClusterManagedResourceSpec: xpv2.ClusterManagedResourceSpec{ProviderConfigReference: &xpv2.Reference{Name: "ignored"}, DeletionPolicy: p},
			ForProvider:                params,
		}}
	}
	want := func(mp xpv2.ManagementPolicies) *nsnet.FloatingIPBinding {
		return &nsnet.FloatingIPBinding{Spec: nsnet.FloatingIPBindingSpec{
			ManagedResourceSpec: xpv2.ManagedResourceSpec{ProviderConfigReference: pc, ManagementPolicies: mp},
			ForProvider: nsnet.FloatingIPBindingParameters{FloatingIPAddress: params.FloatingIPAddress,
				PortIDSelector: &xpv2.NamespacedSelector{MatchControllerRef: ptr.To(true)}},
		}}
	}
	cases := map[string]struct {
		reason string
		in     runtime.Object
		want   runtime.Object
		err    bool
	}{
		"PinnedBinding": {
			reason: "A pinned binding (deletionPolicy Orphan) becomes a namespaced binding that Crossplane never deletes, with the composite's ProviderConfig and its selector in the namespace.",
			in:     binding(xpv2.DeletionOrphan),
			want:   want(orphan),
		},
		"AllocatedBinding": {
			reason: "An allocated binding (deletionPolicy Delete) keeps the default management policies: deleted with the composite.",
			in:     binding(xpv2.DeletionDelete),
			want:   want(nil),
		},
		"NoTwin": {
			reason: "A kind without a namespaced twin is an error.",
			in:     &nv1alpha1.NetworkList{},
			err:    true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Namespaced(tc.in, pc)
			if (err != nil) != tc.err {
				t.Fatalf("%s\nNamespaced(...): error %v, want error %t", tc.reason, err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nNamespaced(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
