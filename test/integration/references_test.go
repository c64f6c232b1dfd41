//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/function"
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
		deleteMRs(t, 90*time.Second, composedFIP, byNameFIP, portA2, portB2, sg)
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

// TestReferencesFollowNewNeutronPortAtRest is issue 29's hot loop: under a
// composed, node-selected routed gateway with an allocated floating IP,
// the gateway's Neutron port is deleted out of band; the Port managed
// resource makes a new one and every kind that references the Port by its
// selector (FloatingIPBinding, RouterRoutes, NodeAddressPairs) follows it.
// Then the gateway rests again: over as many polls as before the deletion,
// its managed resources' specs are not written (before the fix the
// resolver's apply patches flipped the binding's portId and portIdRef
// several times a second for ever), the API-server writes and Neutron
// requests are those of the same gateway at rest before the deletion, and
// the NodeAddressPairs names the new port, not the deleted one.
func TestReferencesFollowNewNeutronPortAtRest(t *testing.T) {
	// A short poll, so that "at rest" spans several polls in seconds;
	// the windows are counted in polls.
	const (
		poll  = 5 * time.Second
		polls = 6
	)
	e := startOpenStack(t)
	ctx := context.Background()
	sc := neutron(t, e)
	id := fmt.Sprint(os.Getpid())
	selector := map[string]string{"itest-follow-" + id: "gateway"}
	objs := composeRouted(t, e, "follow-"+id, selector)
	_, nodePort := nodeVM(t, e, sc, "follow-node-"+id, selector)
	fip := objs[function.FloatingIPName].(*netv1alpha1.FloatingIPBinding)
	gw := objs[function.PortName].(*netv1alpha1.Port)
	pairs := objs[function.NodePairsName].(*netv1alpha1.NodeAddressPairs)
	routes := objs[function.RoutesName].(*netv1alpha1.RouterRoutes)
	mrs := []client.Object{objs[function.SecurityGroupName], gw, fip, routes, pairs}

	clients, tap := politeClients()
	reqs := &requestLog{}
	counted := rest.CopyConfig(cfg)
	counted.WrapTransport = reqs.wrap
	startProviderWith(t, asMain(clients), poll, counted)
	t.Cleanup(func() {
		deleteMRs(t, 90*time.Second, mrs...)
		deletePorts(t, sc, mrs)
		for _, id := range createdFor(t, sc, openstack.FloatingIPs, fip) {
			_ = floatingips.Delete(context.Background(), sc, id).ExtractErr()
		}
	})
	create(t, mrs...)
	allSynced := func(what string) {
		t.Helper()
		eventually(t, 120*time.Second, what, func() error {
			for _, mg := range mrs {
				if err := kube.Get(ctx, client.ObjectKeyFromObject(mg), mg); err != nil {
					return err
				}
				c := mg.(resource.Conditioned)
				if r, s := c.GetCondition(xpv2.TypeReady), c.GetCondition(xpv2.TypeSynced); r.Status != corev1.ConditionTrue || s.Status != corev1.ConditionTrue {
					return fmt.Errorf("%s: Ready %s %q, Synced %s %q", mg.GetName(), r.Status, r.Message, s.Status, s.Message)
				}
			}
			return nil
		})
	}
	// rest counts, over the given polls after one to settle, the
	// MRs' spec writes (generations), their API-server writes and the
	// Neutron requests.
	type rest struct {
		generations, writes, neutron int
		// perKind are the Neutron requests per MR per poll, by kind.
		perKind map[string]float64
	}
	generations := func() int {
		n := 0
		for _, mg := range mrs {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(mg), mg); err != nil {
				t.Fatal(err)
			}
			n += int(mg.GetGeneration())
		}
		return n
	}
	atRest := func() rest {
		time.Sleep(poll)
		g, mark, start := generations(), reqs.mark(), time.Now()
		time.Sleep(polls * poll)
		var writes int
		for _, m := range []string{"PUT", "PATCH", "POST"} {
			for _, r := range []string{"/securitygroups/", "/ports/", "/floatingipbindings/", "/routerroutes/", "/nodeaddresspairs/"} {
				writes += len(reqs.since(mark, m+" ", r))
			}
		}
		sent := tap.Since(start)
		perKind := map[string]float64{}
		for _, r := range sent {
			perKind[r.Kind] += 1.0 / polls
		}
		return rest{generations: generations() - g, writes: writes, neutron: len(sent), perKind: perKind}
	}

	allSynced("the composed gateway's managed resources are Ready")
	before := atRest()
	t.Logf("at rest before, over %d polls of %s: %+v", polls, poll, before)

	old := meta.GetExternalName(gw)
	admin := adminNeutron(t, e)
	if err := ports.Delete(ctx, admin, old).ExtractErr(); err != nil {
		t.Fatalf("delete the gateway's Neutron port out of band: %v", err)
	}
	start := time.Now()
	var newID string
	eventually(t, 120*time.Second, "the Port makes a new Neutron port and the binding, routes and pairs follow it", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		if newID = meta.GetExternalName(gw); newID == old || gw.Status.AtProvider.ID != newID || len(gw.Status.AtProvider.FixedIPs) == 0 {
			return fmt.Errorf("the Port's external name %s, status id %q (old port %s)", newID, gw.Status.AtProvider.ID, old)
		}
		f, err := floatingips.Get(ctx, sc, meta.GetExternalName(fip)).Extract()
		if err != nil {
			return fmt.Errorf("the floating IP in Neutron: %w", err)
		}
		if f.PortID != newID {
			return fmt.Errorf("the floating IP %s is on port %q in Neutron, want %s", f.FloatingIP, f.PortID, newID)
		}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pairs), pairs); err != nil {
			return err
		}
		if en := meta.GetExternalName(pairs); en != newID {
			return fmt.Errorf("the NodeAddressPairs' external name is %s, want the new port %s", en, newID)
		}
		mac := gw.Status.AtProvider.MACAddress
		return napWant(ctx, sc, nodePort, gw.FirstFixedIP()+"@"+mac, "192.168.60.0/24@"+mac, "192.168.61.0/24@"+mac)
	})
	t.Logf("followed to the new port %s after %s", newID, time.Since(start).Round(100*time.Millisecond))
	allSynced("the composed gateway's managed resources are Ready again")
	after := atRest()
	t.Logf("at rest after, over %d polls of %s: %+v", polls, poll, after)

	if after.generations != 0 {
		t.Errorf("at rest after the follow, the managed resources' specs were written %d times in %d polls, want none", after.generations, polls)
	}
	// A resting gateway's figures, with one request of slack each for a
	// reconcile that falls on either side of the window's edge.
	if after.writes > before.writes+len(mrs) {
		t.Errorf("at rest after the follow: %d API-server writes of the managed resources in %d polls, before the deletion %d", after.writes, polls, before.writes)
	}
	if after.neutron > before.neutron+len(mrs) {
		t.Errorf("at rest after the follow: %d Neutron requests in %d polls, before the deletion %d", after.neutron, polls, before.neutron)
	}
	if fp := fip.Spec.ForProvider; fp.PortID == nil || *fp.PortID != newID || fp.PortIDRef == nil || fp.PortIDRef.Name != gw.Name {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(fip), fip); err == nil {
			fp = fip.Spec.ForProvider
		}
		t.Errorf("the binding's portId %v and portIdRef %v, want %s and %s", ptr.Deref(fp.PortID, ""), fp.PortIDRef, newID, gw.Name)
	}
}
