package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

// TestSilentStartImage: the image recorded is the agent image of the pod
// of this gateway that reported that its agent resets arp_ignore, read
// from the pod; without such a pod the record stays as it was.
func TestSilentStartImage(t *testing.T) {
	status := func(data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: workload.NamesOf("gw").Status}, Data: data}
	}
	pod := func(name, gateway, image string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: name, Labels: map[string]string{workload.LabelGateway: gateway}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "strongswan", Image: "swan:9"},
				{Name: workload.ContainerAgent, Image: image},
			}},
		}
	}
	reported := status(map[string]string{contract.KeySilentStart: "gw-a"})
	forbidden := &interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*corev1.Pod); ok {
			return kerrors.NewForbidden(schema.GroupResource{Resource: "pods"}, key.Name, errors.New("no rule"))
		}
		return c.Get(ctx, key, obj, opts...)
	}}
	cases := map[string]struct {
		reason     string
		objs       []client.Object
		funcs      *interceptor.Funcs
		replicas   *int32
		agent, was string
		want       string
		wantEvents int
	}{
		"NoStatus": {
			reason: "No status ConfigMap yet: nothing learnt.",
			agent:  "gw:2",
		},
		"NotReported": {
			reason: "An agent that does not report it (an older one): nothing learnt, the record kept.",
			objs:   []client.Object{status(map[string]string{contract.KeyTunnels: "[]"})},
			agent:  "gw:2", was: "gw:1", want: "gw:1",
		},
		"Reported": {
			reason: "The reporting pod's agent image is learnt, read from the pod.",
			objs:   []client.Object{reported, pod("gw-a", "gw", "gw:2")},
			agent:  "gw:2", want: "gw:2",
		},
		"ReportedByAPodOfAnOlderTemplate": {
			reason: "The pod's image counts, not the Gateway's: a pod still running the image before a change reports for that image.",
			objs:   []client.Object{reported, pod("gw-a", "gw", "gw:2")},
			agent:  "gw:1", want: "gw:2",
		},
		"PodGone": {
			reason: "The reporting pod is gone: its image is unknown, the record kept.",
			objs:   []client.Object{reported},
			agent:  "gw:2", was: "gw:1", want: "gw:1",
		},
		"AnotherGatewaysPod": {
			reason: "A pod of another gateway says nothing of this one's agent.",
			objs:   []client.Object{reported, pod("gw-a", "other", "gw:2")},
			agent:  "gw:2",
		},
		"Known": {
			reason: "The Gateway's own image recorded: nothing to read (a forbidden pod read would be an event).",
			objs:   []client.Object{reported, pod("gw-a", "gw", "gw:3")},
			funcs:  forbidden,
			agent:  "gw:2", was: "gw:2", want: "gw:2",
		},
		"TwoReplicas": {
			reason:   "An active/standby pair has no use for it: nothing is read (a forbidden pod read would be an event), the record kept.",
			objs:     []client.Object{reported, pod("gw-a", "gw", "gw:2")},
			funcs:    forbidden,
			replicas: ptr.To[int32](2),
			agent:    "gw:2", was: "gw:1", want: "gw:1",
		},
		"Forbidden": {
			reason: "A pod the provider may not read is a warning naming the pod and the fix; the record is kept.",
			objs:   []client.Object{reported, pod("gw-a", "gw", "gw:2")},
			funcs:  forbidden,
			agent:  "gw:2", was: "gw:1", want: "gw:1", wantEvents: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithObjects(tc.objs...)
			if tc.funcs != nil {
				b = b.WithInterceptorFuncs(*tc.funcs)
			}
			var events recorded
			c := b.Build()
			e := &external{target: c, live: &readOnce{Reader: c}, recorder: &events}
			gw := &v1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw"}}
			gw.Spec.ForProvider.Namespace = "tenant-a"
			gw.Spec.ForProvider.Images.Agent = tc.agent
			gw.Spec.ForProvider.Replicas = tc.replicas
			gw.Status.AtProvider.SilentStartImage = tc.was
			rep, err := e.report(context.Background(), gw)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, e.silentStartImage(context.Background(), gw, workload.Replicas(gw), rep.silentStartPod)); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
			if len(events) != tc.wantEvents {
				t.Errorf("%s\n%d events, want %d: %v", tc.reason, len(events), tc.wantEvents, events)
			}
			for _, ev := range events {
				if ev.Reason != reasonSilentStart || !strings.Contains(ev.Message, "tenant-a/gw-a") || !strings.Contains(ev.Message, "get on pods") {
					t.Errorf("%s\nevent %s %q, want %s naming the pod and the fix", tc.reason, ev.Reason, ev.Message, reasonSilentStart)
				}
			}
		})
	}
}
