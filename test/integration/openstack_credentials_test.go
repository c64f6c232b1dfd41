//go:build integration

package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
)

// TestOpenStackCredentials proves password and application-credential
// ProviderConfigs both reach the real Neutron, that a second use reuses the
// Keystone token, and that a wrong password is an error naming the
// ProviderConfig.
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
