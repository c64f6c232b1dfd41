package openstack

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Values of the reason label of provider_ipsec_openstack_requests_held_total.
const (
	// reasonRetryAfter: the service asked to wait (Retry-After).
	reasonRetryAfter = "retry-after"
	// reasonRateLimit: the ProviderConfig's token bucket had no slot soon
	// enough.
	reasonRateLimit = "rate-limit"
	// reasonBackoff: the service is failing and the Gate backs off.
	reasonBackoff = "backoff"
)

var descHold = prometheus.NewDesc("provider_ipsec_openstack_retry_after_seconds",
	"Seconds until the Retry-After hold of the ProviderConfig's requests to the service ends; 0 when none is in force.",
	[]string{"providerconfig", "service"}, nil)

var descBackoff = prometheus.NewDesc("provider_ipsec_openstack_backoff_seconds",
	"Seconds until the next probe of a failing service by the ProviderConfig's requests; 0 when the service answers or a probe is out.",
	[]string{"providerconfig", "service"}, nil)

// Metrics is the prometheus.Collector of the OpenStack requests of every
// ProviderConfig's Gate:
//
//	provider_ipsec_openstack_requests_total{providerconfig,service}            requests sent
//	provider_ipsec_openstack_requests_held_total{providerconfig,service,reason} requests not sent: reason "retry-after" (the service asked to wait), "backoff" (the service is failing) or "rate-limit" (the token bucket had no slot soon enough)
//	provider_ipsec_openstack_requests_throttled_total{providerconfig,service}  requests sent after waiting for a slot of the token bucket
//	provider_ipsec_openstack_retry_after_seconds{providerconfig,service}       seconds until the current Retry-After hold ends, 0 when none
//	provider_ipsec_openstack_backoff_seconds{providerconfig,service}           seconds until the next probe of a failing service, 0 when none
//
// service is "Neutron" or "Keystone". A nil *Metrics counts nothing.
type Metrics struct {
	requestsVec, heldVec, throttledVec *prometheus.CounterVec

	mu    sync.Mutex
	gates []*Gate
}

// NewMetrics returns the collector, to register with a
// prometheus.Registerer (the provider: controller-runtime's
// metrics.Registry) and to set as Clients.Metrics.
func NewMetrics() *Metrics {
	labels := []string{"providerconfig", "service"}
	return &Metrics{
		requestsVec: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "provider_ipsec_openstack_requests_total",
			Help: "OpenStack API requests sent, by ProviderConfig and service."}, labels),
		heldVec: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "provider_ipsec_openstack_requests_held_total",
			Help: "OpenStack API requests not sent: reason retry-after (the service asked to wait), backoff (the service is failing) or rate-limit (the ProviderConfig's token bucket had no slot soon enough)."},
			[]string{"providerconfig", "service", "reason"}),
		throttledVec: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "provider_ipsec_openstack_requests_throttled_total",
			Help: "OpenStack API requests sent after waiting for a slot of the ProviderConfig's token bucket."}, labels),
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.requestsVec.Describe(ch)
	m.heldVec.Describe(ch)
	m.throttledVec.Describe(ch)
	ch <- descHold
	ch <- descBackoff
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.requestsVec.Collect(ch)
	m.heldVec.Collect(ch)
	m.throttledVec.Collect(ch)
	m.mu.Lock()
	gates := append([]*Gate(nil), m.gates...)
	m.mu.Unlock()
	for _, g := range gates {
		holds := g.Holds()
		now := g.now()
		for _, svc := range []string{ServiceNeutron, ServiceKeystone} {
			retryAfter, backoff := 0.0, 0.0
			if h, ok := holds[svc]; ok && h.RetryAfter != "" {
				retryAfter = h.Until.Sub(now).Seconds()
			} else if ok {
				backoff = max(h.Until.Sub(now).Seconds(), 0)
			}
			ch <- prometheus.MustNewConstMetric(descHold, prometheus.GaugeValue, retryAfter, g.pc, svc)
			ch <- prometheus.MustNewConstMetric(descBackoff, prometheus.GaugeValue, backoff, g.pc, svc)
		}
	}
}

func (m *Metrics) track(g *Gate) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gates = append(m.gates, g)
}

func (m *Metrics) sent(pc, svc string) {
	if m != nil {
		m.requestsVec.WithLabelValues(pc, svc).Inc()
	}
}

func (m *Metrics) held(pc, svc, reason string) {
	if m != nil {
		m.heldVec.WithLabelValues(pc, svc, reason).Inc()
	}
}

func (m *Metrics) throttled(pc, svc string) {
	if m != nil {
		m.throttledVec.WithLabelValues(pc, svc).Inc()
	}
}
