package gateway

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

// TestReport: the status ConfigMap is decoded into every field of the
// report; a missing ConfigMap is no report yet, a key that does not parse
// an error naming the ConfigMap and the key.
func TestReport(t *testing.T) {
	gw := &v1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw"}}
	gw.Spec.ForProvider.Namespace = "tenant-a"
	status := func(data map[string]string) []client.Object {
		return []client.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: workload.NamesOf("gw").Status}, Data: data}}
	}
	cases := map[string]struct {
		reason string
		objs   []client.Object
		want   agentReport
		err    string
	}{
		"NoConfigMap": {
			reason: "No status ConfigMap yet: an empty report, no error.",
		},
		"Everything": {
			reason: "Every key of contract is decoded.",
			objs: status(map[string]string{
				contract.KeyTunnels: `[{"name":"branch-a","ikeState":"ESTABLISHED","up":true}]`, contract.KeyLeader: `{"pod":"gw-a","node":"node-1"}`,
				contract.KeyConfigHash: "h1", contract.KeySilentStart: "gw-a",
			}),
			want: agentReport{tunnels: []v1alpha1.TunnelStatus{{Name: "branch-a", IKEState: v1alpha1.IKEStateEstablished, Up: true}},
				leader: &v1alpha1.LeaderStatus{Pod: "gw-a", Node: "node-1"}, loadedHash: "h1", silentStartPod: "gw-a"},
		},
		"BadTunnels": {
			reason: "Tunnels that do not parse are an error naming the ConfigMap and the key.",
			objs:   status(map[string]string{contract.KeyTunnels: "not json", contract.KeyConfigHash: "h1"}),
			want:   agentReport{loadedHash: "h1"},
			err:    "the agent's status ConfigMap tenant-a/gw-status has no valid tunnels.json",
		},
		"BadLeader": {
			reason: "A leader that does not parse is an error naming the ConfigMap and the key.",
			objs:   status(map[string]string{contract.KeyLeader: "{"}),
			want:   agentReport{leader: &v1alpha1.LeaderStatus{}},
			err:    "the agent's status ConfigMap tenant-a/gw-status has no valid leader.json",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithObjects(tc.objs...).Build()
			e := &external{target: c, live: &readOnce{Reader: c}}
			got, err := e.report(context.Background(), gw)
			if gotErr := fmt.Sprint(err); (err != nil) != (tc.err != "") || len(gotErr) < len(tc.err) || gotErr[:len(tc.err)] != tc.err {
				t.Errorf("%s\nreport(): error %v, want one starting %q", tc.reason, err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(agentReport{})); diff != "" {
				t.Errorf("%s\nreport(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestReportCounts: the tunnels and the loaded configuration count only
// while a pod is ready, the active pod only for a gateway with replicas 2
// and a pod ready; a gateway scaled back to 1, or with no pod ready, has
// none whatever the ConfigMap still holds.
func TestReportCounts(t *testing.T) {
	gw := &v1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw"}}
	gw.Spec.ForProvider.Tunnels = []v1alpha1.Tunnel{{Name: "branch-a"}}
	up := []v1alpha1.TunnelStatus{{Name: "branch-a", IKEState: v1alpha1.IKEStateEstablished, Up: true}}
	leader := &v1alpha1.LeaderStatus{Pod: "gw-a", Node: "node-1", Cause: "first"}
	rep := agentReport{tunnels: up, leader: leader, loadedHash: "h1", silentStartPod: "gw-a"}
	cases := map[string]struct {
		reason          string
		replicas, ready int32
		want            agentReport
	}{
		"ActiveStandby": {reason: "Replicas 2 with a pod ready: the agent's report.", replicas: 2, ready: 2, want: rep},
		"ScaledBack": {reason: "Replicas 1: no active pod, though the report is still there.", replicas: 1, ready: 1,
			want: agentReport{tunnels: up, loadedHash: "h1", silentStartPod: "gw-a"}},
		"NoPodReady": {reason: "No pod ready: every tunnel down, nothing loaded, no active pod.", replicas: 2,
			want: agentReport{tunnels: []v1alpha1.TunnelStatus{{Name: "branch-a", IKEState: v1alpha1.IKEStateDown}}, silentStartPod: "gw-a"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, rep.counts(gw, tc.replicas, tc.ready), cmp.AllowUnexported(agentReport{})); diff != "" {
				t.Errorf("%s\ncounts(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
