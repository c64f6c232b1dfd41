// Package metrics exports the gateway agent's tunnel state as Prometheus
// metrics.
//
// Metrics (tunnel is the swanctl connection name, child the child name):
//
//	ipsec_tunnel_up{tunnel}                                1 when the tunnel is up (IKE SA ESTABLISHED, every CHILD_SA INSTALLED), else 0
//	ipsec_ike_sa_established_seconds{tunnel}               seconds since the IKE SA was established (only while it is)
//	ipsec_child_sa_bytes_total{tunnel,child,direction}     ESP payload bytes of the CHILD_SA, direction "in" or "out"
//	ipsec_child_sa_packets_total{tunnel,child,direction}   ESP packets of the CHILD_SA
//	ipsec_config_reloads_total{result}                     configuration loads into charon, result "success" or "failure"
//	ipsec_tunnel_reinitiations_total{tunnel}               times the agent initiated the tunnel again (TunnelStatus.Reinitiations)
//	ipsec_gateway_leader                                   1 while this pod is the active one of an active/standby pair (or the only pod), else 0
//	ipsec_gateway_failovers_total{cause}                   times this pod became active after another: cause "released" (handed over) or "expired" (the other stopped renewing the Lease)
//
// The CHILD_SA counters are charon's: they count since the CHILD_SA was
// installed and so restart from 0 when it is rekeyed, which Prometheus'
// rate() treats as a counter reset.
package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// labelTunnel is the label that names the tunnel, on every tunnel metric.
const labelTunnel = "tunnel"

// Values of the result label of ipsec_config_reloads_total.
const (
	ResultSuccess = "success"
	ResultFailure = "failure"
)

var (
	descUp = prometheus.NewDesc("ipsec_tunnel_up",
		"Whether the tunnel is up (1: IKE SA established, every CHILD_SA installed) or not (0).", []string{labelTunnel}, nil)
	descEstablished = prometheus.NewDesc("ipsec_ike_sa_established_seconds",
		"Seconds since the tunnel's IKE SA was established.", []string{labelTunnel}, nil)
	descBytes = prometheus.NewDesc("ipsec_child_sa_bytes_total",
		"ESP payload bytes of the CHILD_SA since it was installed.", []string{labelTunnel, "child", "direction"}, nil)
	descPackets = prometheus.NewDesc("ipsec_child_sa_packets_total",
		"ESP packets of the CHILD_SA since it was installed.", []string{labelTunnel, "child", "direction"}, nil)
	descReinitiations = prometheus.NewDesc("ipsec_tunnel_reinitiations_total",
		"Times the gateway agent initiated the tunnel again after it stayed down with charon not trying or its peer stopped answering.", []string{labelTunnel}, nil)
)

// A Collector is a prometheus.Collector of the last tunnel status it was
// given (Update) and of the configuration reloads it was told of.
type Collector struct {
	// Now defaults to time.Now; it dates ipsec_ike_sa_established_seconds.
	Now func() time.Time

	mu        sync.Mutex
	tunnels   []v1alpha1.TunnelStatus
	reloads   *prometheus.CounterVec
	leader    prometheus.Gauge
	failovers *prometheus.CounterVec
}

// Causes of a failover, the cause label of ipsec_gateway_failovers_total.
const (
	CauseReleased = "released"
	CauseExpired  = "expired"
)

// New returns a Collector with no tunnels. Register it with a
// prometheus.Registerer.
func New() *Collector {
	c := &Collector{reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ipsec_config_reloads_total",
		Help: "Configuration loads into charon, by result.",
	}, []string{"result"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ipsec_gateway_leader",
			Help: "Whether this gateway pod is the active one (1), holding the gateway's address and tunnels, or a standby (0).",
		}),
		failovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ipsec_gateway_failovers_total",
			Help: "Times this gateway pod became active after another pod held the gateway's Lease, by cause.",
		}, []string{"cause"}),
	}
	c.failovers.WithLabelValues(CauseReleased)
	c.failovers.WithLabelValues(CauseExpired)
	// Both results are exported from the start, so that a failure rate
	// can be computed before the first failure.
	c.reloads.WithLabelValues(ResultSuccess)
	c.reloads.WithLabelValues(ResultFailure)
	return c
}

// Update replaces the tunnels the metrics describe. Tunnels no longer in
// the list disappear from the metrics.
func (c *Collector) Update(tunnels []v1alpha1.TunnelStatus) {
	cp := make([]v1alpha1.TunnelStatus, len(tunnels))
	for i := range tunnels {
		tunnels[i].DeepCopyInto(&cp[i])
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tunnels = cp
}

// Reloaded counts a configuration load into charon.
func (c *Collector) Reloaded(ok bool) {
	r := ResultFailure
	if ok {
		r = ResultSuccess
	}
	c.reloads.WithLabelValues(r).Inc()
}

// Leader sets ipsec_gateway_leader: whether this pod is active.
func (c *Collector) Leader(active bool) {
	v := 0.0
	if active {
		v = 1
	}
	c.leader.Set(v)
}

// FailedOver counts a takeover from another pod, with cause CauseReleased
// or CauseExpired.
func (c *Collector) FailedOver(cause string) {
	c.failovers.WithLabelValues(cause).Inc()
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descUp
	ch <- descEstablished
	ch <- descBytes
	ch <- descPackets
	ch <- descReinitiations
	c.reloads.Describe(ch)
	c.leader.Describe(ch)
	c.failovers.Describe(ch)
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	c.mu.Lock()
	tunnels := c.tunnels
	c.mu.Unlock()
	for _, t := range tunnels {
		up := 0.0
		if t.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, up, t.Name)
		ch <- prometheus.MustNewConstMetric(descReinitiations, prometheus.CounterValue, float64(t.Reinitiations), t.Name)
		if t.IKEState == v1alpha1.IKEStateEstablished && t.EstablishedAt != nil {
			ch <- prometheus.MustNewConstMetric(descEstablished, prometheus.GaugeValue,
				now().Sub(t.EstablishedAt.Time).Seconds(), t.Name)
		}
		for _, s := range t.ChildSAs {
			ch <- prometheus.MustNewConstMetric(descBytes, prometheus.CounterValue, float64(s.BytesIn), t.Name, s.Name, "in")
			ch <- prometheus.MustNewConstMetric(descBytes, prometheus.CounterValue, float64(s.BytesOut), t.Name, s.Name, "out")
			ch <- prometheus.MustNewConstMetric(descPackets, prometheus.CounterValue, float64(s.PacketsIn), t.Name, s.Name, "in")
			ch <- prometheus.MustNewConstMetric(descPackets, prometheus.CounterValue, float64(s.PacketsOut), t.Name, s.Name, "out")
		}
	}
	c.reloads.Collect(ch)
	c.leader.Collect(ch)
	c.failovers.Collect(ch)
}
