package v1alpha1

import (
	"context"
	"testing"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestClearResolvedReferences(t *testing.T) {
	keep := &xpv2.Policy{Resolve: ptr.To(resolveIfNotPresent)}
	always := &xpv2.Policy{Resolve: ptr.To(xpv2.ResolvePolicyAlways)}
	controlled := &xpv2.Selector{MatchControllerRef: ptr.To(true)}
	cases := map[string]struct {
		reason   string
		in, want any
	}{
		"Reference": {
			reason: "A port ID resolved from a reference is cleared, to be resolved again from the Port it names.",
			in:     FloatingIPBindingParameters{PortID: ptr.To("old"), PortIDRef: &xpv2.Reference{Name: "port"}},
			want:   FloatingIPBindingParameters{PortIDRef: &xpv2.Reference{Name: "port"}},
		},
		"Selector": {
			reason: "A reference a selector chose is cleared with the ID: a Port composed again has another name, and the selector must choose again.",
			in:     FloatingIPBindingParameters{PortID: ptr.To("old"), PortIDRef: &xpv2.Reference{Name: "port-a"}, PortIDSelector: controlled},
			want:   FloatingIPBindingParameters{PortIDSelector: controlled},
		},
		"SelectorAlways": {
			reason: "A selector's explicit Always is the default here too.",
			in:     FloatingIPBindingParameters{PortID: ptr.To("old"), PortIDRef: &xpv2.Reference{Name: "port-a"}, PortIDSelector: &xpv2.Selector{Policy: always}},
			want:   FloatingIPBindingParameters{PortIDSelector: &xpv2.Selector{Policy: always}},
		},
		"ReferenceIfNotPresent": {
			reason: "A reference whose policy says resolve IfNotPresent keeps its ID, as in crossplane-runtime.",
			in:     FloatingIPBindingParameters{PortID: ptr.To("old"), PortIDRef: &xpv2.Reference{Name: "port", Policy: keep}},
			want:   FloatingIPBindingParameters{PortID: ptr.To("old"), PortIDRef: &xpv2.Reference{Name: "port", Policy: keep}},
		},
		"SelectorIfNotPresent": {
			reason: "A selector whose policy says IfNotPresent keeps the reference it chose and the ID, whatever the reference's own policy.",
			in:     FloatingIPBindingParameters{PortID: ptr.To("old"), PortIDRef: &xpv2.Reference{Name: "port-a"}, PortIDSelector: &xpv2.Selector{Policy: keep}},
			want:   FloatingIPBindingParameters{PortID: ptr.To("old"), PortIDRef: &xpv2.Reference{Name: "port-a"}, PortIDSelector: &xpv2.Selector{Policy: keep}},
		},
		"NoReference": {
			reason: "A port ID given directly is the spec's own: nothing resolves it, so it stays.",
			in:     FloatingIPBindingParameters{PortID: ptr.To("given")},
			want:   FloatingIPBindingParameters{PortID: ptr.To("given")},
		},
		"PortNetworkAndGroups": {
			reason: "A port's network ID and security group IDs resolved from references are cleared, to be resolved again.",
			in: PortParameters{NetworkID: ptr.To("net"), NetworkIDRef: &xpv2.Reference{Name: "net"},
				SecurityGroupIDs: []string{"sg"}, SecurityGroupIDRefs: []xpv2.Reference{{Name: "sg"}}},
			want: PortParameters{NetworkIDRef: &xpv2.Reference{Name: "net"}, SecurityGroupIDRefs: []xpv2.Reference{{Name: "sg"}}},
		},
		"PortGroupsBySelector": {
			reason: "Security groups chosen by a selector are chosen again; a network ID given directly stays.",
			in:     PortParameters{NetworkID: ptr.To("net"), SecurityGroupIDs: []string{"sg"}, SecurityGroupIDRefs: []xpv2.Reference{{Name: "sg-a"}}, SecurityGroupIDSelector: controlled},
			want:   PortParameters{NetworkID: ptr.To("net"), SecurityGroupIDSelector: controlled},
		},
		"PortGroupsAllIfNotPresent": {
			reason: "Security group references that all say IfNotPresent keep their IDs.",
			in:     PortParameters{SecurityGroupIDs: []string{"sg"}, SecurityGroupIDRefs: []xpv2.Reference{{Name: "sg", Policy: keep}}},
			want:   PortParameters{SecurityGroupIDs: []string{"sg"}, SecurityGroupIDRefs: []xpv2.Reference{{Name: "sg", Policy: keep}}},
		},
		"PortGroupsOneFollowing": {
			reason: "One security group reference that follows is enough to resolve the list again, as one Always is in crossplane-runtime.",
			in:     PortParameters{SecurityGroupIDs: []string{"a", "b"}, SecurityGroupIDRefs: []xpv2.Reference{{Name: "a", Policy: keep}, {Name: "b"}}},
			want:   PortParameters{SecurityGroupIDRefs: []xpv2.Reference{{Name: "a", Policy: keep}, {Name: "b"}}},
		},
		"RoutesNexthopBySelector": {
			reason: "A nexthop taken from the Port a selector chose is chosen again.",
			in:     RouterRoutesParameters{Nexthop: ptr.To("10.20.0.10"), NexthopPortRef: &xpv2.Reference{Name: "port-a"}, NexthopPortSelector: controlled},
			want:   RouterRoutesParameters{NexthopPortSelector: controlled},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got any
			switch p := tc.in.(type) {
			case FloatingIPBindingParameters:
				mg := &FloatingIPBinding{Spec: FloatingIPBindingSpec{ForProvider: p}}
				mg.ClearResolvedReferences()
				got = mg.Spec.ForProvider
			case PortParameters:
				mg := &Port{Spec: PortSpec{ForProvider: p}}
				mg.ClearResolvedReferences()
				got = mg.Spec.ForProvider
			case RouterRoutesParameters:
				mg := &RouterRoutes{Spec: RouterRoutesSpec{ForProvider: p}}
				mg.ClearResolvedReferences()
				got = mg.Spec.ForProvider
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nClearResolvedReferences(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestEveryReferencingKindFollows proves every kind of the group with
// references (angryjet's ResolveReferences) can clear what they resolved,
// so the provider's resolver makes them follow the managed resources they
// name: a kind without would keep its first resolved IDs for ever.
func TestEveryReferencingKindFollows(t *testing.T) {
	s := runtime.NewScheme()
	if err := SchemeBuilder.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	referencing := 0
	for gvk := range s.AllKnownTypes() {
		o, err := s.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := o.(interface {
			ResolveReferences(context.Context, client.Reader) error
		}); !ok {
			continue
		}
		referencing++
		if _, ok := o.(interface{ ClearResolvedReferences() }); !ok {
			t.Errorf("%s resolves references but has no ClearResolvedReferences", gvk.Kind)
		}
	}
	if referencing != 4 {
		t.Errorf("%d kinds with references, want FloatingIPBinding, NodeAddressPairs, Port and RouterRoutes", referencing)
	}
}
