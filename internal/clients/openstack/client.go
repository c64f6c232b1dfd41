package openstack

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
)

// requestTimeout bounds one OpenStack API request.
const requestTimeout = 60 * time.Second

// Clients hands out Neutron clients per ProviderConfig. It keeps one
// authenticated gophercloud ProviderClient per ProviderConfig and set of
// credentials, so that reconciles of the same ProviderConfig reuse its
// Keystone token; gophercloud re-authenticates once when Neutron answers
// 401. A change of the credentials (the Secret's clouds.yaml, the cloud,
// region or CA bundle) makes a new client. Safe for concurrent use.
type Clients struct {
	// Transport wraps the HTTP transport of new clients when set, for
	// tests that count or inspect requests.
	Transport func(http.RoundTripper) http.RoundTripper

	mu      sync.Mutex
	clients map[string]cached
	// authenticate makes an authenticated ProviderClient; tests replace it.
	authenticate func(ctx context.Context, c *Credentials, rt http.RoundTripper) (*gophercloud.ProviderClient, error)
}

type cached struct {
	key      [sha256.Size]byte
	provider *gophercloud.ProviderClient
}

// NewClients returns an empty client cache.
func NewClients() *Clients {
	return &Clients{clients: map[string]cached{}, authenticate: authenticate}
}

// Network returns a Neutron (network v2) client for pc, reading its
// credentials with kube. Errors name the ProviderConfig and say whether
// reading the credentials, authenticating to Keystone or finding Neutron in
// the service catalog failed.
func (c *Clients) Network(ctx context.Context, kube client.Reader, pc *v1alpha1.ProviderConfig) (*gophercloud.ServiceClient, error) {
	creds, err := FromProviderConfig(ctx, kube, pc)
	if err != nil {
		return nil, err
	}
	p, err := c.provider(ctx, pc.Name, creds)
	if err != nil {
		return nil, fmt.Errorf("ProviderConfig %s: cannot authenticate to Keystone at %s: %w", pc.Name, creds.Auth.IdentityEndpoint, err)
	}
	sc, err := openstack.NewNetworkV2(p, creds.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("ProviderConfig %s: no Neutron endpoint in the service catalog (region %q): %w", pc.Name, creds.Endpoint.Region, err)
	}
	return sc, nil
}

// provider returns the cached ProviderClient of name when its credentials
// are unchanged, else authenticates a new one.
func (c *Clients) provider(ctx context.Context, name string, creds *Credentials) (*gophercloud.ProviderClient, error) {
	key := creds.fingerprint
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.clients[name]; ok && e.key == key {
		return e.provider, nil
	}
	var rt http.RoundTripper = &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: creds.TLS}
	if c.Transport != nil {
		rt = c.Transport(rt)
	}
	p, err := c.authenticate(ctx, creds, rt)
	if err != nil {
		return nil, err
	}
	c.clients[name] = cached{key: key, provider: p}
	return p, nil
}

// authenticate logs in to Keystone with c over rt, allowing gophercloud to
// re-authenticate when the token expires.
func authenticate(ctx context.Context, c *Credentials, rt http.RoundTripper) (*gophercloud.ProviderClient, error) {
	p, err := openstack.NewClient(c.Auth.IdentityEndpoint)
	if err != nil {
		return nil, err
	}
	p.HTTPClient = http.Client{Transport: rt, Timeout: requestTimeout}
	opts := c.Auth
	opts.AllowReauth = true
	if err := openstack.Authenticate(ctx, p, opts); err != nil {
		return nil, err
	}
	return p, nil
}
