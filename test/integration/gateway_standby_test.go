//go:build integration

package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/agent/leader"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

// TestGatewayActiveStandby runs the provider against a Gateway with
// replicas 2: it creates the Lease the agents elect on and grants them get,
// update and watch on it only; the active pod an agent reports (leader.Report,
// as the agent writes it) reaches status.atProvider.leader with an event,
// a Warning Failover when the Lease expired; before an update the active
// pod gets the higher pod-deletion-cost; the standby's readiness alone is
// written 30 s after the last write of the status, not at once.
func TestGatewayActiveStandby(t *testing.T) {
	ctx := context.Background()
	logs := startProvider(t, gatewayControllers())
	ns := "tenant-standby"
	create(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		pskSecret(ns),
	)
	// A ProviderConfig of its own: TestGatewayLifecycle creates default.
	create(t, unusedProviderConfig("standby"))
	spec := gatewaySpec(ns)
	spec.Replicas = ptr.To[int32](2)
	// Fields the API server canonicalizes (a quantity of "0.5") or leaves
	// to defaults (a toleration's operator): read back, they are no drift.
	spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.5")},
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}
	spec.NodeSelector = map[string]string{"node-role.kubernetes.io/gateway": ""}
	spec.Tolerations = []corev1.Toleration{{Key: "gateway", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	spec.ReverseExposures = []gwv1alpha1.ReverseExposure{{Name: "dns", Protocol: "udp", ListenPort: 5353,
		ClientAddress: "192.168.10.5", ClientPort: 53, SourceAddress: "100.64.0.53"}}
	gw := &gwv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw-ha"}, Spec: gwv1alpha1.GatewaySpec{ForProvider: spec}}
	gw.Spec.ProviderConfigReference = &xpv2.Reference{Name: "standby"}
	create(t, gw)
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
	names := workload.NamesOf(gw.Name)

	dep, lease, role := &appsv1.Deployment{}, &coordinationv1.Lease{}, &rbacv1.Role{}
	eventually(t, 30*time.Second, "the Deployment, the Lease and the Role", func() error {
		for _, o := range []client.Object{dep, lease, role} {
			if err := kube.Get(ctx, key(names.Gateway), o); err != nil {
				return err
			}
		}
		return nil
	})
	if *dep.Spec.Replicas != 2 || dep.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		t.Errorf("Deployment replicas %d strategy %s, want 2 and RollingUpdate", *dep.Spec.Replicas, dep.Spec.Strategy.Type)
	}
	if lease.Spec.HolderIdentity != nil {
		t.Errorf("the provider's Lease names holder %s, want none", *lease.Spec.HolderIdentity)
	}
	want := rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{names.Gateway}, Verbs: []string{"get", "update", "watch"}}
	if r := role.Rules[len(role.Rules)-1]; fmt.Sprint(r) != fmt.Sprint(want) {
		t.Errorf("the agent's Role's last rule is %v, want %v", r, want)
	}

	// The pods, as the ReplicaSet would make them, and the Deployment's
	// status as its controller would write it (envtest runs neither).
	for _, p := range []string{"gw-ha-a", "gw-ha-b"} {
		create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p, Labels: workload.Labels(gw.Name)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "gw:1"}}}})
	}
	eventually(t, 10*time.Second, "the Deployment's status says 2 ready", func() error {
		if err := kube.Get(ctx, key(names.Gateway), dep); err != nil {
			return err
		}
		dep.Status.Replicas, dep.Status.ReadyReplicas, dep.Status.AvailableReplicas = 2, 2, 2
		return kube.Status().Update(ctx, dep)
	})

	report := func(pod, node string, tk leader.Takeover) {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		leader.Report(rctx, kube, ns, names.Status, pod, node, tk, logging.NewNopLogger())
	}
	report("gw-ha-a", "node-1", leader.Takeover{Cause: leader.CauseFirst, At: time.Now()})
	eventually(t, 30*time.Second, "the active pod in status, with an ActivePod event", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		if l := gw.Status.AtProvider.Leader; l == nil || l.Pod != "gw-ha-a" || l.Node != "node-1" || l.Cause != "first" {
			return fmt.Errorf("leader %+v", l)
		}
		return gatewayEvent(gw, "ActivePod", "pod gw-ha-a on node node-1 is active")
	})
	report("gw-ha-b", "node-2", leader.Takeover{Cause: leader.CauseExpired, Previous: "gw-ha-a", At: time.Now()})
	written := time.Now()
	eventually(t, 30*time.Second, "the failover in status, with a Failover warning naming the lost pod", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		if l := gw.Status.AtProvider.Leader; l == nil || l.Pod != "gw-ha-b" || l.Previous != "gw-ha-a" {
			return fmt.Errorf("leader %+v", l)
		}
		return gatewayEvent(gw, "Failover", "the Lease of gw-ha-a expired")
	})

	// The active/standby Deployment (anti-affinity, rolling update, the
	// downward API), the Lease the agents write and a NetworkPolicy with a
	// port read back as the provider applied them.
	settled(t, logs, gw.Name)

	// An edit that changes the pod template: the provider ranks the pods
	// before it updates the Deployment.
	if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
		t.Fatal(err)
	}
	gw.Spec.ForProvider.Images.Agent = "gw:2"
	if err := kube.Update(ctx, gw); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the active pod gw-ha-b has the higher pod-deletion-cost, gw-ha-a none", func() error {
		a, b := &corev1.Pod{}, &corev1.Pod{}
		if err := kube.Get(ctx, key("gw-ha-a"), a); err != nil {
			return err
		}
		if err := kube.Get(ctx, key("gw-ha-b"), b); err != nil {
			return err
		}
		if _, ok := a.Annotations[workload.AnnotationDeletionCost]; ok || b.Annotations[workload.AnnotationDeletionCost] != workload.ActiveDeletionCost {
			return fmt.Errorf("gw-ha-a %v, gw-ha-b %v", a.Annotations, b.Annotations)
		}
		return nil
	})

	// The standby not ready: a change of the ready pods alone, which the
	// composite does not read, is written with the next change of state
	// or 30 s after the status was last written (the failover's, or the
	// image edit's since), not at once: each write is an event of
	// Crossplane's XR circuit breaker.
	eventually(t, 10*time.Second, "the Deployment's status says 1 ready", func() error {
		if err := kube.Get(ctx, key(names.Gateway), dep); err != nil {
			return err
		}
		dep.Status.ReadyReplicas, dep.Status.AvailableReplicas = 1, 1
		return kube.Status().Update(ctx, dep)
	})
	changed := time.Now()
	if time.Since(written) < 20*time.Second {
		time.Sleep(3 * time.Second)
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			t.Fatal(err)
		}
		if r := gw.Status.AtProvider.ReadyReplicas; r != 2 {
			t.Errorf("3 s after the standby stopped being ready, %s after the failover's write, the Gateway's readyReplicas is %d, want 2 still (held back)", time.Since(written).Round(time.Second), r)
		}
	}
	eventually(t, 45*time.Second, "the Gateway's readyReplicas 1, 30 s after the last write", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		if r := gw.Status.AtProvider.ReadyReplicas; r != 1 {
			return fmt.Errorf("readyReplicas %d", r)
		}
		return nil
	})
	t.Logf("the standby's readiness reached the Gateway %s after it changed, %s after the failover's write",
		time.Since(changed).Round(100*time.Millisecond), time.Since(written).Round(100*time.Millisecond))
}
