package mrsetup

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
)

func TestFollowingResolver(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1alpha1.SchemeBuilder.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	owner := metav1.OwnerReference{APIVersion: "vpn.ipsecgw.io/v1alpha1", Kind: "XIPsecGateway", Name: "xr", UID: "xr-uid", Controller: ptr.To(true)}
	port := func(name, id string) v1alpha1.Port {
		p := v1alpha1.Port{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{owner}}}
		meta.SetExternalName(&p, id)
		return p
	}
	ports := map[string]v1alpha1.Port{"port-b": port("port-b", "new-id")}
	kube := func(patched *string) *test.MockClient {
		return &test.MockClient{
			MockScheme: func() *runtime.Scheme { return s },
			MockGet: func(_ context.Context, key client.ObjectKey, obj client.Object) error {
				p, ok := ports[key.Name]
				if !ok {
					return kerrors.NewNotFound(schema.GroupResource{Resource: "ports"}, key.Name)
				}
				p.DeepCopyInto(obj.(*v1alpha1.Port))
				return nil
			},
			MockList: func(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
				list.(*v1alpha1.PortList).Items = []v1alpha1.Port{port("port-other", "other-id"), ports["port-b"]}
				list.(*v1alpha1.PortList).Items[0].OwnerReferences = nil
				return nil
			},
			MockPatch: func(_ context.Context, _ client.Object, p client.Patch, _ ...client.PatchOption) error {
				b, _ := p.Data(nil)
				*patched = string(b)
				return nil
			},
		}
	}
	binding := func(fp v1alpha1.FloatingIPBindingParameters) *v1alpha1.FloatingIPBinding {
		return &v1alpha1.FloatingIPBinding{ObjectMeta: metav1.ObjectMeta{Name: "fip", OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: v1alpha1.FloatingIPBindingSpec{ForProvider: fp}}
	}
	type want struct {
		Err    error
		Patch  string
		PortID *string
		Ref    *xpv2.Reference
	}
	cases := map[string]struct {
		reason string
		mg     *v1alpha1.FloatingIPBinding
		want   want
	}{
		"StaleByReference": {
			reason: "A port ID resolved before from the Port a reference names follows that Port's current external name, and the apply patch holds the field the reference resolves.",
			mg:     binding(v1alpha1.FloatingIPBindingParameters{PortID: ptr.To("old-id"), PortIDRef: &xpv2.Reference{Name: "port-b"}}),
			want: want{Patch: `{"apiVersion":"networking.ipsecgw.io/v1alpha1","kind":"FloatingIPBinding","spec":{"forProvider":{"portId":"new-id"}}}`,
				PortID: ptr.To("new-id"), Ref: &xpv2.Reference{Name: "port-b"}},
		},
		"StaleBySelector": {
			reason: "A binding whose selector chose a Port that is gone chooses again among the Ports of its controller (a Port composed again has a new name) and takes its ID.",
			mg: binding(v1alpha1.FloatingIPBindingParameters{PortID: ptr.To("old-id"), PortIDRef: &xpv2.Reference{Name: "port-a"},
				PortIDSelector: &xpv2.Selector{MatchControllerRef: ptr.To(true)}}),
			want: want{Patch: `{"apiVersion":"networking.ipsecgw.io/v1alpha1","kind":"FloatingIPBinding","spec":{"forProvider":{"portId":"new-id","portIdRef":{"name":"port-b"}}}}`,
				PortID: ptr.To("new-id"), Ref: &xpv2.Reference{Name: "port-b"}},
		},
		"SelectedPortNewID": {
			reason: "A Port its selector chose that has a new Neutron port (deleted out of band and made again) gives the binding its new ID, and the apply patch holds every field the selection sets: an apply that leaves out a field its owner owned removes it, so the new ID alone would remove the chosen portIdRef.",
			mg: binding(v1alpha1.FloatingIPBindingParameters{PortID: ptr.To("old-id"), PortIDRef: &xpv2.Reference{Name: "port-b"},
				PortIDSelector: &xpv2.Selector{MatchControllerRef: ptr.To(true)}}),
			want: want{Patch: `{"apiVersion":"networking.ipsecgw.io/v1alpha1","kind":"FloatingIPBinding","spec":{"forProvider":{"portId":"new-id","portIdRef":{"name":"port-b"}}}}`,
				PortID: ptr.To("new-id"), Ref: &xpv2.Reference{Name: "port-b"}},
		},
		"Current": {
			reason: "A resolved ID that is still the referenced Port's is not written again.",
			mg:     binding(v1alpha1.FloatingIPBindingParameters{PortID: ptr.To("new-id"), PortIDRef: &xpv2.Reference{Name: "port-b"}}),
			want:   want{PortID: ptr.To("new-id"), Ref: &xpv2.Reference{Name: "port-b"}},
		},
		"ReferencedGone": {
			reason: "A reference to a Port that is gone is an error (Synced=False naming it) rather than the old ID being used.",
			mg:     binding(v1alpha1.FloatingIPBindingParameters{PortID: ptr.To("old-id"), PortIDRef: &xpv2.Reference{Name: "port-a"}}),
			want:   want{Err: errors.New(errResolveReferences), Ref: &xpv2.Reference{Name: "port-a"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var patched string
			err := NewFollowingResolver(kube(&patched)).ResolveReferences(context.Background(), tc.mg)
			got := want{Patch: patched, PortID: tc.mg.Spec.ForProvider.PortID, Ref: tc.mg.Spec.ForProvider.PortIDRef}
			if err != nil {
				// The message wraps crossplane-runtime's; its first part
				// names the step.
				got.Err = errors.New(strings.SplitN(err.Error(), ":", 2)[0])
			}
			if diff := cmp.Diff(tc.want, got, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nResolveReferences(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
