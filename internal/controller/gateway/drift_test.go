package gateway

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

func TestDiffers(t *testing.T) {
	nad := func(config string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(workload.NADKind)
		_ = unstructured.SetNestedField(u.Object, config, "spec", "config")
		return u
	}
	dep := func(start, network string) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		d.Spec.Replicas = ptr.To[int32](1)
		d.Spec.Template.ObjectMeta = metav1.ObjectMeta{Annotations: map[string]string{
			workload.AnnotationStartHash: start, workload.AnnotationNetworkHash: network,
		}}
		return d
	}
	legacy := func(hash string) *appsv1.Deployment {
		d := dep("", "n")
		delete(d.Spec.Template.Annotations, workload.AnnotationStartHash)
		d.Spec.Template.Annotations[workload.AnnotationHash] = hash
		return d
	}
	cases := map[string]struct {
		want, got client.Object
		diff      string
	}{
		"the same network attachment":  {want: nad(`{"a":1}`), got: nad(`{"a":1}`)},
		"another CNI config":           {want: nad(`{"a":1}`), got: nad(`{"a":2}`), diff: "the CNI config differs from the rendered one"},
		"the same pod template":        {want: dep("c", "n"), got: dep("c", "n")},
		"another start configuration":  {want: dep("c", "n"), got: dep("old", "n"), diff: "the pod template is for another start-time configuration"},
		"a kept legacy template":       {want: legacy("h"), got: legacy("h")},
		"a legacy template to replace": {want: dep("c", "n"), got: legacy("h"), diff: "the pod template is for another start-time configuration"},
		"another network attachment":   {want: dep("c", "n"), got: dep("c", "old"), diff: "the pod template is for another network attachment"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.diff, differs(tc.want, tc.got)); diff != "" {
				t.Errorf("differs(): -want, +got:\n%s", diff)
			}
		})
	}
}

func TestMissingLabel(t *testing.T) {
	cm := func(l map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Labels: l}}
	}
	cases := map[string]struct {
		reason    string
		want, got client.Object
		diff      string
	}{
		"Removed": {
			reason: "A label of the provider's removed by hand (or never set, by an older provider) is drift, named.",
			want:   cm(map[string]string{workload.LabelComponent: workload.ComponentStatus, workload.LabelGateway: "gw"}),
			got:    cm(map[string]string{workload.LabelGateway: "gw", "other": "x"}),
			diff:   "label app.kubernetes.io/component is not tunnel-status",
		},
		"Changed": {
			reason: "A label of the provider's with another value is drift.",
			want:   cm(map[string]string{workload.LabelGateway: "gw"}),
			got:    cm(map[string]string{workload.LabelGateway: "other"}),
			diff:   "label gateway.ipsecgw.io/name is not gw",
		},
		"OthersLabels": {
			reason: "Labels others added are left alone.",
			want:   cm(map[string]string{workload.LabelGateway: "gw"}),
			got:    cm(map[string]string{workload.LabelGateway: "gw", "other": "x"}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.diff, missingLabel(tc.want, tc.got)); diff != "" {
				t.Errorf("%s\nmissingLabel(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
