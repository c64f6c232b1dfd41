//go:build integration

package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
)

// TestSecurityGroupPortFloatingIPChain creates what a gateway needs in
// OpenStack as the composition will: a SecurityGroup, a Port referencing
// it by securityGroupIdRefs and an allocated FloatingIPBinding referencing
// the Port by portIdRef, all at once, with every controller running. All
// become Ready in dependency order, the floating IP is really on the port,
// and deleting the three releases the floating IP and deletes port and
// group in Neutron.
func TestSecurityGroupPortFloatingIPChain(t *testing.T) {
	ctx := context.Background()
	e, sc := startNeutronProvider(t, openStackControllers)

	sg := gatewaySecurityGroup("chain-sg", "openstack")
	port := portMR("chain-port", netv1alpha1.PortParameters{
		NetworkID:           ptr.To(e.Fixtures.TenantNet.ID),
		Name:                ptr.To("chain-port"),
		SecurityGroupIDRefs: []xpv2.Reference{{Name: "chain-sg"}},
	})
	fip := &netv1alpha1.FloatingIPBinding{ObjectMeta: metav1.ObjectMeta{Name: "chain-fip"}}
	fip.Spec.ForProvider = netv1alpha1.FloatingIPBindingParameters{
		FloatingNetworkID: ptr.To(netv1alpha1.UUID(e.Fixtures.ExtNet.ID)),
		PortIDRef:         &xpv2.Reference{Name: "chain-port"},
	}
	fip.Spec.ProviderConfigReference = &xpv2.Reference{Name: "openstack"}

	readyChain(t, "SecurityGroup, Port and FloatingIPBinding", sg, port, fip)
	c := checkChain(t, sc, sg, port, fip, fip.Status.AtProvider.Attached)

	for _, mg := range []client.Object{fip, port, sg} {
		if err := kube.Delete(ctx, mg); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 60*time.Second, "deleting the three releases the floating IP and deletes port and group", c.deleted)
}

// A chain is the Neutron objects of a SecurityGroup, Port and
// FloatingIPBinding, by ID.
type chain struct {
	sc            *gophercloud.ServiceClient
	sg, port, fip string
}

// conditioned is a managed resource, cluster-scoped or namespaced.
type conditioned interface {
	client.Object
	GetCondition(xpv2.ConditionType) xpv2.Condition
}

// readyChain creates the binding fip, the Port port and the SecurityGroup
// sg at once (the dependents first), waits until sg, port and fip are Ready
// in turn (waitReady's 60 s each) and logs after how long, naming the three
// what.
func readyChain(t *testing.T, what string, sg, port, fip conditioned) {
	t.Helper()
	start := time.Now()
	create(t, fip, port, sg)
	for _, mg := range []conditioned{sg, port, fip} {
		waitReady(t, mg, func() xpv2.ConditionedStatus {
			return xpv2.ConditionedStatus{Conditions: []xpv2.Condition{mg.GetCondition(xpv2.TypeReady), mg.GetCondition(xpv2.TypeSynced)}}
		})
	}
	t.Logf("%s all Ready %s after create", what, time.Since(start).Round(100*time.Millisecond))
}

// checkChain checks in Neutron that the Port's port is in the
// SecurityGroup's group and the binding's floating IP is on it, as the
// binding reports (attached), and deletes the three when t ends.
func checkChain(t *testing.T, sc *gophercloud.ServiceClient, sg, port, fip client.Object, attached bool) chain {
	t.Helper()
	ctx := context.Background()
	c := chain{sc: sc, sg: meta.GetExternalName(sg), port: meta.GetExternalName(port), fip: meta.GetExternalName(fip)}
	t.Cleanup(func() {
		_ = floatingips.Delete(context.Background(), sc, c.fip).ExtractErr()
		_ = ports.Delete(context.Background(), sc, c.port).ExtractErr()
		_ = groups.Delete(context.Background(), sc, c.sg).ExtractErr()
	})
	p, err := ports.Get(ctx, sc, c.port).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.SecurityGroups) != 1 || p.SecurityGroups[0] != c.sg {
		t.Errorf("port security groups %v, want [%s] from the SecurityGroup MR", p.SecurityGroups, c.sg)
	}
	f, err := floatingips.Get(ctx, sc, c.fip).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if f.PortID != c.port || !attached {
		t.Errorf("floating IP %s is on port %q (attached %v), want %s", f.FloatingIP, f.PortID, attached, c.port)
	}
	return c
}

// deleted says which of the chain's objects Neutron still has, or nil.
func (c chain) deleted() error {
	ctx := context.Background()
	if _, err := floatingips.Get(ctx, c.sc, c.fip).Extract(); err == nil {
		return fmt.Errorf("floating IP %s still allocated", c.fip)
	}
	if _, err := ports.Get(ctx, c.sc, c.port).Extract(); err == nil {
		return fmt.Errorf("port %s still exists", c.port)
	}
	if _, err := groups.Get(ctx, c.sc, c.sg).Extract(); err == nil {
		return fmt.Errorf("security group %s still exists", c.sg)
	}
	return nil
}
