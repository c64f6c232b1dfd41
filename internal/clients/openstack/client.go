package openstack

import (
	"cmp"
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

// DefaultIdleConnsPerHost is Clients.IdleConnsPerHost when zero: the
// provider's default reconcile concurrency.
const DefaultIdleConnsPerHost = 10

// DefaultRequestTimeout bounds one OpenStack API request unless
// Clients.RequestTimeout says otherwise.
const DefaultRequestTimeout = 60 * time.Second

// Clients hands out Neutron clients per ProviderConfig. It keeps one
// authenticated gophercloud ProviderClient per ProviderConfig and set of
// credentials, so that reconciles of the same ProviderConfig reuse its
// Keystone token; gophercloud re-authenticates once when Neutron answers
// 401. A change of the credentials (the Secret's clouds.yaml, the cloud,
// region or CA bundle) makes a new client. Every request of a
// ProviderConfig, to Keystone and Neutron, passes its Gate, which lives as
// long as Clients whatever the credentials: a token bucket caps their rate,
// a Retry-After answer holds them, and a failing service makes them back
// off. Safe for concurrent use.
type Clients struct {
	// Transport wraps the HTTP transport of new clients when set, for
	// tests that count or inspect requests.
	Transport func(http.RoundTripper) http.RoundTripper
	// RequestTimeout bounds one OpenStack API request;
	// DefaultRequestTimeout when zero.
	RequestTimeout time.Duration
	// RequestRate caps the OpenStack requests of each ProviderConfig, in
	// requests a second (bursts of twice that); DefaultRequestRate when
	// zero.
	RequestRate float64
	// MaxBackoff is the longest a ProviderConfig's Gate holds the
	// requests to a failing service (5xx answers, no answer) before one
	// probes it again; DefaultMaxBackoff when zero. The provider sets it
	// to half its --poll, so that the resources are Ready again within a
	// poll of the service's return.
	MaxBackoff time.Duration
	// Metrics counts the requests of every ProviderConfig when set.
	Metrics *Metrics
	// Credentials reads ProviderConfigs and their credentials Secrets for
	// the connectors (clients.WatchedSecrets in the provider); they read
	// straight from the API server when nil.
	Credentials client.Reader
	// IdleConnsPerHost is how many idle connections each client keeps
	// open per host (Keystone, Neutron), so that concurrent reconciles
	// reuse connections instead of opening new ones;
	// DefaultIdleConnsPerHost when zero. The provider sets it to its
	// reconcile concurrency.
	IdleConnsPerHost int

	mu      sync.Mutex
	clients map[string]cached
	gates   map[string]*Gate
	// authenticate makes an authenticated ProviderClient; tests replace it.
	authenticate func(ctx context.Context, c *Credentials, rt http.RoundTripper, timeout time.Duration) (*gophercloud.ProviderClient, error)
}

type cached struct {
	key     [sha256.Size]byte
	network *gophercloud.ServiceClient
}

// NewClients returns an empty client cache.
func NewClients() *Clients {
	return &Clients{clients: map[string]cached{}, gates: map[string]*Gate{}, authenticate: authenticate}
}

// Network returns a Neutron (network v2) client for the cluster-scoped
// ProviderConfig pc, as NetworkFor does.
func (c *Clients) Network(ctx context.Context, kube client.Reader, pc *v1alpha1.ProviderConfig) (*gophercloud.ServiceClient, error) {
	return c.NetworkFor(ctx, kube, ClusterConfig(pc))
}

// NetworkFor returns a Neutron (network v2) client for cfg, reading its
// credentials with kube. The client is made once per config (cfg.Key) and
// set of credentials: authentication and Neutron's version discovery
// happen only then. Errors name the config and say whether reading the
// credentials, authenticating to Keystone or finding Neutron in the
// service catalog failed.
func (c *Clients) NetworkFor(ctx context.Context, kube client.Reader, cfg Config) (*gophercloud.ServiceClient, error) {
	creds, err := fromConfig(ctx, kube, cfg)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.clients[cfg.Key]; ok && e.key == creds.fingerprint {
		return e.network, nil
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = creds.TLS
	t.MaxIdleConnsPerHost = cmp.Or(c.IdleConnsPerHost, DefaultIdleConnsPerHost)
	var rt http.RoundTripper = t
	if c.Transport != nil {
		rt = c.Transport(rt)
	}
	rt = c.gate(cfg.Key).Transport(rt, creds.Auth.IdentityEndpoint)
	p, err := c.authenticate(ctx, creds, rt, c.timeout())
	if err != nil {
		return nil, Wrap(err, fmt.Sprintf("%s: cannot authenticate to Keystone at %s", cfg.Name, creds.Auth.IdentityEndpoint))
	}
	sc, err := openstack.NewNetworkV2(p, creds.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("%s: no Neutron endpoint in the service catalog (region %q): %w", cfg.Name, creds.Endpoint.Region, err)
	}
	c.clients[cfg.Key] = cached{key: creds.fingerprint, network: sc}
	return sc, nil
}

// gate returns the Gate of ProviderConfig pc, made at its first use; c.mu
// is held.
func (c *Clients) gate(pc string) *Gate {
	g, ok := c.gates[pc]
	if !ok {
		g = NewGate(pc, cmp.Or(c.RequestRate, DefaultRequestRate), cmp.Or(c.MaxBackoff, DefaultMaxBackoff), c.Metrics)
		c.gates[pc] = g
	}
	return g
}

func (c *Clients) timeout() time.Duration {
	if c.RequestTimeout > 0 {
		return c.RequestTimeout
	}
	return DefaultRequestTimeout
}

// Settling is how long after a create request Neutron may still complete
// it: a client that gives up (time-out) or dies does not stop Neutron
// processing the POST, and an answer lost on the way back comes after
// Neutron completed it. It is the request timeout and half of it again as
// a margin for Neutron's own processing after the client left; the
// lookups of interrupted creates conclude "absent" only after it
// (Settling.Check). now is the clock, time.Now when nil.
func (c *Clients) Settling(now func() time.Time) Settling {
	t := c.timeout()
	return Settling{Within: t + t/2, Now: now}
}

// authenticate logs in to Keystone with c over rt, each request bounded by
// timeout, allowing gophercloud to re-authenticate when the token expires.
func authenticate(ctx context.Context, c *Credentials, rt http.RoundTripper, timeout time.Duration) (*gophercloud.ProviderClient, error) {
	p, err := openstack.NewClient(c.Auth.IdentityEndpoint)
	if err != nil {
		return nil, err
	}
	p.HTTPClient = http.Client{Transport: rt, Timeout: timeout}
	opts := c.Auth
	opts.AllowReauth = true
	if err := openstack.Authenticate(ctx, p, opts); err != nil {
		return nil, err
	}
	return p, nil
}
