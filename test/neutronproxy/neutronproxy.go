// Package neutronproxy stands between a provider and a real Neutron, for
// the integration and end-to-end tests and the scale benchmark: a Tap
// records every Neutron request (when, the managed resource kind whose
// reconcile sent it, whether a storm answered it) and, during a storm,
// answers each request itself: with 429 Too Many Requests and
// Retry-After, as a rate-limiting proxy in front of Neutron would, with
// 503 Service Unavailable, as a load balancer without a live Neutron
// behind it would, or not at all, sending it to a loopback port nothing
// listens on (the kernel refuses the connection, as for a Neutron whose
// API server is down). A Tap wraps the
// transport of a provider in the test's own process; a Proxy serves it on
// loopback for a provider process, registered in Keystone as the network
// endpoint of a region of its own (Register).
package neutronproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/endpoints"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/regions"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/services"

	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// A Tap records the Neutron requests that pass it and storms on demand.
// Requests whose path is not Neutron's API (/v2.0/...), such as
// Keystone's through the same transport, pass unrecorded. The zero value
// is ready; it is safe for concurrent use.
type Tap struct {
	mu       sync.Mutex
	requests []Request
	storm    Storm
	// refused is the port of a Refused storm while it lasts.
	refused *bound
}

// A Storm is how a Tap answers every Neutron request itself while it
// lasts; the zero Storm is none.
type Storm struct {
	// Code is the answers' HTTP status, such as 429 or 503.
	Code int
	// RetryAfter is the answers' Retry-After header, in seconds; 0: none.
	RetryAfter int
	// Refused sends each request to a loopback port nothing listens on
	// instead: its connection is refused (through a Proxy, the provider
	// gets the proxy's 502 Bad Gateway, as from a load balancer). Code and
	// RetryAfter are then ignored.
	Refused bool
}

// A Request is one recorded Neutron request.
type Request struct {
	// At is when it reached the tap.
	At time.Time
	// Method is its HTTP method.
	Method string
	// Kind is the managed resource kind whose reconcile sent it (KindOf).
	Kind string
	// Stormed says that the storm answered it: it never reached Neutron.
	Stormed bool
}

// Wrap returns rt with the tap in front of it.
func (t *Tap) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if !strings.HasPrefix(r.URL.Path, "/v2.0/") {
			return rt.RoundTrip(r)
		}
		t.mu.Lock()
		storm := t.storm
		var refused string
		if t.refused != nil {
			refused = t.refused.addr
		}
		t.requests = append(t.requests, Request{At: time.Now(), Method: r.Method, Kind: KindOf(r.URL.Path, r.URL.RawQuery), Stormed: storm != Storm{}})
		t.mu.Unlock()
		switch {
		case storm == Storm{}:
			return rt.RoundTrip(r)
		case storm.Refused:
			// The transport's own dial meets the kernel's refusal.
			r = r.Clone(r.Context())
			r.URL.Host, r.Host = refused, refused
			return rt.RoundTrip(r)
		}
		if r.Body != nil {
			_ = r.Body.Close()
		}
		h := http.Header{"Content-Type": {"text/plain"}}
		if storm.RetryAfter > 0 {
			h.Set("Retry-After", strconv.Itoa(storm.RetryAfter))
		}
		status := http.StatusText(storm.Code)
		return &http.Response{StatusCode: storm.Code, Status: strconv.Itoa(storm.Code) + " " + status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: h, Body: io.NopCloser(strings.NewReader(status)), Request: r}, nil
	})
}

// Since returns the requests that reached the tap from t on, oldest first.
func (t *Tap) Since(from time.Time) []Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	i, _ := slices.BinarySearchFunc(t.requests, from, func(r Request, t time.Time) int { return r.At.Compare(t) })
	return slices.Clone(t.requests[i:])
}

// Between returns the requests that reached the tap from from on and
// before to.
func (t *Tap) Between(from, to time.Time) []Request {
	return slices.DeleteFunc(t.Since(from), func(r Request) bool { return !r.At.Before(to) })
}

// SetStorm makes the tap answer every Neutron request as s says, or, with
// the zero Storm, ends the storm. For a Refused storm it holds a loopback
// port bound without listening, which no one else can take and whose
// connections the kernel refuses, until the storm ends.
func (t *Tap) SetStorm(s Storm) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s.Refused && t.refused == nil {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("cannot open a socket for the refused connections: %w", err)
		}
		var sa syscall.Sockaddr
		if err = syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err == nil {
			sa, err = syscall.Getsockname(fd)
		}
		if err != nil {
			_ = syscall.Close(fd)
			return fmt.Errorf("cannot bind a loopback port for the refused connections: %w", err)
		}
		t.refused = &bound{fd: fd, addr: "127.0.0.1:" + strconv.Itoa(sa.(*syscall.SockaddrInet4).Port)}
	}
	if !s.Refused && t.refused != nil {
		if err := syscall.Close(t.refused.fd); err != nil {
			return fmt.Errorf("cannot close the socket of the refused connections: %w", err)
		}
		t.refused = nil
	}
	t.storm = s
	return nil
}

// bound is a socket bound to loopback address addr without listening.
type bound struct {
	fd   int
	addr string
}

// KindOf is the managed resource kind whose Observe, Create, Update or
// Delete sends a request to path?query: the Port reads its subnets by ID,
// the Network lists its own; anything else is path?query itself.
func KindOf(path, query string) string {
	switch {
	case strings.Contains(path, "/security-group"):
		return "SecurityGroup"
	case strings.Contains(path, "/floatingips"):
		return "FloatingIPBinding"
	case strings.Contains(path, "/routers"):
		return "RouterRoutes"
	case strings.Contains(path, "/ports"), strings.Contains(path, "/subnets/"):
		return "Port"
	case strings.Contains(path, "/networks"), strings.Contains(path, "/subnets"):
		return "Network"
	}
	return path + "?" + query
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A Proxy forwards HTTP from 127.0.0.1 to Neutron through its Tap.
type Proxy struct {
	// URL is the proxy's, http://127.0.0.1:<port>.
	URL string
	// Tap records and storms what passes.
	Tap *Tap
	srv *http.Server
}

// Start serves a Proxy to the Neutron at neutronURL on a free port of
// 127.0.0.1 until Close. Neutron's version document, which names
// Neutron's own URL, names the proxy's instead, so that a client keeps
// coming back through it. intercept, when not nil, wraps the proxy's
// handler (next, the forwarding through the tap): a test's way to act on
// chosen requests, such as cutting a create's answer.
func Start(neutronURL string, intercept func(next http.Handler) http.Handler) (*Proxy, error) {
	target, err := url.Parse(neutronURL)
	if err != nil {
		return nil, err
	}
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{URL: "http://" + l.Addr().String(), Tap: &Tap{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = p.Tap.Wrap(http.DefaultTransport)
	// A request whose client gave up (its time-out, a killed provider)
	// is no finding of the proxy's: the client reports its own error.
	rp.ErrorLog = log.New(io.Discard, "", 0)
	rp.ModifyResponse = func(r *http.Response) error {
		if r.Request.Method != http.MethodGet || r.Request.URL.Path != "/" {
			return nil
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		b = bytes.ReplaceAll(b, []byte(strings.TrimSuffix(neutronURL, "/")), []byte(p.URL))
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		r.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	var h http.Handler = rp
	if intercept != nil {
		h = intercept(rp)
	}
	p.srv = &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

// Close stops the proxy and closes its connections.
func (p *Proxy) Close() error { return p.srv.Close() }

// Admin is a client logged in to Keystone as the cloud named cloud of
// cloudsYAML (a clouds.yaml document): the lab's admin, for what the
// provider's tenant may not do (regions, endpoints, quotas).
func Admin(ctx context.Context, cloudsYAML []byte, cloud string) (*gophercloud.ProviderClient, error) {
	creds, err := openstack.ParseCloudsYAML(cloudsYAML, openstack.CloudOptions{Cloud: cloud})
	if err != nil {
		return nil, err
	}
	pc, err := gopenstack.AuthenticatedClient(ctx, creds.Auth)
	if err != nil {
		return nil, fmt.Errorf("cannot log in to Keystone as %s: %w", cloud, err)
	}
	return pc, nil
}

// Register adds region to Keystone with a public network endpoint at u,
// as the cloud named admin of cloudsYAML (a clouds.yaml document; the
// cloud must be allowed to manage regions and endpoints), and returns the
// function that removes both again (with a context of its own: a
// cleanup's). A ProviderConfig whose credentials
// name the region then reaches Neutron at u; the region's name should say
// what it is for.
func Register(ctx context.Context, cloudsYAML []byte, admin, region, u string) (remove func(context.Context) error, err error) {
	pc, err := Admin(ctx, cloudsYAML, admin)
	if err != nil {
		return nil, err
	}
	identity, err := gopenstack.NewIdentityV3(pc, gophercloud.EndpointOpts{})
	if err != nil {
		return nil, err
	}
	if _, err := regions.Create(ctx, identity, regions.CreateOpts{ID: region}).Extract(); err != nil {
		return nil, fmt.Errorf("cannot create region %s: %w", region, err)
	}
	removeRegion := func(ctx context.Context) error { return regions.Delete(ctx, identity, region).ExtractErr() }
	pages, err := services.List(identity, services.ListOpts{ServiceType: "network"}).AllPages(ctx)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("cannot list the network services: %w", err), removeRegion(ctx))
	}
	svcs, err := services.ExtractServices(pages)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("cannot read the network services: %w", err), removeRegion(ctx))
	}
	if len(svcs) != 1 {
		return nil, errors.Join(fmt.Errorf("cannot choose a network service: Keystone has %d, want 1", len(svcs)), removeRegion(ctx))
	}
	ep, err := endpoints.Create(ctx, identity, endpoints.CreateOpts{Availability: gophercloud.AvailabilityPublic, Name: "neutron-proxy-" + region,
		Region: region, URL: u, ServiceID: svcs[0].ID}).Extract()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("cannot create the network endpoint of region %s: %w", region, err), removeRegion(ctx))
	}
	return func(ctx context.Context) error {
		return errors.Join(endpoints.Delete(ctx, identity, ep.ID).ExtractErr(), removeRegion(ctx))
	}, nil
}
