//go:build integration

package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
)

// TestOpenStackCredentials proves password and application-credential
// ProviderConfigs both reach the real Neutron and may do there, under its
// default policies, what the provider does (tenantWrites), that a second
// use reuses the Keystone token, and that a wrong password is an error
// naming the ProviderConfig.
func TestOpenStackCredentials(t *testing.T) {
	e := startOpenStack(t)
	ctx := context.Background()
	for _, name := range []string{"openstack", "openstack-appcred"} {
		t.Run(name, func(t *testing.T) {
			pc := &v1alpha1.ProviderConfig{}
			if err := kube.Get(ctx, client.ObjectKey{Name: name}, pc); err != nil {
				t.Fatal(err)
			}
			sc, err := e.Clients.Network(ctx, kube, pc)
			if err != nil {
				t.Fatalf("Network(): %v", err)
			}
			n, err := networks.Get(ctx, sc, e.Fixtures.TenantNet.ID).Extract()
			if err != nil || n.Name != "tenant-net" {
				t.Fatalf("GET tenant-net = %v, %v", n, err)
			}
			before := e.Requests.Load()
			sc, err = e.Clients.Network(ctx, kube, pc)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := networks.Get(ctx, sc, e.Fixtures.TenantNet.ID).Extract(); err != nil {
				t.Fatal(err)
			}
			if got := e.Requests.Load() - before; got != 1 {
				t.Errorf("a second use sent %d requests, want 1 (the GET; no new Keystone login)", got)
			}
			tenantWrites(ctx, t, sc, e, name)
		})
	}

	t.Run("WrongPassword", func(t *testing.T) {
		bad := strings.Replace(string(e.CloudsYAML), "tenant-a-password", "not-the-password", 1)
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "crossplane-system", Name: "bad-clouds"}, Data: map[string][]byte{"clouds.yaml": []byte(bad)}}
		if err := kube.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = kube.Delete(context.Background(), s) })
		ref := secretRef("bad-clouds", "clouds.yaml")
		ref.Namespace = "crossplane-system"
		pc := &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "wrong-password"},
			Spec: v1alpha1.ProviderConfigSpec{Credentials: v1alpha1.OpenStackCredentials{SecretRef: ref, Cloud: "tenant-a"}}}
		_, err := e.Clients.Network(ctx, kube, pc)
		if err == nil || !strings.HasPrefix(err.Error(), "ProviderConfig wrong-password: cannot authenticate to Keystone at http://127.0.0.1:") {
			t.Fatalf("Network() with a wrong password = %v, want an error naming the ProviderConfig", err)
		}
		if strings.Contains(err.Error(), "not-the-password") {
			t.Errorf("the error shows the password: %v", err)
		}
		t.Logf("wrong password: %v", err)
	})
}

// tenantWrites creates what the provider creates for a gateway, as the
// tenant: a security group with a rule, a port on tenant-net in it, a
// floating IP on ext-net associated with the port and an extra route on the
// tenant's router with that port's fixed IP as next hop; then deletes them
// again. Each call must succeed.
func tenantWrites(ctx context.Context, t *testing.T, sc *gophercloud.ServiceClient, e *openStackEnv, name string) {
	t.Helper()
	step := func(what string, err error) {
		if err != nil {
			t.Fatalf("%s as %s: %v", what, name, err)
		}
	}
	sg := securityGroup(t, sc, "creds-"+name, "", rules.CreateOpts{Protocol: rules.ProtocolUDP, PortRangeMin: 500, PortRangeMax: 500})
	p, err := ports.Create(ctx, sc, ports.CreateOpts{Name: "creds-" + name, NetworkID: e.Fixtures.TenantNet.ID, SecurityGroups: &[]string{sg.ID}}).Extract()
	step("create a port on tenant-net", err)
	// After a failed step; the port is deleted below otherwise.
	t.Cleanup(func() { _ = ports.Delete(context.Background(), sc, p.ID).ExtractErr() })
	fip, err := floatingips.Create(ctx, sc, floatingips.CreateOpts{FloatingNetworkID: e.Fixtures.ExtNet.ID, PortID: p.ID}).Extract()
	step("create a floating IP on the port", err)
	step("delete the floating IP", floatingips.Delete(ctx, sc, fip.ID).ExtractErr())
	route := []routers.Route{{DestinationCIDR: "192.0.2.0/24", NextHop: p.FixedIPs[0].IPAddress}}
	_, err = extraroutes.Add(ctx, sc, e.Fixtures.Router.ID, extraroutes.Opts{Routes: &route}).Extract()
	step("add an extra route", err)
	_, err = extraroutes.Remove(ctx, sc, e.Fixtures.Router.ID, extraroutes.Opts{Routes: &route}).Extract()
	step("remove the extra route", err)
	step("delete the port", ports.Delete(ctx, sc, p.ID).ExtractErr())
	step("delete the security group", groups.Delete(ctx, sc, sg.ID).ExtractErr())
}
