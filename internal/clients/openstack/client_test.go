package openstack

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
)

// TestClientsCache proves Keystone is asked once per ProviderConfig and set
// of credentials, and again when the credentials change.
func TestClientsCache(t *testing.T) {
	logins := 0
	c := NewClients()
	c.authenticate = func(_ context.Context, cr *Credentials, _ http.RoundTripper, _ time.Duration) (*gophercloud.ProviderClient, error) {
		logins++
		p := &gophercloud.ProviderClient{IdentityBase: cr.Auth.IdentityEndpoint}
		p.EndpointLocator = func(gophercloud.EndpointOpts) (string, error) { return "http://127.0.0.1:9696/", nil }
		return p, nil
	}
	data := map[string]map[string]string{"openstack": {"clouds.yaml": cloudsPassword}}
	ctx := context.Background()
	steps := []struct {
		what   string
		pc     *v1alpha1.ProviderConfig
		mod    func()
		logins int
	}{
		{what: "first use logs in", pc: pc(nil), logins: 1},
		{what: "reuse keeps the token", pc: pc(nil), logins: 1},
		{what: "another ProviderConfig logs in on its own", pc: pc(func(p *v1alpha1.ProviderConfig) { p.Name = "other" }), logins: 2},
		{what: "a changed clouds.yaml logs in again", pc: pc(nil), mod: func() { data["openstack"]["clouds.yaml"] = cloudsAppCred }, logins: 3},
		{what: "a changed region logs in again", pc: pc(func(p *v1alpha1.ProviderConfig) { p.Spec.Credentials.Region = "RegionTwo" }), logins: 4},
	}
	for _, s := range steps {
		if s.mod != nil {
			s.mod()
		}
		sc, err := c.Network(ctx, secrets(data), s.pc)
		if err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		if sc.ResourceBase != "http://127.0.0.1:9696/v2.0/" {
			t.Errorf("%s: Neutron resource base %q", s.what, sc.ResourceBase)
		}
		if logins != s.logins {
			t.Errorf("%s: %d logins so far, want %d", s.what, logins, s.logins)
		}
	}
}
