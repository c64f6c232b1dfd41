//go:build integration

package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// TestReferencesFollowRecomposedPort is issue 18's defect: a Port managed
// resource deleted by hand is composed again with a new Neutron port, and a
// binding that kept the old port's ID failed for ever with 404
// PortNotFound. Two sets run side by side against the real Neutron: one as
// the Composition makes it (a SecurityGroup, a Port choosing it and a
// FloatingIPBinding choosing the Port, by matchControllerRef selectors
// under one composite), whose Port comes back under a new name as
// Crossplane composes it; and one by name (a binding's portIdRef), whose
// Port comes back under the same name as GitOps would apply it. Each
// binding follows to the new port: its spec holds the new port's ID, the
// floating IP is on the new port in Neutron, and it is Ready again.
func TestReferencesFollowRecomposedPort(t *testing.T) {
	ctx := context.Background()
	e, sc := startNeutronProvider(t, openStackControllers)

	owner := []metav1.OwnerReference{{APIVersion: "vpn.ipsecgw.io/v1alpha1", Kind: "XIPsecGateway", Name: "refs-xr",
		UID: types.UID("00000000-0000-4000-8000-00000000f011"), Controller: ptr.To(true)}}
	controlled := &xpv2.Selector{MatchControllerRef: ptr.To(true)}
	sg := gatewaySecurityGroup("refs-sg", "openstack")
	sg.OwnerReferences = owner
	composedPort := func(name string) *netv1alpha1.Port {
		p := portMR(name, netv1alpha1.PortParameters{NetworkID: ptr.To(e.Fixtures.TenantNet.ID), Name: ptr.To("refs-composed"),
			SecurityGroupIDSelector: controlled})
		p.OwnerReferences = owner
		return p
	}
	byNamePort := func() *netv1alpha1.Port {
		return portMR("refs-byname-port", netv1alpha1.PortParameters{NetworkID: ptr.To(e.Fixtures.TenantNet.ID), Name: ptr.To("refs-byname")})
	}
	binding := func(name string, p netv1alpha1.FloatingIPBindingParameters) *netv1alpha1.FloatingIPBinding {
		p.FloatingNetworkID = ptr.To(netv1alpha1.UUID(e.Fixtures.ExtNet.ID))
		mg := &netv1alpha1.FloatingIPBinding{ObjectMeta: metav1.ObjectMeta{Name: name}}
		mg.Spec.ForProvider = p
		mg.Spec.ProviderConfigReference = &xpv2.Reference{Name: "openstack"}
		return mg
	}
	composedFIP := binding("refs-composed-fip", netv1alpha1.FloatingIPBindingParameters{PortIDSelector: controlled})
	composedFIP.OwnerReferences = owner
	byNameFIP := binding("refs-byname-fip", netv1alpha1.FloatingIPBindingParameters{PortIDRef: &xpv2.Reference{Name: "refs-byname-port"}})

	portA, portB := composedPort("refs-port-a"), byNamePort()
	all := []client.Object{composedFIP, byNameFIP, portA, portB, sg}
	create(t, all...)
	portA2, portB2 := composedPort("refs-port-a2"), byNamePort()
	t.Cleanup(func() {
		// The MRs, with the controllers still running (their Neutron
		// objects go with them); then whatever Neutron still holds for them.
		mrs := []client.Object{composedFIP, byNameFIP, portA2, portB2, sg}
		for _, mg := range mrs {
			_ = kube.Delete(context.Background(), mg)
		}
		eventually(t, 90*time.Second, "the test's managed resources are deleted", func() error {
			for _, mg := range mrs {
				if err := kube.Get(context.Background(), client.ObjectKeyFromObject(mg), mg.DeepCopyObject().(client.Object)); err == nil {
					return fmt.Errorf("%s still there", mg.GetName())
				}
			}
			return nil
		})
		deletePorts(t, sc, []client.Object{portA, portB, portA2, portB2})
		for _, mg := range []*netv1alpha1.FloatingIPBinding{composedFIP, byNameFIP} {
			for _, id := range createdFor(t, sc, openstack.FloatingIPs, mg) {
				_ = floatingips.Delete(context.Background(), sc, id).ExtractErr()
			}
		}
	})
	for _, mg := range []*netv1alpha1.FloatingIPBinding{composedFIP, byNameFIP} {
		fipWaitReady(t, mg, 90*time.Second, mg.Name+" is attached to its port")
	}
	oldA, oldB := composedFIP.Spec.ForProvider.PortID, byNameFIP.Spec.ForProvider.PortID
	if oldA == nil || oldB == nil {
		t.Fatalf("resolved port IDs %v, %v: want both set", oldA, oldB)
	}

	// The Ports are deleted by hand; the provider deletes their Neutron
	// ports (Neutron disassociates the floating IPs).
	for _, p := range []*netv1alpha1.Port{portA, portB} {
		if err := kube.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 60*time.Second, "the Ports and their Neutron ports are gone", func() error {
		for _, id := range []string{*oldA, *oldB} {
			if _, err := ports.Get(ctx, sc, id).Extract(); !openstack.IsNotFound(err) {
				return fmt.Errorf("port %s: %w, want 404", id, err)
			}
		}
		for _, p := range []*netv1alpha1.Port{portA, portB} {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(p), &netv1alpha1.Port{}); err == nil {
				return fmt.Errorf("Port %s still there", p.Name)
			}
		}
		return nil
	})

	// Composed again: Crossplane under a new name, GitOps under the same.
	start := time.Now()
	create(t, portA2, portB2)
	for _, c := range []struct {
		fip  *netv1alpha1.FloatingIPBinding
		port *netv1alpha1.Port
		old  string
	}{{composedFIP, portA2, *oldA}, {byNameFIP, portB2, *oldB}} {
		eventually(t, 90*time.Second, c.fip.Name+" follows to the new port", func() error {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(c.port), c.port); err != nil {
				return err
			}
			id := meta.GetExternalName(c.port)
			if id == "" || id == c.old {
				return fmt.Errorf("Port %s has external name %q, want a new port", c.port.Name, id)
			}
			if err := kube.Get(ctx, client.ObjectKeyFromObject(c.fip), c.fip); err != nil {
				return err
			}
			if r, s := c.fip.GetCondition(xpv2.TypeReady), c.fip.GetCondition(xpv2.TypeSynced); r.Status != corev1.ConditionTrue || s.Status != corev1.ConditionTrue {
				return fmt.Errorf("binding Ready %s, Synced %s %s", r.Status, s.Status, s.Message)
			}
			fp := c.fip.Spec.ForProvider
			if fp.PortID == nil || *fp.PortID != id {
				return fmt.Errorf("binding portId %v, want the new port %s", fp.PortID, id)
			}
			if fp.PortIDRef == nil || fp.PortIDRef.Name != c.port.Name {
				return fmt.Errorf("binding portIdRef %v, want %s", fp.PortIDRef, c.port.Name)
			}
			f, err := floatingips.Get(ctx, sc, meta.GetExternalName(c.fip)).Extract()
			if err != nil {
				return err
			}
			if f.PortID != id {
				return fmt.Errorf("floating IP %s is on port %q in Neutron, want %s", f.FloatingIP, f.PortID, id)
			}
			return nil
		})
	}
	t.Logf("both bindings on their new ports %s after the Ports were composed again", time.Since(start).Round(100*time.Millisecond))

	// The composed Port chose the composite's SecurityGroup again.
	if err := kube.Get(ctx, client.ObjectKeyFromObject(sg), sg); err != nil {
		t.Fatal(err)
	}
	p, err := ports.Get(ctx, sc, meta.GetExternalName(portA2)).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.SecurityGroups) != 1 || p.SecurityGroups[0] != meta.GetExternalName(sg) {
		t.Errorf("new port's security groups %v, want [%s]", p.SecurityGroups, meta.GetExternalName(sg))
	}
}
