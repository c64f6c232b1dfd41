package gateway

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

func TestLeaderEvent(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 12, 1, 16, 0, 0, 0, time.UTC))
	later := metav1.NewTime(since.Add(time.Minute))
	a := &v1alpha1.LeaderStatus{Pod: "vpn-a", Node: "node-1", Since: &since, Cause: "first"}
	cases := map[string]struct {
		reason   string
		old, now *v1alpha1.LeaderStatus
		want     *event.Event
	}{
		"None": {
			reason: "A gateway with replicas 1 reports no active pod: no event.",
		},
		"First": {
			reason: "The first active pod is announced.",
			now:    a,
			want:   ptr.To(event.Normal(reasonActive, "Active: pod vpn-a on node node-1 is active since 2026-12-01T16:00:00Z")),
		},
		"Same": {
			reason: "The same pod, active since the same time: no event.",
			old:    a, now: &v1alpha1.LeaderStatus{Pod: "vpn-a", Node: "node-1", Since: &since, Cause: "first"},
		},
		"Expired": {
			reason: "A takeover after the active pod stopped renewing the Lease is a failover, a warning that names the lost pod.",
			old:    a, now: &v1alpha1.LeaderStatus{Pod: "vpn-b", Node: "node-2", Since: &later, Cause: "expired", Previous: "vpn-a"},
			want: ptr.To(event.Warning(reasonFailover, errors.New("Failover: pod vpn-b on node node-2 is active since 2026-12-01T16:01:00Z: "+
				"the Lease of vpn-a expired (its pod or node was lost or cut off from the API server)"))),
		},
		"Released": {
			reason: "A takeover of a released Lease is a planned handover.",
			old:    a, now: &v1alpha1.LeaderStatus{Pod: "vpn-b", Node: "node-2", Since: &later, Cause: "released"},
			want: ptr.To(event.Normal(reasonHandover, "Handover: pod vpn-b on node node-2 is active since 2026-12-01T16:01:00Z: "+
				"the pod before it released the Lease (it was stopped, as on a rollout or a deleted pod)")),
		},
		"SamePodAgain": {
			reason: "The same pod active again (it lost the Lease and took it back) is a new takeover.",
			old:    a, now: &v1alpha1.LeaderStatus{Pod: "vpn-a", Node: "node-1", Since: &later, Cause: "released"},
			want: ptr.To(event.Normal(reasonHandover, "Handover: pod vpn-a on node node-1 is active since 2026-12-01T16:01:00Z: "+
				"the pod before it released the Lease (it was stopped, as on a rollout or a deleted pod)")),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := leaderEvent(tc.old, tc.now)
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b error) bool { return a.Error() == b.Error() })); diff != "" {
				t.Errorf("%s\nleaderEvent(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestRankPods(t *testing.T) {
	pod := func(name string, cost *string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: name, Labels: workload.Labels("vpn")}}
		if cost != nil {
			p.Annotations = map[string]string{workload.AnnotationDeletionCost: *cost}
		}
		return p
	}
	cost := ptr.To(workload.ActiveDeletionCost)
	cases := map[string]struct {
		reason   string
		replicas int32
		leader   string
		pods     []client.Object
		want     map[string]*string
	}{
		"Ranks": {
			reason:   "The active pod gets the higher deletion cost, so that a rollout replaces the standby first.",
			replicas: 2, leader: "vpn-a",
			pods: []client.Object{pod("vpn-a", nil), pod("vpn-b", nil)},
			want: map[string]*string{"vpn-a": cost, "vpn-b": nil},
		},
		"AfterFailover": {
			reason:   "After a failover the new active pod gets the cost and the old one loses it.",
			replicas: 2, leader: "vpn-b",
			pods: []client.Object{pod("vpn-a", cost), pod("vpn-b", nil)},
			want: map[string]*string{"vpn-a": nil, "vpn-b": cost},
		},
		"NoLeader": {
			reason:   "Before an agent reports the active pod, the pods are left alone.",
			replicas: 2,
			pods:     []client.Object{pod("vpn-a", cost), pod("vpn-b", nil)},
			want:     map[string]*string{"vpn-a": cost, "vpn-b": nil},
		},
		"OneReplica": {
			reason:   "With replicas 1 nothing is ranked.",
			replicas: 1, leader: "vpn-a",
			pods: []client.Object{pod("vpn-a", nil)},
			want: map[string]*string{"vpn-a": nil},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := runtime.NewScheme()
			_ = corev1.AddToScheme(s)
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(tc.pods...).Build()
			g := &v1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "vpn"}}
			g.Spec.ForProvider.Namespace = "tenant-a"
			g.Spec.ForProvider.Replicas = &tc.replicas
			if tc.leader != "" {
				g.Status.AtProvider.Leader = &v1alpha1.LeaderStatus{Pod: tc.leader}
			}
			e := &external{target: c, live: &readOnce{Reader: c}}
			if err := e.rankPods(context.Background(), g); err != nil {
				t.Fatal(err)
			}
			got := map[string]*string{}
			for _, o := range tc.pods {
				p := &corev1.Pod{}
				if err := c.Get(context.Background(), client.ObjectKeyFromObject(o), p); err != nil {
					t.Fatal(err)
				}
				if v, ok := p.Annotations[workload.AnnotationDeletionCost]; ok {
					got[p.Name] = &v
				} else {
					got[p.Name] = nil
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\npod-deletion-cost by pod: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestStrategy(t *testing.T) {
	live := func(s appsv1.DeploymentStrategyType, netHash string) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		d.Spec.Strategy.Type = s
		d.Spec.Template.Annotations = map[string]string{workload.AnnotationNetworkHash: netHash}
		return d
	}
	desired := func(s appsv1.DeploymentStrategyType, netHash string) *appsv1ac.DeploymentApplyConfiguration {
		st := appsv1ac.DeploymentStrategy().WithType(s)
		if s == appsv1.RollingUpdateDeploymentStrategyType {
			st.WithRollingUpdate(appsv1ac.RollingUpdateDeployment().WithMaxSurge(intstr.FromInt32(0)).WithMaxUnavailable(intstr.FromInt32(1)))
		}
		return appsv1ac.Deployment("gw", "tenant-a").WithSpec(appsv1ac.DeploymentSpec().WithStrategy(st).
			WithTemplate(corev1ac.PodTemplateSpec().WithAnnotations(map[string]string{workload.AnnotationNetworkHash: netHash})))
	}
	recreate, rolling := appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType
	cases := map[string]struct {
		reason   string
		live     *appsv1.Deployment
		want     *appsv1ac.DeploymentApplyConfiguration
		wantType appsv1.DeploymentStrategyType
	}{
		"OneToTwo": {
			reason: "One pod becoming active/standby rolls out with Recreate: a new pod must not take the address beside the old one's static address.",
			live:   live(recreate, "static"), want: desired(rolling, "agent"), wantType: recreate,
		},
		"OneToTwoRolledOut": {
			reason: "Once the pods are on the new attachment, the rolling update is set (it rolls no pod).",
			live:   live(recreate, "agent"), want: desired(rolling, "agent"), wantType: rolling,
		},
		"TwoToOne": {
			reason: "Back to one pod: Recreate, as rendered, removes both before the one with the static address starts.",
			live:   live(rolling, "agent"), want: desired(recreate, "static"), wantType: recreate,
		},
		"TwoRollout": {
			reason: "An image rollout of two pods is the rolling update.",
			live:   live(rolling, "agent"), want: desired(rolling, "agent"), wantType: rolling,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := strategy(tc.live, tc.want); *got.Type != tc.wantType {
				t.Errorf("%s\nstrategy() = %s, want %s", tc.reason, *got.Type, tc.wantType)
			}
		})
	}
}
