//go:build integration

package integration

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	pcv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	nsgw "github.com/ipsecgw/provider-ipsec/apis/namespaced/gateway/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	ipsecctrl "github.com/ipsecgw/provider-ipsec/internal/controller"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

// TestNamespacedGateway proves that a namespaced Gateway runs its objects in
// its own namespace and reads its PSK from a Secret of that namespace only:
// with the Secret only in another namespace it is refused and nothing is
// rendered anywhere; with its own Secret its objects are in its namespace
// (none in the other) and hold its own PSK, never the other namespace's;
// the agent's report reaches its status and its events; a ProviderConfig
// of its namespace whose kubeconfig Secret is in another namespace is
// refused, and so is a Gateway named as a cluster-scoped Gateway that runs
// its objects in the same namespace; deleting it deletes its objects.
func TestNamespacedGateway(t *testing.T) {
	ctx := context.Background()
	const nsA, nsB = "ns-gw-a", "ns-gw-b"
	const pskB = "PSK-of-ns-gw-b-7d1e"
	startProvider(t, allControllers(ipsecctrl.Dependencies{OpenStack: openstack.NewClients()}))
	unused := pcv1alpha1.ProviderConfigSpec{Credentials: pcv1alpha1.OpenStackCredentials{SecretRef: secretRef("unused", "clouds.yaml"), Cloud: "none"}}
	kubeElsewhere := pcv1alpha1.ProviderConfigSpec{
		Credentials: pcv1alpha1.OpenStackCredentials{Cloud: "none", SecretRef: &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: nsA, Name: "unused"}, Key: "clouds.yaml"}},
		Cluster: pcv1alpha1.ClusterCredentials{Source: xpv2.CredentialsSourceSecret,
			SecretRef: &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: nsB, Name: "kubeconfig"}, Key: "kubeconfig"}},
	}
	fixtures := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsA}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsB}},
		// Only ns-gw-b holds a Secret of the name the Gateway names.
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: nsB, Name: "vpn-psk"}, StringData: map[string]string{"branch-a": pskB}},
		&nsv1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "ns-gw-platform"}, Spec: unused},
		&nsv1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: nsA, Name: "kube-elsewhere"}, Spec: kubeElsewhere},
		&pcv1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "ns-gw-cluster"}, Spec: unused},
	}
	create(t, fixtures...)
	t.Cleanup(func() {
		for _, o := range fixtures[2:] {
			_ = kube.Delete(context.Background(), o)
		}
	})
	gateway := func(name string, ref *xpv2.ProviderConfigReference) *nsgw.Gateway {
		gw := &nsgw.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: nsA, Name: name}, Spec: nsgw.GatewaySpec{ForProvider: gatewaySpec(nsA).GatewayConfig}}
		gw.Spec.ProviderConfigReference = ref
		return gw
	}
	synced := func(gw *nsgw.Gateway, want string) error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		if s := gw.GetCondition(xpv2.TypeSynced); s.Status != corev1.ConditionFalse || !strings.Contains(s.Message, want) {
			return fmt.Errorf("Synced %s %q, want False containing %q", s.Status, s.Message, want)
		}
		return nil
	}
	names := workload.NamesOf("vpn")
	absent := func(ns string) error {
		for _, o := range []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}, &appsv1.Deployment{}} {
			name := names.Gateway
			switch o.(type) {
			case *corev1.ConfigMap:
				name = names.Config
			case *corev1.Secret:
				name = names.Secrets
			}
			if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o); !kerrors.IsNotFound(err) {
				return fmt.Errorf("%T %s/%s exists or cannot be read (%v): want none", o, ns, name, err)
			}
		}
		return nil
	}

	gw := gateway("vpn", pcRef("ClusterProviderConfig", "ns-gw-platform"))
	create(t, gw)
	t.Cleanup(func() { forgetMRs(gw) })
	eventually(t, 30*time.Second, "the Gateway is refused: its namespace has no Secret vpn-psk", func() error {
		return synced(gw, "Secret "+nsA+"/vpn-psk with the pre-shared key of tunnel branch-a does not exist")
	})
	for _, ns := range []string{nsA, nsB} {
		if err := absent(ns); err != nil {
			t.Errorf("with the PSK Secret only in %s: %v", nsB, err)
		}
	}

	const pskA = "PSK-of-ns-gw-a-41c9"
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: nsA, Name: "vpn-psk"}, StringData: map[string]string{"branch-a": pskA}})
	sec, dep := &corev1.Secret{}, &appsv1.Deployment{}
	eventually(t, 60*time.Second, "with its own Secret, the Gateway renders its objects in its namespace", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		if c := gw.GetCondition(gwv1alpha1.TypeConfigRendered); c.Status != corev1.ConditionTrue {
			return fmt.Errorf("ConfigRendered %s: %s", c.Status, c.Message)
		}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: nsA, Name: names.Gateway}, dep); err != nil {
			return err
		}
		return kube.Get(ctx, client.ObjectKey{Namespace: nsA, Name: names.Secrets}, sec)
	})
	if s := string(sec.Data[workload.KeySecrets]); !strings.Contains(s, "0x"+hex.EncodeToString([]byte(pskA))) || strings.Contains(s, hex.EncodeToString([]byte(pskB))) {
		t.Errorf("the gateway's Secret in %s does not hold %s's PSK alone", nsA, nsA)
	}
	if err := absent(nsB); err != nil {
		t.Errorf("a Gateway of %s: %v", nsA, err)
	}
	if got := dep.Labels[workload.LabelGateway]; got != "vpn" {
		t.Errorf("Deployment label %s = %q, want vpn", workload.LabelGateway, got)
	}

	// The agent's report, with a ready pod, reaches the namespaced
	// Gateway's status and its events (the watches map the status
	// ConfigMap to the Gateway of its namespace).
	eventually(t, 10*time.Second, "the Deployment's status says 1 ready", func() error {
		if err := kube.Get(ctx, client.ObjectKey{Namespace: nsA, Name: names.Gateway}, dep); err != nil {
			return err
		}
		dep.Status.Replicas, dep.Status.ReadyReplicas, dep.Status.AvailableReplicas = 1, 1, 1
		return kube.Status().Update(ctx, dep)
	})
	b, _ := json.Marshal([]gwv1alpha1.TunnelStatus{{Name: "branch-a", IKEState: "ESTABLISHED", Up: true,
		ChildSAs: []gwv1alpha1.ChildSAStatus{{Name: "branch-a-5f0c1e2d", State: "INSTALLED", BytesIn: 840, BytesOut: 420}}}})
	eventually(t, 10*time.Second, "the agent writes its status", func() error {
		st := &corev1.ConfigMap{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: nsA, Name: names.Status}, st); err != nil {
			return err
		}
		st.Data = map[string]string{workload.KeyTunnels: string(b)}
		return kube.Update(ctx, st)
	})
	eventually(t, 30*time.Second, "the tunnel shows in the namespaced Gateway's status and as its TunnelUp event", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		if gw.Status.AtProvider.TunnelsUp != "1/1" || gw.Status.AtProvider.BytesIn != 840 || gw.GetCondition(xpv2.TypeReady).Status != corev1.ConditionTrue {
			return fmt.Errorf("tunnelsUp %q bytesIn %d Ready %s", gw.Status.AtProvider.TunnelsUp, gw.Status.AtProvider.BytesIn, gw.GetCondition(xpv2.TypeReady).Status)
		}
		return gatewayEvent(gw, "TunnelUp", "Tunnel branch-a is up")
	})

	t.Run("KubeconfigOfAnotherNamespace", func(t *testing.T) {
		gw := gateway("kube", pcRef("ProviderConfig", "kube-elsewhere"))
		create(t, gw)
		t.Cleanup(func() { forgetMRs(gw) })
		eventually(t, 30*time.Second, "the Gateway is refused", func() error {
			return synced(gw, `ProviderConfig ns-gw-a/kube-elsewhere: spec.cluster.secretRef.namespace is "ns-gw-b", but a namespaced ProviderConfig reads Secrets of its own namespace only`)
		})
	})

	t.Run("NamedAsAClusterGateway", func(t *testing.T) {
		cgw := &gwv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "taken"}, Spec: gwv1alpha1.GatewaySpec{ForProvider: gatewaySpec(nsA)}}
		cgw.Spec.ProviderConfigReference = &xpv2.Reference{Name: "ns-gw-cluster"}
		create(t, cgw)
		t.Cleanup(func() { forgetMRs(cgw) })
		gw := gateway("taken", pcRef("ClusterProviderConfig", "ns-gw-platform"))
		create(t, gw)
		t.Cleanup(func() { forgetMRs(gw) })
		eventually(t, 30*time.Second, "the namespaced Gateway is refused", func() error {
			return synced(gw, "the cluster-scoped Gateway taken runs its objects in namespace ns-gw-a under the same names: give this Gateway another name")
		})
	})

	if err := kube.Delete(ctx, gw); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "deleting the Gateway deletes its objects and then it", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); !kerrors.IsNotFound(err) {
			return fmt.Errorf("the Gateway still exists (%v)", err)
		}
		return absent(nsA)
	})
}
