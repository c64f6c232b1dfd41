//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	gocmp "github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	netv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	pcv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	nsnet "github.com/ipsecgw/provider-ipsec/apis/namespaced/networking/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// startNamespacedProvider runs every controller with the credentials'
// informers of the provider's main (mrsetup.WatchCredentials) and a client
// cache of its own.
func startNamespacedProvider(t *testing.T, e *openStackEnv) {
	t.Helper()
	clients := openstack.NewClients()
	clients.RequestRate = 100
	startProvider(t, asMain(clients))
}

// tenantNamespace creates namespace ns with a Secret "clouds" holding the
// lab's clouds.yaml, removed when t ends.
func tenantNamespace(t *testing.T, e *openStackEnv, ns string) {
	t.Helper()
	ctx := context.Background()
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "clouds"}, Data: map[string][]byte{"clouds.yaml": e.CloudsYAML}}
	if err := kube.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(context.Background(), s) })
}

// nsProviderConfig is a namespaced ProviderConfig in ns of cloud tenant-a
// whose credentials Secret "clouds" is in secretNS.
func nsProviderConfig(ns, name, secretNS string) *nsv1alpha1.ProviderConfig {
	return &nsv1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: pcv1alpha1.ProviderConfigSpec{
		Credentials: pcv1alpha1.OpenStackCredentials{Cloud: "tenant-a", SecretRef: &xpv2.SecretKeySelector{
			SecretReference: xpv2.SecretReference{Namespace: secretNS, Name: "clouds"}, Key: "clouds.yaml"}},
	}}
}

// tenantProviderConfig creates ns with e's credentials (tenantNamespace)
// and in it the ProviderConfig "openstack" reading them, and returns the
// ProviderConfig: its deletion is the caller's.
func tenantProviderConfig(t *testing.T, e *openStackEnv, ns string) *nsv1alpha1.ProviderConfig {
	t.Helper()
	tenantNamespace(t, e, ns)
	pc := nsProviderConfig(ns, "openstack", ns)
	create(t, pc)
	return pc
}

func pcRef(kind, name string) *xpv2.ProviderConfigReference {
	return &xpv2.ProviderConfigReference{Kind: kind, Name: name}
}

// nsSecurityGroup is gatewaySecurityGroup's group, namespaced in ns.
func nsSecurityGroup(ns, name string, ref *xpv2.ProviderConfigReference) *nsnet.SecurityGroup {
	sg := &nsnet.SecurityGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: nsnet.SecurityGroupSpec{ForProvider: gatewaySecurityGroup(name, "").Spec.ForProvider}}
	sg.Spec.ProviderConfigReference = ref
	return sg
}

// TestNamespacedChain creates a gateway's OpenStack objects as namespaced
// managed resources of one namespace, with its own ProviderConfig: a
// SecurityGroup, a Port referencing it and an allocated FloatingIPBinding
// referencing the Port, all at once. All become Ready, the references
// resolved within the namespace, the usages are counted on the namespace's
// ProviderConfig, and deleting the three deletes them in Neutron.
func TestNamespacedChain(t *testing.T) {
	e := startOpenStack(t)
	ctx := context.Background()
	sc := neutron(t, e)
	const ns = "ns-chain"
	pc := tenantProviderConfig(t, e, ns)
	t.Cleanup(func() { _ = kube.Delete(context.Background(), pc) })
	startNamespacedProvider(t, e)

	ref := pcRef("ProviderConfig", "openstack")
	sg := nsSecurityGroup(ns, "gw", ref)
	port := &nsnet.Port{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw"}, Spec: nsnet.PortSpec{ForProvider: nsnet.PortParameters{
		NetworkID: ptr.To(e.Fixtures.TenantNet.ID), Name: ptr.To("ns-chain-port"),
		SecurityGroupIDRefs: []xpv2.NamespacedReference{{Name: "gw"}},
	}}}
	port.Spec.ProviderConfigReference = ref
	fip := &nsnet.FloatingIPBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw"}, Spec: nsnet.FloatingIPBindingSpec{ForProvider: nsnet.FloatingIPBindingParameters{
		FloatingNetworkID: ptr.To(netv1alpha1.UUID(e.Fixtures.ExtNet.ID)), PortIDRef: &xpv2.NamespacedReference{Name: "gw"},
	}}}
	fip.Spec.ProviderConfigReference = ref
	t.Cleanup(func() { forgetMRs(fip, port, sg) })

	readyChain(t, "namespaced SecurityGroup, Port and FloatingIPBinding", sg, port, fip)
	c := checkChain(t, sc, sg, port, fip, fip.Status.AtProvider.Attached)
	eventually(t, 30*time.Second, "the namespace's ProviderConfig counts its three users", func() error {
		usages := &nsv1alpha1.ProviderConfigUsageList{}
		if err := kube.List(ctx, usages, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, u := range usages.Items {
			if u.ProviderConfigReference != (xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "openstack"}) {
				return fmt.Errorf("usage %s names %v", u.Name, u.ProviderConfigReference)
			}
		}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pc), pc); err != nil {
			return err
		}
		if len(usages.Items) != 3 || pc.Status.Users != 3 {
			return fmt.Errorf("%d usages in %s, ProviderConfig users %d, want 3 and 3", len(usages.Items), ns, pc.Status.Users)
		}
		return nil
	})

	deleted := time.Now()
	for _, mg := range []client.Object{fip, port, sg} {
		if err := kube.Delete(ctx, mg); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		t.Logf("deleted in Neutron and Kubernetes %s after delete", time.Since(deleted).Round(100*time.Millisecond))
	})
	eventually(t, 60*time.Second, "deleting the three releases the floating IP and deletes port and group", func() error {
		if err := c.deleted(); err != nil {
			return err
		}
		for _, mg := range []client.Object{fip, port, sg} {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(mg), mg); !kerrors.IsNotFound(err) {
				return fmt.Errorf("%T %s still exists (%w)", mg, mg.GetName(), err)
			}
		}
		return nil
	})
}

// TestNamespacedIsolation proves that a namespaced managed resource never
// reaches a ProviderConfig or Secret of another namespace: a Port in ns-a
// whose ProviderConfig names a Secret of ns-b is refused with the field and
// the fix, a ProviderConfig that exists only in ns-b cannot be named from
// ns-a, a providerConfigRef cannot carry a namespace, nor a reference to
// another managed resource; a ClusterProviderConfig serves the namespaces
// its namespaceSelector selects, and one that does not select ns-a (another
// project's, or the default a managed resource naming none gets, without a
// selector) is refused naming spec.namespaceSelector, with nothing made in
// Neutron.
func TestNamespacedIsolation(t *testing.T) {
	e := startOpenStack(t)
	ctx := context.Background()
	sc := neutron(t, e)
	tenantNamespace(t, e, "ns-a")
	tenantNamespace(t, e, "ns-b")
	// cpcFor is a ClusterProviderConfig of the Secret of ns-b that
	// namespaces selected by sel may use.
	cpcFor := func(name string, sel *metav1.LabelSelector) *nsv1alpha1.ClusterProviderConfig {
		return &nsv1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: nsv1alpha1.ClusterProviderConfigSpec{ProviderConfigSpec: nsProviderConfig("", "", "ns-b").Spec, NamespaceSelector: sel}}
	}
	// The API server labels every namespace with its name.
	only := func(ns string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}
	}
	pcs := []client.Object{
		nsProviderConfig("ns-a", "borrowed", "ns-b"),
		nsProviderConfig("ns-b", "only-b", "ns-b"),
		cpcFor("platform", only("ns-a")),
		cpcFor("project-b", only("ns-b")),
		cpcFor("default", nil),
	}
	create(t, pcs...)
	// After the provider stopped: without their finalizers, so that the
	// next test can make a ClusterProviderConfig default of its own.
	t.Cleanup(func() { forgetMRs(pcs...) })
	startNamespacedProvider(t, e)

	portIn := func(name string, ref *xpv2.ProviderConfigReference) *nsnet.Port {
		p := &nsnet.Port{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-a", Name: name}, Spec: nsnet.PortSpec{ForProvider: nsnet.PortParameters{
			NetworkID: ptr.To(e.Fixtures.TenantNet.ID), Name: ptr.To("ns-isolation-" + name),
		}}}
		p.Spec.ProviderConfigReference = ref
		return p
	}
	refused := map[string]struct {
		reason string
		port   *nsnet.Port
		want   string
	}{
		"SecretOfAnotherNamespace": {
			reason: "A ProviderConfig of ns-a naming the credentials Secret of ns-b is refused, naming the field and the fix.",
			port:   portIn("borrowed", pcRef("ProviderConfig", "borrowed")),
			want: `ProviderConfig ns-a/borrowed: spec.credentials.secretRef.namespace is "ns-b", but a namespaced ProviderConfig reads Secrets of its own namespace only: ` +
				`set it to "ns-a" and keep the Secret there, or use a ClusterProviderConfig`,
		},
		"ProviderConfigOfAnotherNamespace": {
			reason: "The name of ns-b's ProviderConfig is looked up in ns-a, where there is none.",
			port:   portIn("only-b", pcRef("ProviderConfig", "only-b")),
			want:   `cannot get ProviderConfig ns-a/only-b (spec.providerConfigRef names a ProviderConfig of the resource's own namespace)`,
		},
		"ClusterProviderConfigOfAnotherNamespace": {
			reason: "A ClusterProviderConfig whose namespaceSelector selects ns-b only cannot be used from ns-a.",
			port:   portIn("project-b", pcRef("ClusterProviderConfig", "project-b")),
			want:   `ClusterProviderConfig project-b: spec.namespaceSelector (kubernetes.io/metadata.name=ns-b) does not select namespace ns-a`,
		},
		"DefaultWithoutSelector": {
			reason: "A Port naming no ProviderConfig gets the CRD's default, ClusterProviderConfig default, which selects no namespace without a namespaceSelector.",
			port:   portIn("defaulted", nil),
			want:   `ClusterProviderConfig default has no spec.namespaceSelector, so no namespace may use it`,
		},
	}
	for name, tc := range refused {
		t.Run(name, func(t *testing.T) {
			create(t, tc.port)
			t.Cleanup(func() { forgetMRs(tc.port) })
			if tc.port.Spec.ProviderConfigReference == nil {
				t.Fatalf("%s\nthe API server did not default spec.providerConfigRef", tc.reason)
			}
			eventually(t, 30*time.Second, "the Port is refused", func() error {
				if err := kube.Get(ctx, client.ObjectKeyFromObject(tc.port), tc.port); err != nil {
					return err
				}
				s := tc.port.GetCondition(xpv2.TypeSynced)
				if s.Status != corev1.ConditionFalse || !strings.Contains(s.Message, tc.want) {
					return fmt.Errorf("%s\nSynced %s %q, want False containing %q", tc.reason, s.Status, s.Message, tc.want)
				}
				return nil
			})
			all, err := ports.List(sc, ports.ListOpts{Name: *tc.port.Spec.ForProvider.Name}).AllPages(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := ports.ExtractPorts(all); err != nil || len(got) != 0 {
				t.Errorf("%s\nNeutron has %d ports named %s (%v), want none", tc.reason, len(got), *tc.port.Spec.ForProvider.Name, err)
			}
		})
	}

	t.Run("NoNamespaceInProviderConfigRef", func(t *testing.T) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": nsnet.SchemeGroupVersion.String(), "kind": nsnet.PortKind,
			"metadata": map[string]any{"namespace": "ns-a", "name": "pc-namespace"},
			"spec": map[string]any{
				"providerConfigRef": map[string]any{"kind": "ProviderConfig", "name": "only-b", "namespace": "ns-b"},
				"forProvider":       map[string]any{"networkId": e.Fixtures.TenantNet.ID, "name": "ns-isolation-pc-namespace"},
			},
		}}
		err := kube.Create(ctx, u, client.FieldValidation(metav1.FieldValidationStrict))
		if err == nil {
			forgetMRs(u)
			t.Fatal("a providerConfigRef with a namespace was admitted with strict field validation; want it refused")
		}
		if !strings.Contains(err.Error(), `unknown field "spec.providerConfigRef.namespace"`) {
			t.Errorf("create: %v, want an unknown field spec.providerConfigRef.namespace", err)
		}
	})

	t.Run("NoNamespaceInReferences", func(t *testing.T) {
		p := portIn("ref-namespace", pcRef("ClusterProviderConfig", "platform"))
		p.Spec.ForProvider.SecurityGroupIDRefs = []xpv2.NamespacedReference{{Name: "gw", Namespace: "ns-b"}}
		err := kube.Create(ctx, p)
		if err == nil {
			forgetMRs(p)
			t.Fatal("a reference naming another namespace was admitted")
		}
		if !strings.Contains(err.Error(), "references managed resources of its own namespace only") {
			t.Errorf("create: %v, want the own-namespace rule", err)
		}
	})

	t.Run("ClusterProviderConfig", func(t *testing.T) {
		sg := nsSecurityGroup("ns-a", "platform", pcRef("ClusterProviderConfig", "platform"))
		create(t, sg)
		t.Cleanup(func() { forgetMRs(sg) })
		waitReady(t, sg, func() xpv2.ConditionedStatus { return sg.Status.ConditionedStatus })
		id := meta.GetExternalName(sg)
		if err := kube.Delete(ctx, sg); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "the group is deleted", func() error {
			if _, err := groups.Get(ctx, sc, id).Extract(); err == nil {
				return fmt.Errorf("security group %s still exists", id)
			}
			return nil
		})
	})
}

// TestNamespacedExamples applies examples/namespaced as they are: each
// Namespace for real, every other object as a dry run, in file order, so
// that each is valid against its CRD and its namespace exists.
func TestNamespacedExamples(t *testing.T) {
	ctx := context.Background()
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "crossplane-system"}}); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// providerconfig.yaml first: it makes the namespace the others use.
	order := []string{"providerconfig.yaml", "clusterproviderconfig.yaml", "networking.yaml", "gateway.yaml"}
	all, err := filepath.Glob(filepath.Join(repoRoot, "examples", "namespaced", "*.yaml"))
	if err != nil || len(all) != len(order) {
		t.Fatalf("examples/namespaced has %d files (%v), want %v: add a new one to this test", len(all), err, order)
	}
	var files []string
	for _, f := range order {
		files = append(files, filepath.Join(repoRoot, "examples", "namespaced", f))
	}
	applied := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &u.Object); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			if u.GetKind() == "Namespace" {
				if err := kube.Create(ctx, u); err != nil && !kerrors.IsAlreadyExists(err) {
					t.Fatalf("%s: Namespace %s: %v", f, u.GetName(), err)
				}
				continue
			}
			if err := kube.Create(ctx, u, client.DryRunAll); err != nil {
				t.Errorf("%s: %s %s does not apply: %v", filepath.Base(f), u.GetKind(), u.GetName(), err)
			}
			applied[u.GetKind()]++
		}
	}
	want := map[string]int{"Secret": 2, "ProviderConfig": 1, "ClusterProviderConfig": 1, "Network": 1, "SecurityGroup": 1, "Port": 1, "FloatingIPBinding": 1,
		"RouterRoutes": 1, "NodeAddressPairs": 1, "Gateway": 1}
	if diff := gocmp.Diff(want, applied); diff != "" {
		t.Errorf("objects of examples/namespaced by kind: -want, +got:\n%s", diff)
	}
}

// TestNamespacedRouterRoutes routes a client subnet via a namespaced Port
// of the same namespace: namespaced RouterRoutes take their nexthop from
// the Port's fixed IP through nexthopPortRef, the fixtures' router holds
// the route, and deleting the RouterRoutes removes it.
func TestNamespacedRouterRoutes(t *testing.T) {
	e := startOpenStack(t)
	ctx := context.Background()
	sc := neutron(t, e)
	const ns = "ns-routes"
	pc := tenantProviderConfig(t, e, ns)
	router, ip := e.Fixtures.Router.ID, rrHostIn(t, e.Fixtures.TenantSub.CIDR, 70)
	ref := pcRef("ProviderConfig", "openstack")
	port := &nsnet.Port{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw"}, Spec: nsnet.PortSpec{ForProvider: nsnet.PortParameters{
		NetworkID: ptr.To(e.Fixtures.TenantNet.ID), Name: ptr.To("ns-routes-port"),
		FixedIPs: []netv1alpha1.FixedIP{{SubnetID: ptr.To(netv1alpha1.UUID(e.Fixtures.TenantSub.ID)), IPAddress: ptr.To(netv1alpha1.IPAddress(ip))}},
	}}}
	port.Spec.ProviderConfigReference = ref
	rr := &nsnet.RouterRoutes{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "clients"}, Spec: nsnet.RouterRoutesSpec{ForProvider: nsnet.RouterRoutesParameters{
		RouterID: netv1alpha1.UUID(router), Routes: []netv1alpha1.Route{{Destination: "10.34.0.0/24"}},
		NexthopPortRef: &xpv2.NamespacedReference{Name: "gw"},
	}}}
	rr.Spec.ProviderConfigReference = ref
	route := []routers.Route{{DestinationCIDR: "10.34.0.0/24", NextHop: ip}}
	// Registered before the provider starts, so that they run after it
	// stopped.
	t.Cleanup(func() {
		forgetMRs(rr, port)
		deletePorts(t, sc, []client.Object{port})
		if _, err := extraroutes.Remove(context.Background(), sc, router, extraroutes.Opts{Routes: &route}).Extract(); err != nil {
			t.Errorf("cleanup: remove_extraroutes: %v", err)
		}
		_ = kube.Delete(context.Background(), pc)
	})
	startNamespacedProvider(t, e)

	create(t, rr, port)
	waitReady(t, port, func() xpv2.ConditionedStatus { return port.Status.ConditionedStatus })
	waitReady(t, rr, func() xpv2.ConditionedStatus { return rr.Status.ConditionedStatus })
	if err := rrWantRoutes(ctx, sc, router, "10.34.0.0/24 via "+ip); err != nil {
		t.Error(err)
	}
	if err := kube.Delete(ctx, rr); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "deleting the RouterRoutes removes its route", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(rr), rr); !kerrors.IsNotFound(err) {
			return fmt.Errorf("RouterRoutes still exists (%w)", err)
		}
		return rrWantRoutes(ctx, sc, router)
	})
}
