//go:build integration

package integration

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
	"github.com/ipsecgw/provider-ipsec/internal/controller/port"
)

// portMR is a Port on the fixtures' tenant network using the password
// ProviderConfig.
func portMR(name string, fp netv1alpha1.PortParameters) *netv1alpha1.Port {
	p := &netv1alpha1.Port{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: netv1alpha1.PortSpec{ForProvider: fp}}
	p.Spec.ProviderConfigReference = &xpv2.Reference{Name: "openstack"}
	return p
}

// forgetMRs removes the finalizers of the managed resources objs and
// deletes them, for a cleanup after the provider stopped.
func forgetMRs(objs ...client.Object) {
	ctx := context.Background()
	for _, o := range objs {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			continue
		}
		o.SetFinalizers(nil)
		_ = kube.Update(ctx, o)
		_ = kube.Delete(ctx, o)
	}
}

// deleteMRs deletes the managed resources mrs, their controllers still
// running so that they remove what they made, and waits up to timeout
// until the API server has none of them.
func deleteMRs(t *testing.T, timeout time.Duration, mrs ...client.Object) {
	t.Helper()
	ctx := context.Background()
	for _, mg := range mrs {
		_ = kube.Delete(ctx, mg)
	}
	eventually(t, timeout, "the test's managed resources are deleted", func() error {
		for _, mg := range mrs {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(mg), mg.DeepCopyObject().(client.Object)); err == nil {
				return fmt.Errorf("%s still there", mg.GetName())
			}
		}
		return nil
	})
}

// deletePorts deletes every Neutron port carrying one of the MRs' markers
// and the ports ids, ignoring those that are gone.
func deletePorts(t *testing.T, sc *gophercloud.ServiceClient, mrs []client.Object, ids ...string) {
	ctx := context.Background()
	for _, mr := range mrs {
		if mr.GetUID() == "" {
			continue
		}
		ids = append(ids, createdFor(t, sc, openstack.Ports, mr)...)
	}
	for _, id := range ids {
		if err := ports.Delete(ctx, sc, id).ExtractErr(); err != nil && !openstack.IsNotFound(err) {
			t.Errorf("cleanup: delete port %s: %v", id, err)
		}
	}
}

func ready(p *netv1alpha1.Port) error {
	if c := p.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionTrue {
		s := p.GetCondition(xpv2.TypeSynced)
		return fmt.Errorf("Ready=%s (%s); Synced=%s: %s", c.Status, c.Reason, s.Status, s.Message)
	}
	return nil
}

// TestPort drives Port managed resources against the real Neutron with the
// Port controller running: create with a fixed IP from tenant-subnet, a
// security group referenced by a SecurityGroup MR, an allowed address pair
// and tags; drift of the address pair; one GET per Observe; crash-safe
// create; delete.
func TestPort(t *testing.T) {
	e := startOpenStack(t)
	ctx := context.Background()
	sc := neutron(t, e)
	var mrs []client.Object
	var neutronPorts, neutronGroups []string
	// Runs after the provider stopped (cleanups run last-in first-out).
	t.Cleanup(func() {
		deletePorts(t, sc, mrs, neutronPorts...)
		for _, id := range neutronGroups {
			if err := groups.Delete(context.Background(), sc, id).ExtractErr(); err != nil && !openstack.IsNotFound(err) {
				t.Errorf("cleanup: delete security group %s: %v", id, err)
			}
		}
		forgetMRs(mrs...)
	})
	startProvider(t, func(mgr ctrl.Manager, o controller.Options) error {
		return port.Kind.Setup(mgr, o, mrsetup.Dependencies{OpenStack: e.Clients})
	})

	// The SecurityGroup controller is not part of this test: the group is
	// made in Neutron by hand and a paused SecurityGroup MR carries its ID
	// as external name, which is all securityGroupIdRefs resolves.
	sg, err := groups.Create(ctx, sc, groups.CreateOpts{Name: "itest-port-sg", Description: "TestPort"}).Extract()
	if err != nil {
		t.Fatalf("create security group: %v", err)
	}
	neutronGroups = append(neutronGroups, sg.ID)
	sgMR := &netv1alpha1.SecurityGroup{ObjectMeta: metav1.ObjectMeta{Name: "itest-port-sg",
		Annotations: map[string]string{meta.AnnotationKeyReconciliationPaused: "true", meta.AnnotationKeyExternalName: sg.ID}}}
	sgMR.Spec.ForProvider.Name = "itest-port-sg"
	sgMR.Spec.ProviderConfigReference = &xpv2.Reference{Name: "openstack"}
	mrs = append(mrs, sgMR)
	create(t, sgMR)

	sub := netv1alpha1.UUID(e.Fixtures.TenantSub.ID)
	ip := netv1alpha1.IPAddress("10.20.0.50")
	vip := portMR("itest-port-vip", netv1alpha1.PortParameters{
		NetworkID:           ptr.To(e.Fixtures.TenantNet.ID),
		Name:                ptr.To("itest-port-vip"),
		Description:         ptr.To("TestPort"),
		FixedIPs:            []netv1alpha1.FixedIP{{SubnetID: &sub, IPAddress: &ip}},
		SecurityGroupIDRefs: []xpv2.Reference{{Name: sgMR.Name}},
		AllowedAddressPairs: []netv1alpha1.AddressPair{{IPAddress: "192.168.50.0/24"}},
		Tags:                []string{"itest"},
	})
	mrs = append(mrs, vip)
	start := time.Now()
	create(t, vip)

	t.Run("ReadyWithFixedIPAndMAC", func(t *testing.T) {
		eventually(t, 60*time.Second, "the Port is Ready", func() error {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(vip), vip); err != nil {
				return err
			}
			return ready(vip)
		})
		t.Logf("Port create to Ready: %s", time.Since(start).Round(10*time.Millisecond))
		id := meta.GetExternalName(vip)
		at := vip.Status.AtProvider
		if at.ID != id || at.MACAddress == "" || at.Status != "DOWN" || at.RevisionNumber == 0 {
			t.Errorf("status.atProvider = %+v, want the port %s with a MAC, status DOWN and a revision", at, id)
		}
		if want := []netv1alpha1.ObservedFixedIP{{SubnetID: e.Fixtures.TenantSub.ID, IPAddress: "10.20.0.50", SubnetCIDR: e.Fixtures.TenantSub.CIDR, GatewayIP: "10.20.0.1"}}; !slices.Equal(at.FixedIPs, want) {
			t.Errorf("status.atProvider.fixedIps = %v, want %v", at.FixedIPs, want)
		}
		if !slices.Equal(vip.Spec.ForProvider.SecurityGroupIDs, []string{sg.ID}) {
			t.Errorf("securityGroupIds = %v, want the referenced group %s", vip.Spec.ForProvider.SecurityGroupIDs, sg.ID)
		}
		p, err := ports.Get(ctx, sc, id).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if p.MACAddress != at.MACAddress || p.DeviceOwner != "" || !slices.Equal(p.SecurityGroups, []string{sg.ID}) ||
			len(p.AllowedAddressPairs) != 1 || p.AllowedAddressPairs[0].IPAddress != "192.168.50.0/24" {
			t.Errorf("Neutron port = %+v, want an unbound port with the MR's MAC, group %s and pair 192.168.50.0/24", p, sg.ID)
		}
		slices.Sort(p.Tags)
		if want := []string{"itest"}; !slices.Equal(p.Tags, want) {
			t.Errorf("Neutron port tags = %v, want %v", p.Tags, want)
		}
	})

	t.Run("AddressPairDrift", func(t *testing.T) {
		id := meta.GetExternalName(vip)
		if _, err := ports.Update(ctx, sc, id, ports.UpdateOpts{AllowedAddressPairs: &[]ports.AddressPair{}}).Extract(); err != nil {
			t.Fatalf("remove the address pair by hand: %v", err)
		}
		removed := time.Now()
		eventually(t, 30*time.Second, "the address pair comes back", func() error {
			p, err := ports.Get(ctx, sc, id).Extract()
			if err != nil {
				return err
			}
			if len(p.AllowedAddressPairs) != 1 || p.AllowedAddressPairs[0].IPAddress != "192.168.50.0/24" {
				return fmt.Errorf("allowed address pairs %v", p.AllowedAddressPairs)
			}
			return nil
		})
		t.Logf("address pair restored %s after its removal", time.Since(removed).Round(10*time.Millisecond))
	})

	t.Run("ObserveIsOneRequest", func(t *testing.T) {
		// A client cache of its own, counting only this Observe: the
		// running controller's polls go through e.Clients.
		var n atomic.Int64
		clients := openstack.NewClients()
		clients.Transport = func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				n.Add(1)
				return rt.RoundTrip(r)
			})
		}
		pc := &v1alpha1.ProviderConfig{}
		if err := kube.Get(ctx, client.ObjectKey{Name: "openstack"}, pc); err != nil {
			t.Fatal(err)
		}
		own, err := clients.Network(ctx, kube, pc)
		if err != nil {
			t.Fatal(err)
		}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(vip), vip); err != nil {
			t.Fatal(err)
		}
		before := n.Load()
		obs, err := port.NewExternal(own, openstack.Settling{}).Observe(ctx, vip)
		if err != nil {
			t.Fatal(err)
		}
		if !obs.ResourceExists || !obs.ResourceUpToDate || obs.ResourceLateInitialized {
			t.Errorf("Observe() = %+v, want an existing, up-to-date port needing no late init", obs)
		}
		if got := n.Load() - before; got != 1 {
			t.Errorf("Observe of an up-to-date Port sent %d Neutron requests, want 1", got)
		}

		// And what the running controller spends while the Port is
		// steady, polling every second.
		before, t0 := e.Requests.Load(), time.Now()
		time.Sleep(5 * time.Second)
		t.Logf("steady state: %d Neutron requests in %s of 1 s polls of one Port", e.Requests.Load()-before, time.Since(t0).Round(time.Millisecond))
	})

	var crashed *netv1alpha1.Port
	t.Run("CrashSafeCreate", func(t *testing.T) {
		// The MR exists, paused, before its port: as if the provider made
		// the port and died before it could save the external name.
		crashed = portMR("itest-port-crashed", netv1alpha1.PortParameters{
			NetworkID: ptr.To(e.Fixtures.TenantNet.ID),
			Name:      ptr.To("itest-port-crashed"),
		})
		crashed.Annotations = map[string]string{meta.AnnotationKeyReconciliationPaused: "true"}
		mrs = append(mrs, crashed)
		create(t, crashed)
		p, err := ports.Create(ctx, sc, ports.CreateOpts{NetworkID: e.Fixtures.TenantNet.ID, Name: "itest-port-crashed",
			Description: openstack.Mark(crashed, "")}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		neutronPorts = append(neutronPorts, p.ID)
		leaveCreatePending(t, crashed)
		if meta.GetExternalName(crashed) != "" {
			t.Fatalf("external name %q before the first reconcile, want none", meta.GetExternalName(crashed))
		}
		// Unpause.
		patch := client.MergeFrom(crashed.DeepCopy())
		delete(crashed.Annotations, meta.AnnotationKeyReconciliationPaused)
		if err := kube.Patch(ctx, crashed, patch); err != nil {
			t.Fatal(err)
		}
		eventually(t, 60*time.Second, "the Port adopts the port carrying its marker and is Ready", func() error {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(crashed), crashed); err != nil {
				return err
			}
			if got := meta.GetExternalName(crashed); got != p.ID {
				return fmt.Errorf("external name %q, want %s", got, p.ID)
			}
			return ready(crashed)
		})
		// A few more polls must not create a second port.
		time.Sleep(3 * time.Second)
		if found := createdFor(t, sc, openstack.Ports, crashed); len(found) != 1 || found[0] != p.ID {
			t.Errorf("ports carrying the MR's marker: %v, want exactly the one made by hand (%s)", found, p.ID)
		}
	})

	t.Run("ObserveOnlyImports", func(t *testing.T) {
		// A port someone else made, imported by its ID with management
		// policy Observe: status is filled, Neutron is not touched, and
		// deleting the MR leaves the port.
		p, err := ports.Create(ctx, sc, ports.CreateOpts{NetworkID: e.Fixtures.TenantNet.ID, Name: "itest-port-theirs",
			AllowedAddressPairs: []ports.AddressPair{{IPAddress: "192.168.60.0/24"}}}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		neutronPorts = append(neutronPorts, p.ID)
		imported := portMR("itest-port-imported", netv1alpha1.PortParameters{
			NetworkID: ptr.To(e.Fixtures.TenantNet.ID),
			Name:      ptr.To("another-name"),
		})
		imported.Annotations = map[string]string{meta.AnnotationKeyExternalName: p.ID}
		imported.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
		mrs = append(mrs, imported)
		create(t, imported)
		eventually(t, 30*time.Second, "the imported Port is Ready", func() error {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(imported), imported); err != nil {
				return err
			}
			if imported.Status.AtProvider.MACAddress != p.MACAddress {
				return fmt.Errorf("status.atProvider %+v, want MAC %s", imported.Status.AtProvider, p.MACAddress)
			}
			return ready(imported)
		})
		time.Sleep(2 * time.Second)
		deleteGone(t, imported, "the imported Port MR is gone", "", nil)
		after, err := ports.Get(ctx, sc, p.ID).Extract()
		if err != nil {
			t.Fatalf("the imported port after the MR's deletion: %v, want it untouched", err)
		}
		if after.RevisionNumber != p.RevisionNumber || after.Name != "itest-port-theirs" || len(after.Tags) != 0 || len(after.AllowedAddressPairs) != 1 {
			t.Errorf("imported port = %+v, want it as made (revision %d, no tags, its pair)", after, p.RevisionNumber)
		}
	})

	t.Run("DeleteDeletesThePort", func(t *testing.T) {
		for _, mr := range []*netv1alpha1.Port{vip, crashed} {
			if mr == nil || meta.GetExternalName(mr) == "" {
				continue
			}
			id := meta.GetExternalName(mr)
			deleted := time.Now()
			deleteGone(t, mr, "the Port MR and its Neutron port are gone", "port "+id, func() error {
				_, err := ports.Get(ctx, sc, id).Extract()
				return err
			})
			t.Logf("%s: MR delete to port and MR gone: %s", mr.Name, time.Since(deleted).Round(10*time.Millisecond))
		}
	})
}

// TestPortExample applies examples/networking/port.yaml to the API server
// (dry run): the example is valid against the CRD, and CEL refuses allowed
// address pairs on a port without port security and a port without a
// network.
func TestPortExample(t *testing.T) {
	u := dryRunExample(t, "port.yaml")
	fp := u.Object["spec"].(map[string]any)["forProvider"].(map[string]any)
	fp["portSecurityEnabled"] = false
	delete(fp, "securityGroupIdRefs")
	if err := kube.Create(context.Background(), u, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "need portSecurityEnabled") {
		t.Errorf("address pairs without port security: %v, want refused", err)
	}
	fp["portSecurityEnabled"] = true
	delete(fp, "networkIdRef")
	if err := kube.Create(context.Background(), u, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "a port needs networkId, networkIdRef or networkIdSelector") {
		t.Errorf("no network: %v, want refused", err)
	}
}

// TestPortRefusedCreateRetried proves that a create Neutron refused (409
// IpAddressAlreadyAllocated: the fixed IP is another port's) is retried as
// soon as the cause is gone, not after the 90 s that an interrupted create
// waits before it is concluded to have made nothing: a refused request
// made nothing (openstack.RecordRefusal), and the retry makes exactly one
// port.
func TestPortRefusedCreateRetried(t *testing.T) {
	e := startOpenStack(t)
	ctx := context.Background()
	sc := neutron(t, e)
	sub := e.Fixtures.TenantSub.ID
	blocker, err := ports.Create(ctx, sc, ports.CreateOpts{NetworkID: e.Fixtures.TenantNet.ID, Name: "itest-port-blocker",
		FixedIPs: []ports.IP{{SubnetID: sub, IPAddress: "10.20.0.52"}}}).Extract()
	if err != nil {
		t.Fatalf("create the port holding 10.20.0.52: %v", err)
	}
	ip := netv1alpha1.IPAddress("10.20.0.52")
	subID := netv1alpha1.UUID(sub)
	mr := portMR("itest-port-refused", netv1alpha1.PortParameters{
		NetworkID: ptr.To(e.Fixtures.TenantNet.ID),
		Name:      ptr.To("itest-port-refused"),
		FixedIPs:  []netv1alpha1.FixedIP{{SubnetID: &subID, IPAddress: &ip}},
	})
	blocked := true
	t.Cleanup(func() {
		if blocked {
			deletePorts(t, sc, nil, blocker.ID)
		}
		deletePorts(t, sc, []client.Object{mr})
		forgetMRs(mr)
	})
	startProvider(t, func(mgr ctrl.Manager, o controller.Options) error {
		return port.Kind.Setup(mgr, o, mrsetup.Dependencies{OpenStack: e.Clients})
	})
	create(t, mr)

	eventually(t, 30*time.Second, "the create is refused with IpAddressAlreadyAllocated and the refusal recorded", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(mr), mr); err != nil {
			return err
		}
		if s := mr.GetCondition(xpv2.TypeSynced); !strings.Contains(s.Message, "IpAddressAlreadyAllocated") {
			return fmt.Errorf("Synced=%s: %q, want the 409", s.Status, s.Message)
		}
		if _, ok := mr.GetAnnotations()[openstack.AnnotationCreateRefused]; !ok {
			return fmt.Errorf("annotations %v, want %s", mr.GetAnnotations(), openstack.AnnotationCreateRefused)
		}
		return nil
	})
	deletePorts(t, sc, nil, blocker.ID)
	blocked = false
	freed := time.Now()
	eventually(t, 45*time.Second, "the Port is Ready once 10.20.0.52 is free", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(mr), mr); err != nil {
			return err
		}
		return ready(mr)
	})
	t.Logf("address freed to Port Ready: %s (an interrupted create would wait 90 s)", time.Since(freed).Round(10*time.Millisecond))
	if made := createdFor(t, sc, openstack.Ports, mr); len(made) != 1 {
		t.Errorf("Neutron ports carrying the MR's marker: %v, want exactly one", made)
	}
}
