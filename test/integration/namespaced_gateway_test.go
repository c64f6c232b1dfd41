//go:build integration

package integration

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	pcv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	nsgw "github.com/ipsecgw/provider-ipsec/apis/namespaced/gateway/v1alpha1"
	nsnet "github.com/ipsecgw/provider-ipsec/apis/namespaced/networking/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/function"
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
	startProvider(t, gatewayControllers())
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
		// The platform's, offered to every namespace.
		&nsv1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "ns-gw-platform"},
			Spec: nsv1alpha1.ClusterProviderConfigSpec{ProviderConfigSpec: unused, NamespaceSelector: &metav1.LabelSelector{}}},
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
			name := objectName(names, o)
			if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o); !kerrors.IsNotFound(err) {
				return fmt.Errorf("%T %s/%s exists or cannot be read (%w): want none", o, ns, name, err)
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
	if s := string(sec.Data[contract.KeySecrets]); !strings.Contains(s, "0x"+hex.EncodeToString([]byte(pskA))) || strings.Contains(s, hex.EncodeToString([]byte(pskB))) {
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
		st.Data = map[string]string{contract.KeyTunnels: string(b)}
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
			return fmt.Errorf("the Gateway still exists (%w)", err)
		}
		return absent(nsA)
	})
}

// TestNamespacedComposedNodeAddressPairs creates what the function composes
// for a namespaced IPsecGateway in mode routed (Compose, then
// function.Namespaced with the namespace's own ProviderConfig): a
// SecurityGroup, a Port and NodeAddressPairs of one namespace, owned by
// the composite, against the real Neutron. The NodeAddressPairs finds the
// Port by controller reference in its namespace, reads the Nodes of its
// ProviderConfig's cluster, and puts the port's fixed IP and the client
// subnet, with its MAC, on the Neutron port of the selected node only
// (recording them in its status mid-create through the namespaced twin);
// deleting it removes them.
func TestNamespacedComposedNodeAddressPairs(t *testing.T) {
	e := startOpenStack(t)
	ctx := context.Background()
	sc := neutron(t, e)
	const ns = "ns-cnap"
	id := fmt.Sprint(os.Getpid())
	pc := tenantProviderConfig(t, e, ns)
	t.Cleanup(func() { _ = kube.Delete(context.Background(), pc) })
	selector := map[string]string{"itest-ns-composed-" + id: "gateway"}
	xr := &function.XIPsecGateway{
		Metadata: function.Metadata{Namespace: ns, Name: "cnap-" + id},
		Spec: function.XIPsecGatewaySpec{
			Endpoint:     function.Endpoint{FloatingNetworkID: e.Fixtures.ExtNet.ID},
			Network:      function.Network{NetworkID: e.Fixtures.TenantNet.ID, SubnetID: e.Fixtures.TenantSub.ID},
			Mode:         gwv1alpha1.ModeRouted,
			Routed:       &function.Routed{RouterID: e.Fixtures.Router.ID, ClientSubnets: []string{"192.168.62.0/24"}},
			NodeSelector: selector,
		},
	}
	objs, warnings := function.Compose(xr, function.Observed{})
	if len(warnings) > 0 {
		t.Fatalf("compose: %v", warnings)
	}
	owner := []metav1.OwnerReference{{APIVersion: function.NamespacedGroup + "/v1alpha1", Kind: "IPsecGateway", Name: xr.Metadata.Name,
		UID: uuid.NewUUID(), Controller: ptr.To(true)}}
	twin := func(name string) client.Object {
		o, err := function.Namespaced(objs[name], pcRef("ProviderConfig", "openstack"))
		if err != nil {
			t.Fatal(err)
		}
		mg := o.(client.Object)
		mg.SetNamespace(ns)
		mg.SetName("cnap-" + id + "-" + name)
		mg.SetOwnerReferences(owner)
		return mg
	}
	sg := twin(function.SecurityGroupName).(*nsnet.SecurityGroup)
	port := twin(function.PortName).(*nsnet.Port)
	pairs := twin(function.NodePairsName).(*nsnet.NodeAddressPairs)

	// Two node VMs' ports on the tenant network: a on a selected node, c
	// on one the selector leaves out.
	nodePorts := map[string]string{}
	for _, n := range []string{"a", "c"} {
		inst := string(uuid.NewUUID())
		p, err := ports.Create(ctx, sc, ports.CreateOpts{Name: "ns-cnap-node-" + n + "-" + id, NetworkID: e.Fixtures.TenantNet.ID, DeviceID: inst}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ports.Delete(context.Background(), sc, p.ID).ExtractErr() })
		k := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ns-cnap-" + n + "-" + id}, Spec: corev1.NodeSpec{ProviderID: "openstack:///" + inst}}
		if n == "a" {
			k.Labels = selector
		}
		create(t, k)
		t.Cleanup(func() { _ = kube.Delete(context.Background(), k) })
		nodePorts[n] = p.ID
	}

	startNamespacedProvider(t, e)
	mrs := []client.Object{pairs, port, sg}
	t.Cleanup(func() {
		forgetMRs(mrs...)
		deletePorts(t, sc, []client.Object{port})
	})
	start := time.Now()
	create(t, sg, port, pairs)
	eventually(t, 90*time.Second, "the namespaced NodeAddressPairs Ready", func() error {
		for _, mg := range []client.Object{sg, port, pairs} {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(mg), mg); err != nil {
				return err
			}
			if err := rrReady(mg.(resource.Managed)); err != nil {
				return fmt.Errorf("%T %s: %w", mg, mg.GetName(), err)
			}
		}
		return nil
	})
	t.Logf("namespaced composed resources created to the node pairs Ready: %s", time.Since(start).Round(time.Millisecond))
	eventually(t, 30*time.Second, "the Port's status.atProvider.id", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(port), port); err != nil {
			return err
		}
		if port.Status.AtProvider.ID == "" || len(port.Status.AtProvider.FixedIPs) == 0 {
			return fmt.Errorf("not written yet")
		}
		return nil
	})
	if got, want := ptr.Deref(pairs.Spec.ForProvider.PortID, ""), port.Status.AtProvider.ID; got != want {
		t.Fatalf("the NodeAddressPairs' portId is %q, want the namespace's composed Port's %q (by controller reference)", got, want)
	}
	mac := port.Status.AtProvider.MACAddress
	if err := napWant(ctx, sc, nodePorts["a"], port.Status.AtProvider.FixedIPs[0].IPAddress+"@"+mac, "192.168.62.0/24@"+mac); err != nil {
		t.Errorf("the selected node's port: %v", err)
	}
	if err := napWant(ctx, sc, nodePorts["c"]); err != nil {
		t.Errorf("the node the selector leaves out: %v", err)
	}
	if pairs.Status.AtProvider.Nodes != 1 || len(pairs.Status.AtProvider.NodePorts) != 1 || pairs.Status.AtProvider.NodePorts[0].PortID != nodePorts["a"] {
		t.Errorf("status.atProvider: nodes %d, nodePorts %+v; want the one selected node's port %s recorded", pairs.Status.AtProvider.Nodes,
			pairs.Status.AtProvider.NodePorts, nodePorts["a"])
	}

	if err := kube.Delete(ctx, pairs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "deleting the NodeAddressPairs removes its pairs", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pairs), pairs); err == nil {
			return fmt.Errorf("%s still there", pairs.Name)
		}
		return napWant(ctx, sc, nodePorts["a"])
	})
}
