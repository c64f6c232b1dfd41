package openstack

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"golang.org/x/time/rate"

	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack/neutrontest"
)

// t0 is the fake clock's start in the gate's tests.
var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// A gateStep is one request of a gate test: after the fake clock moved
// on by After, GET /ports, which the fake Neutron answers with Reply if
// the request reaches it.
type gateStep struct {
	After time.Duration
	Reply neutrontest.Reply
	// Sent says whether the request reached the fake Neutron; Err is the
	// error's text, "" for none.
	Sent bool
	Err  string
}

// gateRun sends steps through g to a fake Neutron and returns what
// happened at each step, in the shape of the steps (After and Reply
// copied). keystone makes the fake the identity endpoint.
func gateRun(t *testing.T, g *Gate, now *time.Time, keystone bool, steps []gateStep) []gateStep {
	t.Helper()
	replies := map[string]neutrontest.Reply{}
	sc, seen := neutrontest.Serve(t, replies)
	identity := "http://keystone.invalid:5000/v3"
	if keystone {
		identity = sc.Endpoint
	}
	sc.HTTPClient = http.Client{Transport: g.Transport(http.DefaultTransport, identity)}
	var got []gateStep
	for _, s := range steps {
		*now = now.Add(s.After)
		replies["GET /ports"] = s.Reply
		before := len(*seen)
		resp, err := sc.Get(context.Background(), sc.ServiceURL("ports"), nil, nil)
		if resp != nil {
			_ = resp.Body.Close()
		}
		got = append(got, gateStep{After: s.After, Reply: s.Reply, Sent: len(*seen) > before, Err: neutrontest.Message(Wrap(err, "cannot list ports"))})
	}
	return got
}

func TestGateRetryAfter(t *testing.T) {
	ok := neutrontest.Reply{Code: 200, Body: `{"ports": []}`}
	overLimit := neutrontest.Error("OverLimit", "Too many requests")
	cases := map[string]struct {
		reason   string
		keystone bool
		steps    []gateStep
		// held is the number of requests the metric counts as held
		// back for the Retry-After.
		held float64
	}{
		"Seconds": {
			reason: "A 429 with Retry-After: 30 holds every request of the ProviderConfig for 30 s without sending it, each error saying until when and naming Neutron's answer; at the end requests go out again.",
			steps: []gateStep{
				{Reply: neutrontest.Reply{Code: 429, Body: overLimit, Header: map[string]string{"Retry-After": "30"}}, Sent: true,
					Err: "cannot list ports: Neutron answered 429 Too Many Requests (OverLimit: Too many requests) with Retry-After: 30: the requests of ProviderConfig pc to Neutron wait until 12:00:30 UTC"},
				{After: time.Second, Reply: ok,
					Err: "cannot list ports: not sent: Neutron answered 429 Too Many Requests (OverLimit: Too many requests) with Retry-After: 30 at 12:00:00 UTC: the requests of ProviderConfig pc to Neutron wait until 12:00:30 UTC"},
				{After: 28 * time.Second, Reply: ok,
					Err: "cannot list ports: not sent: Neutron answered 429 Too Many Requests (OverLimit: Too many requests) with Retry-After: 30 at 12:00:00 UTC: the requests of ProviderConfig pc to Neutron wait until 12:00:30 UTC"},
				{After: time.Second, Reply: ok, Sent: true},
			},
			held: 2,
		},
		"Date": {
			reason: "A 503 whose Retry-After is an HTTP date holds until that date.",
			steps: []gateStep{
				{Reply: neutrontest.Reply{Code: 503, Body: `upstream down`, Header: map[string]string{"Retry-After": "Tue, 01 Dec 2026 12:01:00 GMT"}}, Sent: true,
					Err: "cannot list ports: Neutron answered 503 Service Unavailable with Retry-After: Tue, 01 Dec 2026 12:01:00 GMT: the requests of ProviderConfig pc to Neutron wait until 12:01:00 UTC"},
				{After: 59 * time.Second, Reply: ok,
					Err: "cannot list ports: not sent: Neutron answered 503 Service Unavailable with Retry-After: Tue, 01 Dec 2026 12:01:00 GMT at 12:00:00 UTC: the requests of ProviderConfig pc to Neutron wait until 12:01:00 UTC"},
				{After: time.Second, Reply: ok, Sent: true},
			},
			held: 1,
		},
		"NoRetryAfter": {
			reason: "A 503 without Retry-After is an ordinary error: the next request is sent (the reconciler backs off).",
			steps: []gateStep{
				{Reply: neutrontest.Reply{Code: 503, Body: `{}`}, Sent: true, Err: "cannot list ports: OpenStack API returned 503: Service Unavailable"},
				{Reply: ok, Sent: true},
			},
		},
		"Malformed": {
			reason: "A Retry-After that is neither seconds nor a date, or that is already past, holds nothing.",
			steps: []gateStep{
				{Reply: neutrontest.Reply{Code: 429, Body: `{}`, Header: map[string]string{"Retry-After": "soon"}}, Sent: true, Err: "cannot list ports: OpenStack API returned 429: Too Many Requests"},
				{Reply: neutrontest.Reply{Code: 429, Body: `{}`, Header: map[string]string{"Retry-After": "0"}}, Sent: true, Err: "cannot list ports: OpenStack API returned 429: Too Many Requests"},
				{Reply: ok, Sent: true},
			},
		},
		"Capped": {
			reason: "A Retry-After of a day holds for MaxRetryAfter (15 min), then the next request asks again.",
			steps: []gateStep{
				{Reply: neutrontest.Reply{Code: 429, Body: `{}`, Header: map[string]string{"Retry-After": "86400"}}, Sent: true,
					Err: "cannot list ports: Neutron answered 429 Too Many Requests with Retry-After: 86400: the requests of ProviderConfig pc to Neutron wait until 12:15:00 UTC"},
				{After: 15 * time.Minute, Reply: ok, Sent: true},
			},
		},
		"Keystone": {
			reason:   "Keystone's answer holds the requests to Keystone and says so.",
			keystone: true,
			steps: []gateStep{
				{Reply: neutrontest.Reply{Code: 429, Body: `{"error": {"code": 429, "title": "Too Many Requests", "message": "slow down"}}`, Header: map[string]string{"Retry-After": "5"}}, Sent: true,
					Err: "cannot list ports: Keystone answered 429 Too Many Requests (Too Many Requests: slow down) with Retry-After: 5: the requests of ProviderConfig pc to Keystone wait until 12:00:05 UTC"},
				{After: 4 * time.Second, Reply: ok,
					Err: "cannot list ports: not sent: Keystone answered 429 Too Many Requests (Too Many Requests: slow down) with Retry-After: 5 at 12:00:00 UTC: the requests of ProviderConfig pc to Keystone wait until 12:00:05 UTC"},
			},
			held: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			now := t0
			m := NewMetrics()
			g := NewGate("pc", 1000, m)
			g.now = func() time.Time { return now }
			got := gateRun(t, g, &now, tc.keystone, tc.steps)
			if diff := cmp.Diff(tc.steps, got); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
			svc := ServiceNeutron
			if tc.keystone {
				svc = ServiceKeystone
			}
			if diff := cmp.Diff(tc.held, testutil.ToFloat64(m.heldVec.WithLabelValues("pc", svc, reasonRetryAfter))); diff != "" {
				t.Errorf("%s\nrequests_held_total{reason=retry-after}: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestGateBucket(t *testing.T) {
	ok := neutrontest.Reply{Code: 200, Body: `{"ports": []}`}
	cases := map[string]struct {
		reason string
		// limiter and pace replace the gate's bucket and longest wait.
		limiter *rate.Limiter
		pace    time.Duration
		steps   []gateStep
		// throttled and held are the metrics' counts: sent after a wait,
		// and not sent.
		throttled, held float64
	}{
		"Burst": {
			reason:  "Requests within the burst go out at once.",
			limiter: rate.NewLimiter(1, 2),
			pace:    time.Second,
			steps:   []gateStep{{Reply: ok, Sent: true}, {Reply: ok, Sent: true}},
		},
		"Paced": {
			reason:  "A request past the burst waits for its slot (100 ms at 10 a second), then is sent.",
			limiter: rate.NewLimiter(10, 1),
			pace:    time.Second,
			steps:   []gateStep{{Reply: ok, Sent: true}, {Reply: ok, Sent: true}},
			// The fake clock stands still, so the bucket's next slot is
			// 100 ms after t0 and the wait is real.
			throttled: 1,
		},
		"TooLong": {
			reason:  "A request whose slot is further away than the longest wait is not sent, and the error says when the next slot is free; once it is, requests go out.",
			limiter: rate.NewLimiter(1, 1),
			pace:    100 * time.Millisecond,
			steps: []gateStep{
				{Reply: ok, Sent: true},
				{Reply: ok, Err: "cannot list ports: not sent: the OpenStack requests of ProviderConfig pc are capped at 1 a second (--openstack-request-rate) and the next slot is free at 12:00:01.000 UTC"},
				{After: time.Second, Reply: ok, Sent: true},
			},
			held: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			now := t0
			m := NewMetrics()
			g := NewGate("pc", float64(tc.limiter.Limit()), m)
			g.limiter, g.maxPace = tc.limiter, tc.pace
			g.now = func() time.Time { return now }
			got := gateRun(t, g, &now, false, tc.steps)
			if diff := cmp.Diff(tc.steps, got); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
			counts := []float64{testutil.ToFloat64(m.throttledVec.WithLabelValues("pc", ServiceNeutron)), testutil.ToFloat64(m.heldVec.WithLabelValues("pc", ServiceNeutron, reasonRateLimit))}
			if diff := cmp.Diff([]float64{tc.throttled, tc.held}, counts); diff != "" {
				t.Errorf("%s\n[throttled, held] requests: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestGateHoldMetric: the gauge of the current hold counts down to 0.
func TestGateHoldMetric(t *testing.T) {
	now := t0
	m := NewMetrics()
	g := NewGate("pc", 1000, m)
	g.now = func() time.Time { return now }
	gateRun(t, g, &now, false, []gateStep{{Reply: neutrontest.Reply{Code: 429, Body: `{}`, Header: map[string]string{"Retry-After": "30"}}}})
	want := []float64{30, 20, 0}
	var got []float64
	for _, d := range []time.Duration{0, 10 * time.Second, 20 * time.Second} {
		now = now.Add(d)
		c := make(chan prometheus.Metric, 16)
		m.Collect(c)
		close(c)
		for metric := range c {
			if metric.Desc() != descHold {
				continue
			}
			var pb dto.Metric
			if err := metric.Write(&pb); err != nil {
				t.Fatal(err)
			}
			if pb.GetLabel()[1].GetValue() == ServiceNeutron {
				got = append(got, pb.GetGauge().GetValue())
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("provider_ipsec_openstack_retry_after_seconds{service=Neutron} at 0, 10 and 30 s: -want, +got:\n%s", diff)
	}
	// The provider registers the collector with controller-runtime's
	// registry: what it collects must match what it describes.
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(m); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Gather(); err != nil {
		t.Errorf("a pedantic registry refuses the metrics: %v", err)
	}
}
