package openstack

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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

// TestClientsIdleConns proves a client keeps as many idle connections per
// host as IdleConnsPerHost says (Go's default is 2), on a transport that
// keeps Go's default dial, TLS-handshake and idle timeouts.
func TestClientsIdleConns(t *testing.T) {
	cases := map[string]struct {
		reason string
		idle   int
		want   int
	}{
		"Default": {reason: "Unset, a client keeps DefaultIdleConnsPerHost.", want: DefaultIdleConnsPerHost},
		"Set":     {reason: "Set, a client keeps that many.", idle: 25, want: 25},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var base *http.Transport
			c := NewClients()
			c.IdleConnsPerHost = tc.idle
			c.Transport = func(rt http.RoundTripper) http.RoundTripper {
				base, _ = rt.(*http.Transport)
				return rt
			}
			c.authenticate = func(context.Context, *Credentials, http.RoundTripper, time.Duration) (*gophercloud.ProviderClient, error) {
				p := &gophercloud.ProviderClient{}
				p.EndpointLocator = func(gophercloud.EndpointOpts) (string, error) { return "http://127.0.0.1:9696/", nil }
				return p, nil
			}
			if _, err := c.Network(context.Background(), secrets(map[string]map[string]string{"openstack": {"clouds.yaml": cloudsPassword}}), pc(nil)); err != nil {
				t.Fatal(err)
			}
			if base == nil {
				t.Fatal("the client's base transport is not an *http.Transport")
			}
			got := []any{base.MaxIdleConnsPerHost, base.IdleConnTimeout, base.TLSHandshakeTimeout, base.Proxy != nil}
			want := []any{tc.want, 90 * time.Second, 10 * time.Second, true}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s\n-want +got (idle per host, idle timeout, TLS handshake timeout, proxy from environment):\n%s", tc.reason, diff)
			}
		})
	}
}
