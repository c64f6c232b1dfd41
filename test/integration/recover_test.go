//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2"
	corev1 "k8s.io/api/core/v1"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	netv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	nsnet "github.com/ipsecgw/provider-ipsec/apis/namespaced/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/test/docsteps"
)

// TestRecoverBareMRs plays an accidental deletion of the provider package
// under managed resources applied on their own (no composite to compose
// them again), and the recovery of docs/uninstall.md: the provider, a real
// process (the cmd/provider binary) on an API server of its own, makes a
// SecurityGroup, a Port in it, an allocated FloatingIPBinding on the Port
// and a Network, each cluster-scoped and namespaced (tenant-a), in the real
// Neutron. Then what the package deletion does: the provider stops and
// every CRD of the package is deleted, so the MRs are being deleted; the
// recovery orphans them and removes their finalizers (their Neutron
// objects stay, unmanaged), the CRDs come back (the package manager), the
// ProviderConfigs are applied again, a new provider process starts, and
// the same manifests are applied again: the same names, new UIDs. Every MR
// must be Ready with the Neutron object it had (its external name the old
// ID), and Neutron must hold exactly one object per MR (counted by
// description and, for the named kinds, by name). Last, another tenant
// applying the same SecurityGroup manifest in its own namespace gets a
// group of its own: the marker never hands it tenant-a's.
func TestRecoverBareMRs(t *testing.T) {
	e := startOpenStack(t)
	ctx := context.Background()
	sc := neutron(t, e)
	dir := t.TempDir()
	bin := filepath.Join(dir, "provider")
	buildProvider(t, bin)

	ctrllog.SetLogger(logr.Discard())
	kcfg := filepath.Join(dir, "kubeconfig")
	env := &envtest.Environment{CRDDirectoryPaths: []string{crdDir, thirdPartyCRDDir}, ErrorIfCRDPathMissing: true}
	own := providerAPIServer(t, env, "an envtest of the test's own", kcfg)
	providerCredentials(t, own, e, "")
	for _, ns := range []string{"tenant-a", "tenant-b"} {
		for _, o := range []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "clouds"}, Data: map[string][]byte{"clouds.yaml": e.CloudsYAML}},
			nsProviderConfig(ns, "openstack", ns),
		} {
			if err := own.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	providerArgs := []string{"--debug", "--metrics-bind-address=0", "--health-probe-bind-address=0"}

	// Whatever the test leaves in Neutron, once no provider runs.
	var providers []*providerProcess
	t.Cleanup(func() {
		for _, p := range providers {
			p.stop()
		}
		// Floating IPs, ports, groups, networks: none is deleted while
		// another uses it.
		mrs := append(bareMRs(e, "tenant-a"), bareMRs(e, "tenant-b")...)
		for _, c := range []openstack.Collection{openstack.FloatingIPs, openstack.Ports, openstack.SecurityGroups, openstack.Networks} {
			for _, m := range mrs {
				if m.c != c {
					continue
				}
				for _, id := range describedIn(t, sc, m.c, m.desc) {
					_, _ = sc.Delete(context.Background(), sc.ServiceURL(m.c.Path, id), nil) //nolint:bodyclose // gophercloud reads and closes the body
				}
			}
		}
	})

	// 1. The bare MRs, made by the provider.
	providers = append(providers, runProvider(t, bin, kcfg, filepath.Join(dir, "provider-1.log"), providerArgs...))
	start := time.Now()
	before := bareMRs(e, "tenant-a")
	for _, m := range before {
		if err := own.Create(ctx, m.mg); err != nil {
			t.Fatal(err)
		}
	}
	readyAll(t, own, providers[0], before)
	t.Logf("%d bare MRs Ready %s after their creation", len(before), time.Since(start).Round(100*time.Millisecond))
	ids := map[string]string{}
	for _, m := range before {
		ids[m.desc] = meta.GetExternalName(m.mg)
	}
	if err := oneEach(t, sc, before, ids); err != nil {
		t.Fatalf("before the deletion: %v", err)
	}

	// 2. The package deleted: its provider stops, its CRDs are deleted,
	// and with them every MR is being deleted, waiting for a provider.
	providers[0].stop()
	var crds []*extv1.CustomResourceDefinition
	for _, crd := range packageCRDs(t) {
		crds = append(crds, crd)
	}
	for _, crd := range crds {
		if err := own.Delete(ctx, crd); err != nil {
			t.Fatal(err)
		}
	}
	// The API server marks their objects for deletion CRD by CRD, over
	// a minute or more; the recovery begins with the first.
	eventually(t, 60*time.Second, "a bare MR being deleted", func() error {
		for _, m := range before {
			if err := own.Get(ctx, client.ObjectKeyFromObject(m.mg), m.mg); err != nil {
				return err
			}
			if m.mg.GetDeletionTimestamp() != nil {
				return nil
			}
		}
		return errors.New("none is")
	})

	// 3. The recovery, its steps as docs/uninstall.md gives them: each MR
	// orphaned, those applied on their own noted with their Neutron IDs;
	// then (the steps that wait for the Provider package, done here) each
	// MR and ProviderConfig released (its finalizer removed), the CRDs
	// gone, and installed again as the package manager does.
	start = time.Now()
	doc := docsteps.Read(t, filepath.Join(repoRoot, "docs", "uninstall.md"))
	doc.Require(t, "recover-mrs", "recover-orphan", "recover-check", "recover-bare", "recover-bare-check")
	bare := filepath.Join(dir, "bare-mrs.txt")
	shell := []string{"KUBECONFIG=" + kcfg, "BARE=" + bare, "PATH=" + os.Getenv("KUBEBUILDER_ASSETS") + ":" + os.Getenv("PATH"), "HOME=" + dir}
	doc.Run(t, shell, dir, time.Minute, []string{"recover-mrs"}, "recover-orphan", "recover-check", "recover-bare")
	var listed []string
	for _, m := range before {
		listed = append(listed, m.crd+" "+m.mg.GetNamespace()+"/"+m.mg.GetName()+" "+ids[m.desc])
	}
	if b, err := os.ReadFile(bare); err != nil || !sameLines(string(b), listed) {
		t.Fatalf("step recover-bare listed:\n%s(%v), want each bare MR with its Neutron ID:\n%s", b, err, strings.Join(listed, "\n"))
	}
	for _, crd := range crds {
		releaseAll(t, own, crd)
	}
	eventually(t, 5*time.Minute, "the package's CRDs deleted", func() error {
		for _, crd := range crds {
			switch err := own.Get(ctx, client.ObjectKeyFromObject(crd), &extv1.CustomResourceDefinition{}); {
			case err == nil:
				return fmt.Errorf("CRD %s is still there", crd.Name)
			case !kerrors.IsNotFound(err):
				return err
			}
		}
		return nil
	})
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{crdDir}, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
	for _, pc := range []client.Object{openstackProviderConfig(""), nsProviderConfig("tenant-a", "openstack", "tenant-a"), nsProviderConfig("tenant-b", "openstack", "tenant-b")} {
		if err := own.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("the package's CRDs deleted and installed again %s after the recovery began", time.Since(start).Round(100*time.Millisecond))
	for _, m := range before {
		if got := describedIn(t, sc, m.c, m.desc); len(got) != 1 || got[0] != ids[m.desc] {
			t.Fatalf("after the MRs were released, Neutron %ss described %q: %v, want only %s (orphaned, the object stays)", m.c.Kind, m.desc, got, ids[m.desc])
		}
	}

	// 4. The provider back, the same manifests applied again: each MR
	// adopts its Neutron object, no twin is made.
	providers = append(providers, runProvider(t, bin, kcfg, filepath.Join(dir, "provider-2.log"), providerArgs...))
	start = time.Now()
	again := bareMRs(e, "tenant-a")
	for _, m := range again {
		if err := own.Create(ctx, m.mg); err != nil {
			t.Fatal(err)
		}
	}
	readyAll(t, own, providers[1], again)
	t.Logf("%d bare MRs applied again Ready %s after their creation", len(again), time.Since(start).Round(100*time.Millisecond))
	for i, m := range again {
		if m.mg.GetUID() == before[i].mg.GetUID() {
			t.Errorf("%T %s applied again has its predecessor's UID %s", m.mg, m.mg.GetName(), m.mg.GetUID())
		}
	}
	if err := oneEach(t, sc, again, ids); err != nil {
		t.Error(err)
	}
	// The recovery's check agrees: each MR back with its Neutron ID.
	doc.Run(t, shell, dir, time.Minute, nil, "recover-bare-check")

	// 5. Another tenant's MR of the same name and manifest is not given
	// tenant-a's group: it makes its own.
	other := bareMRs(e, "tenant-b")[:1]
	other[0].desc = again[0].desc
	theirs := other[0].mg.(*nsnet.SecurityGroup)
	theirs.Spec.ForProvider = again[0].mg.(*nsnet.SecurityGroup).Spec.ForProvider
	if err := own.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	readyAll(t, own, providers[1], other)
	if id := meta.GetExternalName(theirs); id == ids[again[0].desc] {
		t.Errorf("tenant-b's SecurityGroup %s adopted tenant-a's group %s", theirs.Name, id)
	}
	if got := describedIn(t, sc, openstack.SecurityGroups, again[0].desc); len(got) != 2 {
		t.Errorf("Neutron security groups described %q: %v, want tenant-a's and tenant-b's", again[0].desc, got)
	}

	// 6. Deleted with the provider running, every object goes.
	for _, m := range append(other, again...) {
		if err := own.Delete(ctx, m.mg); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 120*time.Second, "every MR deleted and its Neutron object with it", func() error {
		providers[1].alive(t)
		var errs []error
		for _, m := range append(other, again...) {
			switch err := own.Get(ctx, client.ObjectKeyFromObject(m.mg), m.mg); {
			case err == nil:
				errs = append(errs, fmt.Errorf("%T %s still exists (finalizers %v)", m.mg, m.mg.GetName(), m.mg.GetFinalizers()))
			case !kerrors.IsNotFound(err):
				errs = append(errs, err)
			}
			if got := describedIn(t, sc, m.c, m.desc); len(got) > 0 {
				errs = append(errs, fmt.Errorf("Neutron %ss described %q left: %v", m.c.Kind, m.desc, got))
			}
		}
		return errors.Join(errs...)
	})
}

// bareMR is a managed resource the test applies on its own, the name of
// its CRD, the Neutron collection of its object and that object's
// description (unique in the test, so that its objects are counted
// whichever MR's marker they carry).
type bareMR struct {
	mg   resource.Managed
	crd  string
	c    openstack.Collection
	desc string
}

// bareMRs are a SecurityGroup, a Port in it, an allocated
// FloatingIPBinding on the Port and a Network, cluster-scoped and
// namespaced in ns, as a user applies them: fresh objects, the same each
// time (the namespaced ones' Neutron names carry ns).
func bareMRs(e *openStackEnv, ns string) []bareMR {
	desc := func(scope, kind string) string { return "itest-recover " + scope + " " + kind }
	cpc := &xpv2.Reference{Name: "openstack"}
	sg := gatewaySecurityGroup("recover-sg", "openstack")
	sg.Spec.ForProvider.Description = ptr.To(desc("cluster", "sg"))
	port := portMR("recover-port", netv1alpha1.PortParameters{NetworkID: ptr.To(e.Fixtures.TenantNet.ID), Name: ptr.To("recover-port"),
		Description: ptr.To(desc("cluster", "port")), SecurityGroupIDRefs: []xpv2.Reference{{Name: sg.Name}}})
	fip := &netv1alpha1.FloatingIPBinding{ObjectMeta: metav1.ObjectMeta{Name: "recover-fip"}}
	fip.Spec.ForProvider = netv1alpha1.FloatingIPBindingParameters{FloatingNetworkID: ptr.To(netv1alpha1.UUID(e.Fixtures.ExtNet.ID)),
		PortIDRef: &xpv2.Reference{Name: port.Name}, Description: ptr.To(desc("cluster", "fip"))}
	fip.Spec.ProviderConfigReference = cpc
	network := &netv1alpha1.Network{ObjectMeta: metav1.ObjectMeta{Name: "recover-net"}}
	network.Spec.ForProvider = netv1alpha1.NetworkParameters{Name: ptr.To("recover-net"), Description: ptr.To(desc("cluster", "net"))}
	network.Spec.ProviderConfigReference = cpc

	ref := pcRef("ProviderConfig", "openstack")
	nsg := nsSecurityGroup(ns, "recover-sg", ref)
	nsg.Spec.ForProvider.Name = ns + "-recover-sg"
	nsg.Spec.ForProvider.Description = ptr.To(desc(ns, "sg"))
	nport := &nsnet.Port{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "recover-port"}, Spec: nsnet.PortSpec{ForProvider: nsnet.PortParameters{
		NetworkID: ptr.To(e.Fixtures.TenantNet.ID), Name: ptr.To(ns + "-recover-port"), Description: ptr.To(desc(ns, "port")),
		SecurityGroupIDRefs: []xpv2.NamespacedReference{{Name: nsg.Name}},
	}}}
	nport.Spec.ProviderConfigReference = ref
	nfip := &nsnet.FloatingIPBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "recover-fip"}, Spec: nsnet.FloatingIPBindingSpec{ForProvider: nsnet.FloatingIPBindingParameters{
		FloatingNetworkID: ptr.To(netv1alpha1.UUID(e.Fixtures.ExtNet.ID)), PortIDRef: &xpv2.NamespacedReference{Name: nport.Name}, Description: ptr.To(desc(ns, "fip")),
	}}}
	nfip.Spec.ProviderConfigReference = ref
	nnet := &nsnet.Network{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "recover-net"}}
	nnet.Spec.ForProvider = netv1alpha1.NetworkParameters{Name: ptr.To(ns + "-recover-net"), Description: ptr.To(desc(ns, "net"))}
	nnet.Spec.ProviderConfigReference = ref

	// The namespaced group first: step 5 applies tenant-b's.
	const cg, ng = ".networking.ipsecgw.io", ".networking.m.ipsecgw.io"
	return []bareMR{
		{nsg, "securitygroups" + ng, openstack.SecurityGroups, desc(ns, "sg")}, {nport, "ports" + ng, openstack.Ports, desc(ns, "port")},
		{nfip, "floatingipbindings" + ng, openstack.FloatingIPs, desc(ns, "fip")}, {nnet, "networks" + ng, openstack.Networks, desc(ns, "net")},
		{sg, "securitygroups" + cg, openstack.SecurityGroups, desc("cluster", "sg")}, {port, "ports" + cg, openstack.Ports, desc("cluster", "port")},
		{fip, "floatingipbindings" + cg, openstack.FloatingIPs, desc("cluster", "fip")}, {network, "networks" + cg, openstack.Networks, desc("cluster", "net")},
	}
}

// readyAll waits until every MR of mrs is Ready and Synced, failing t when
// the provider p exits.
func readyAll(t *testing.T, c client.Client, p *providerProcess, mrs []bareMR) {
	t.Helper()
	eventually(t, 180*time.Second, "every MR Ready", func() error {
		p.alive(t)
		for _, m := range mrs {
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(m.mg), m.mg); err != nil {
				return err
			}
			r, s := m.mg.GetCondition(xpv2.TypeReady), m.mg.GetCondition(xpv2.TypeSynced)
			if r.Status != corev1.ConditionTrue || s.Status != corev1.ConditionTrue {
				return fmt.Errorf("%T %s: Ready=%s; Synced=%s: %s", m.mg, m.mg.GetName(), r.Status, s.Status, s.Message)
			}
		}
		return nil
	})
}

// oneEach checks that Neutron holds exactly one object per MR of mrs, the
// one ids has for its description and its external name names: counted by
// description, and by name for the kinds that have one.
func oneEach(t *testing.T, sc *gophercloud.ServiceClient, mrs []bareMR, ids map[string]string) error {
	t.Helper()
	var errs []error
	for _, m := range mrs {
		got := describedIn(t, sc, m.c, m.desc)
		if len(got) != 1 || got[0] != ids[m.desc] || meta.GetExternalName(m.mg) != ids[m.desc] {
			errs = append(errs, fmt.Errorf("%T %s: Neutron %ss described %q %v, external name %q, want only %s", m.mg, m.mg.GetName(), m.c.Kind, m.desc, got, meta.GetExternalName(m.mg), ids[m.desc]))
		}
		if m.c == openstack.FloatingIPs {
			continue
		}
		var name string
		switch mg := m.mg.(type) {
		case *netv1alpha1.SecurityGroup:
			name = mg.Spec.ForProvider.Name
		case *nsnet.SecurityGroup:
			name = mg.Spec.ForProvider.Name
		case *netv1alpha1.Port:
			name = *mg.Spec.ForProvider.Name
		case *nsnet.Port:
			name = *mg.Spec.ForProvider.Name
		case *netv1alpha1.Network:
			name = *mg.Spec.ForProvider.Name
		case *nsnet.Network:
			name = *mg.Spec.ForProvider.Name
		}
		if named := namedIn(t, sc, m.c, name); len(named) != 1 {
			errs = append(errs, fmt.Errorf("%d Neutron %ss named %q: %v", len(named), m.c.Kind, name, named))
		}
	}
	return errors.Join(errs...)
}

// describedIn returns the IDs of the objects of c whose description is
// desc followed by a marker, whichever MR's.
func describedIn(t *testing.T, sc *gophercloud.ServiceClient, c openstack.Collection, desc string) []string {
	t.Helper()
	return idsWhere(t, sc, c, func(d string) bool { return strings.HasPrefix(d, desc+" [crossplane-") })
}

// sameLines says whether text holds exactly the lines want, in any order.
func sameLines(text string, want []string) bool {
	got := strings.Split(strings.TrimSpace(text), "\n")
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	return slices.Equal(got, want)
}

// releaseAll removes the finalizers of every object of crd (none when the
// CRD is gone already), as step 2 of the recovery does for the orphaned
// MRs and the ProviderConfigs.
func releaseAll(t *testing.T, c client.Client, crd *extv1.CustomResourceDefinition) {
	t.Helper()
	var version string
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			version = v.Name
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(crd.Spec.Group + "/" + version)
	list.SetKind(crd.Spec.Names.ListKind)
	err := c.List(context.Background(), list)
	switch {
	case kerrors.IsNotFound(err) || apimeta.IsNoMatchError(err):
		return // the CRD is gone, and its objects with it
	case err != nil:
		t.Fatalf("list %s: %v", crd.Name, err)
	}
	for i := range list.Items {
		o := &list.Items[i]
		if len(o.GetFinalizers()) == 0 {
			continue
		}
		if err := c.Patch(context.Background(), o, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil && !kerrors.IsNotFound(err) {
			t.Fatalf("release %s %s: %v", crd.Spec.Names.Kind, o.GetName(), err)
		}
	}
}
