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
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	ipsecctrl "github.com/ipsecgw/provider-ipsec/internal/controller"
)

// TestSecurityGroupPortFloatingIPChain creates what a gateway needs in
// OpenStack as the composition will: a SecurityGroup, a Port referencing
// it by securityGroupIdRefs and an allocated FloatingIPBinding referencing
// the Port by portIdRef, all at once, with every controller running. All
// become Ready in dependency order, the floating IP is really on the port,
// and deleting the three releases the floating IP and deletes port and
// group in Neutron.
func TestSecurityGroupPortFloatingIPChain(t *testing.T) {
	e := startOpenStack(t)
	ctx := context.Background()
	startProvider(t, allControllers(ipsecctrl.Dependencies{OpenStack: e.Clients}))
	sc := neutron(t, e)

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

	start := time.Now()
	create(t, fip, port, sg)
	waitReady(t, sg, func() xpv2.ConditionedStatus { return sg.Status.ConditionedStatus })
	waitReady(t, port, func() xpv2.ConditionedStatus { return port.Status.ConditionedStatus })
	waitReady(t, fip, func() xpv2.ConditionedStatus { return fip.Status.ConditionedStatus })
	t.Logf("SecurityGroup, Port and FloatingIPBinding all Ready %s after create", time.Since(start).Round(100*time.Millisecond))
	sgID, portID, fipID := meta.GetExternalName(sg), meta.GetExternalName(port), meta.GetExternalName(fip)
	t.Cleanup(func() {
		_ = floatingips.Delete(context.Background(), sc, fipID).ExtractErr()
		_ = ports.Delete(context.Background(), sc, portID).ExtractErr()
		_ = groups.Delete(context.Background(), sc, sgID).ExtractErr()
	})

	p, err := ports.Get(ctx, sc, portID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.SecurityGroups) != 1 || p.SecurityGroups[0] != sgID {
		t.Errorf("port security groups %v, want [%s] from the SecurityGroup MR", p.SecurityGroups, sgID)
	}
	f, err := floatingips.Get(ctx, sc, fipID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if f.PortID != portID || !fip.Status.AtProvider.Attached {
		t.Errorf("floating IP %s is on port %q (attached %v), want %s", f.FloatingIP, f.PortID, fip.Status.AtProvider.Attached, portID)
	}

	for _, mg := range []client.Object{fip, port, sg} {
		if err := kube.Delete(ctx, mg); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 60*time.Second, "deleting the three releases the floating IP and deletes port and group", func() error {
		if _, err := floatingips.Get(ctx, sc, fipID).Extract(); err == nil {
			return fmt.Errorf("floating IP %s still allocated", fipID)
		}
		if _, err := ports.Get(ctx, sc, portID).Extract(); err == nil {
			return fmt.Errorf("port %s still exists", portID)
		}
		if _, err := groups.Get(ctx, sc, sgID).Extract(); err == nil {
			return fmt.Errorf("security group %s still exists", sgID)
		}
		return nil
	})
}
