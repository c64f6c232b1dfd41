//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/agent/status"
)

// TestAgentStatusPublisher checks the agent's status ConfigMap against a
// real API server: created when missing, written only when the content
// changed, at most once per MinInterval, and holding only tunnels.json.
func TestAgentStatusPublisher(t *testing.T) {
	ctx := context.Background()
	ns := "agent-status"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	t.Cleanup(func() { _ = kube.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}) })

	clock := time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC)
	p := &status.Publisher{Client: kube, Namespace: ns, Name: "gw1-status", MinInterval: 5 * time.Second,
		Now: func() time.Time { return clock }}
	key := client.ObjectKey{Namespace: ns, Name: "gw1-status"}
	est := metav1.NewTime(clock.Add(-time.Minute))
	up := []v1alpha1.TunnelStatus{
		{Name: "branch-a", IKEState: "ESTABLISHED", EstablishedAt: &est, ChildSAs: []v1alpha1.ChildSAStatus{{
			Name: "net", State: "INSTALLED", LocalTS: []string{"10.0.0.0/24"}, RemoteTS: []string{"192.168.1.0/24"},
			BytesIn: 840, BytesOut: 840, PacketsIn: 10, PacketsOut: 10}}},
		{Name: "branch-b", IKEState: "DOWN", LastError: status.ErrAuthenticationFailed},
	}
	more := []v1alpha1.TunnelStatus{up[0], up[1]}
	more[0].ChildSAs = []v1alpha1.ChildSAStatus{up[0].ChildSAs[0]}
	more[0].ChildSAs[0].BytesIn, more[0].ChildSAs[0].PacketsIn = 924, 11

	// read returns the ConfigMap's resourceVersion and tunnels.
	read := func() (string, []v1alpha1.TunnelStatus) {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := kube.Get(ctx, key, cm); err != nil {
			t.Fatal(err)
		}
		if len(cm.Data) != 1 || len(cm.BinaryData) != 0 {
			t.Errorf("the status ConfigMap holds more than %s: %v", status.KeyTunnels, cm.Data)
		}
		var ts []v1alpha1.TunnelStatus
		if err := json.Unmarshal([]byte(cm.Data[status.KeyTunnels]), &ts); err != nil {
			t.Fatalf("%s: %v", status.KeyTunnels, err)
		}
		return cm.ResourceVersion, ts
	}
	publish := func(p *status.Publisher, ts []v1alpha1.TunnelStatus) time.Duration {
		t.Helper()
		wait, err := p.Publish(ctx, ts)
		if err != nil {
			t.Fatal(err)
		}
		return wait
	}

	// Missing: created.
	if wait := publish(p, up); wait != 0 {
		t.Fatalf("first Publish waits %s", wait)
	}
	rv1, got := read()
	if diff := cmp.Diff(up, got); diff != "" {
		t.Errorf("created: -want, +got:\n%s", diff)
	}

	// Unchanged: no write, even after the interval.
	clock = clock.Add(time.Minute)
	publish(p, up)
	if rv, _ := read(); rv != rv1 {
		t.Errorf("unchanged status rewritten: resourceVersion %s -> %s", rv1, rv)
	}

	// Changed: written once the interval has passed since the last write.
	publish(p, more)
	rv2, got := read()
	if rv2 == rv1 {
		t.Fatal("changed status not written")
	}
	if diff := cmp.Diff(more, got); diff != "" {
		t.Errorf("updated: -want, +got:\n%s", diff)
	}
	clock = clock.Add(2 * time.Second)
	if wait := publish(p, up); wait != 3*time.Second {
		t.Errorf("Publish 2s after a write: wait %s, want 3s", wait)
	}
	if rv, _ := read(); rv != rv2 {
		t.Errorf("rate limit not respected: resourceVersion %s -> %s", rv2, rv)
	}
	clock = clock.Add(3 * time.Second)
	if wait := publish(p, up); wait != 0 {
		t.Errorf("Publish after the interval: wait %s", wait)
	}
	rv3, got := read()
	if rv3 == rv2 {
		t.Error("held-back change not written after the interval")
	}
	if diff := cmp.Diff(up, got); diff != "" {
		t.Errorf("after the interval: -want, +got:\n%s", diff)
	}

	// A restarted agent finds its content in place: no write.
	restarted := &status.Publisher{Client: kube, Namespace: ns, Name: "gw1-status"}
	publish(restarted, up)
	if rv, _ := read(); rv != rv3 {
		t.Errorf("restarted agent rewrote unchanged status: resourceVersion %s -> %s", rv3, rv)
	}

	// With the pod's identity: the gateway's ServiceAccount may only get
	// and update its own status ConfigMap (internal/workload's Role).
	create(t,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw1"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw1"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"gw1-status"},
			Verbs: []string{"get", "update", "patch"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw1"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "gw1"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "gw1"}}},
	)
	podCfg := rest.CopyConfig(cfg)
	podCfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":gw1"}
	pod, err := client.New(podCfg, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	asPod := &status.Publisher{Client: pod, Namespace: ns, Name: "gw1-status"}
	eventually(t, 10*time.Second, "the gateway's ServiceAccount updates its status", func() error {
		_, err := asPod.Publish(ctx, more)
		return err
	})
	if _, got := read(); !cmp.Equal(more, got) {
		t.Errorf("as the pod: -want, +got:\n%s", cmp.Diff(more, got))
	}
	other := &status.Publisher{Client: pod, Namespace: ns, Name: "gw2-status"}
	if _, err := other.Publish(ctx, up); err == nil {
		t.Error("the gateway's ServiceAccount wrote another gateway's status ConfigMap")
	}
}
