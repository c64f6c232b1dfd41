package openstack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
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
		// The fake's port changes from run to run.
		msg := strings.ReplaceAll(neutrontest.Message(Wrap(err, "cannot list ports")), sc.Endpoint, "http://neutron/")
		got = append(got, gateStep{After: s.After, Reply: s.Reply, Sent: len(*seen) > before, Err: msg})
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
			g := NewGate("pc", 1000, DefaultMaxBackoff, m)
			g.now = func() time.Time { return now }
			got := gateRun(t, g, &now, tc.keystone, tc.steps)
			if diff := gocmp.Diff(tc.steps, got); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
			svc := ServiceNeutron
			if tc.keystone {
				svc = ServiceKeystone
			}
			if diff := gocmp.Diff(tc.held, testutil.ToFloat64(m.heldVec.WithLabelValues("pc", svc, reasonRetryAfter))); diff != "" {
				t.Errorf("%s\nrequests_held_total{reason=retry-after}: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestGateBackoff(t *testing.T) {
	ok := neutrontest.Reply{Code: 200, Body: `{"ports": []}`}
	down := neutrontest.Reply{Code: 503, Body: `<html>no server is available</html>`}
	internal := neutrontest.Reply{Code: 500, Body: neutrontest.Error("HTTPInternalServerError", "Request Failed: internal server error while processing your request.")}
	// backoff is the text of a backoff's error; answered by the request
	// that failed at last (12:00:ss), or not sent.
	backoff := func(answered bool, svc, what, last string, failures int, until string) string {
		e := fmt.Sprintf("cannot list ports: %s answered %s", svc, what)
		if !answered {
			e = fmt.Sprintf("cannot list ports: not sent: %s answered %s at 12:00:%s UTC", svc, what, last)
		}
		return e + fmt.Sprintf(", %d failures in a row since 12:00:00 UTC: backing off: the requests of ProviderConfig pc to %s wait until %s UTC, then one probes it", failures, svc, until)
	}
	plain503 := "cannot list ports: OpenStack API returned 503: Service Unavailable"
	cases := map[string]struct {
		reason     string
		keystone   bool
		maxBackoff time.Duration
		steps      []gateStep
		// held is the number of requests the metric counts as held
		// back for the backoff.
		held float64
	}{
		"Opens": {
			reason: "The third 503 without Retry-After in a row backs off for 2 s: no request is sent until then, each error naming Neutron's answer and until when; then one probes, its failure doubles the backoff, its answer ends it and requests go out again.",
			steps: []gateStep{
				{Reply: down, Sent: true, Err: plain503},
				{After: time.Second, Reply: down, Sent: true, Err: plain503},
				{After: time.Second, Reply: down, Sent: true, Err: backoff(true, "Neutron", "503 Service Unavailable", "", 3, "12:00:04")},
				{After: time.Second, Reply: ok, Err: backoff(false, "Neutron", "503 Service Unavailable", "02", 3, "12:00:04")},
				{After: time.Second, Reply: down, Sent: true, Err: backoff(true, "Neutron", "503 Service Unavailable", "", 4, "12:00:08")},
				{After: 3 * time.Second, Reply: ok, Err: backoff(false, "Neutron", "503 Service Unavailable", "04", 4, "12:00:08")},
				{After: time.Second, Reply: ok, Sent: true},
				{Reply: ok, Sent: true},
				{Reply: down, Sent: true, Err: plain503},
			},
			held: 2,
		},
		"Capped": {
			reason:     "Each failed probe doubles the backoff up to the Gate's maximum, then keeps it: a failing Neutron gets one request per maximum.",
			maxBackoff: 5 * time.Second,
			steps: []gateStep{
				{Reply: internal, Sent: true, Err: "cannot list ports: Neutron 500 HTTPInternalServerError: Request Failed: internal server error while processing your request."},
				{Reply: internal, Sent: true, Err: "cannot list ports: Neutron 500 HTTPInternalServerError: Request Failed: internal server error while processing your request."},
				{Reply: internal, Sent: true, Err: backoff(true, "Neutron", "500 Internal Server Error (HTTPInternalServerError: Request Failed: internal server error while processing your request.)", "", 3, "12:00:02")},
				{After: 2 * time.Second, Reply: down, Sent: true, Err: backoff(true, "Neutron", "503 Service Unavailable", "", 4, "12:00:06")},
				{After: 4 * time.Second, Reply: down, Sent: true, Err: backoff(true, "Neutron", "503 Service Unavailable", "", 5, "12:00:11")},
				{After: 4 * time.Second, Reply: down, Err: backoff(false, "Neutron", "503 Service Unavailable", "06", 5, "12:00:11")},
				{After: time.Second, Reply: down, Sent: true, Err: backoff(true, "Neutron", "503 Service Unavailable", "", 6, "12:00:16")},
			},
			held: 1,
		},
		"Blip": {
			reason: "Two failures and an answer are a blip: each failing request is retried by its resource's own backoff, nothing is held, and the next failures count from one again.",
			steps: []gateStep{
				{Reply: down, Sent: true, Err: plain503},
				{Reply: down, Sent: true, Err: plain503},
				{Reply: neutrontest.Reply{Code: 404, Body: neutrontest.Error("PortNotFound", "Port p could not be found.")}, Sent: true, Err: "cannot list ports: Neutron 404 PortNotFound: Port p could not be found."},
				{Reply: down, Sent: true, Err: plain503},
				{Reply: down, Sent: true, Err: plain503},
				{Reply: ok, Sent: true},
			},
		},
		"NoAnswer": {
			reason: "Connections closed without an answer fail as 5xx do; the error says that Neutron did not answer.",
			steps: []gateStep{
				{Reply: neutrontest.Reply{Cut: true}, Sent: true, Err: `cannot list ports: Get "http://neutron/ports": EOF`},
				{Reply: neutrontest.Reply{Cut: true}, Sent: true, Err: `cannot list ports: Get "http://neutron/ports": EOF`},
				{Reply: neutrontest.Reply{Cut: true}, Sent: true, Err: `cannot list ports: Neutron did not answer (EOF), 3 failures in a row since 12:00:00 UTC: backing off: the requests of ProviderConfig pc to Neutron wait until 12:00:02 UTC, then one probes it`},
				{After: time.Second, Reply: ok, Err: `cannot list ports: not sent: Neutron did not answer (EOF) at 12:00:00 UTC, 3 failures in a row since 12:00:00 UTC: backing off: the requests of ProviderConfig pc to Neutron wait until 12:00:02 UTC, then one probes it`},
				{After: time.Second, Reply: ok, Sent: true},
			},
			held: 1,
		},
		"NotImplemented": {
			reason: "501 is Neutron's answer to the request, not a failure of Neutron: nothing is held.",
			steps: []gateStep{
				{Reply: neutrontest.Reply{Code: 501, Body: `{}`}, Sent: true, Err: "cannot list ports: OpenStack API returned 501: Not Implemented"},
				{Reply: neutrontest.Reply{Code: 501, Body: `{}`}, Sent: true, Err: "cannot list ports: OpenStack API returned 501: Not Implemented"},
				{Reply: neutrontest.Reply{Code: 501, Body: `{}`}, Sent: true, Err: "cannot list ports: OpenStack API returned 501: Not Implemented"},
				{Reply: ok, Sent: true},
			},
		},
		"TooManyWithoutRetryAfter": {
			reason: "429 without Retry-After asks to slow down without saying how long: the Gate backs off as for a failure.",
			steps: []gateStep{
				{Reply: neutrontest.Reply{Code: 429, Body: `{}`}, Sent: true, Err: "cannot list ports: OpenStack API returned 429: Too Many Requests"},
				{Reply: neutrontest.Reply{Code: 429, Body: `{}`}, Sent: true, Err: "cannot list ports: OpenStack API returned 429: Too Many Requests"},
				{Reply: neutrontest.Reply{Code: 429, Body: `{}`}, Sent: true, Err: backoff(true, "Neutron", "429 Too Many Requests", "", 3, "12:00:02")},
			},
		},
		"RetryAfterDuringBackoff": {
			reason: "A probe answered with Retry-After ends the backoff: Neutron's own time holds, then requests go out.",
			steps: []gateStep{
				{Reply: down, Sent: true, Err: plain503},
				{Reply: down, Sent: true, Err: plain503},
				{Reply: down, Sent: true, Err: backoff(true, "Neutron", "503 Service Unavailable", "", 3, "12:00:02")},
				{After: 2 * time.Second, Reply: neutrontest.Reply{Code: 503, Body: `{}`, Header: map[string]string{"Retry-After": "10"}}, Sent: true,
					Err: "cannot list ports: Neutron answered 503 Service Unavailable with Retry-After: 10: the requests of ProviderConfig pc to Neutron wait until 12:00:12 UTC"},
				{After: 10 * time.Second, Reply: down, Sent: true, Err: plain503},
			},
		},
		"Keystone": {
			reason:   "Keystone's failures back off the requests to Keystone and say so.",
			keystone: true,
			steps: []gateStep{
				{Reply: down, Sent: true, Err: plain503},
				{Reply: down, Sent: true, Err: plain503},
				{Reply: down, Sent: true, Err: backoff(true, "Keystone", "503 Service Unavailable", "", 3, "12:00:02")},
				{After: time.Second, Reply: ok, Err: backoff(false, "Keystone", "503 Service Unavailable", "00", 3, "12:00:02")},
			},
			held: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			now := t0
			m := NewMetrics()
			g := NewGate("pc", 1000, cmp.Or(tc.maxBackoff, DefaultMaxBackoff), m)
			g.now = func() time.Time { return now }
			got := gateRun(t, g, &now, tc.keystone, tc.steps)
			if diff := gocmp.Diff(tc.steps, got); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
			svc := ServiceNeutron
			if tc.keystone {
				svc = ServiceKeystone
			}
			if diff := gocmp.Diff(tc.held, testutil.ToFloat64(m.heldVec.WithLabelValues("pc", svc, reasonBackoff))); diff != "" {
				t.Errorf("%s\nrequests_held_total{reason=backoff}: -want, +got:\n%s", tc.reason, diff)
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
			g := NewGate("pc", float64(tc.limiter.Limit()), DefaultMaxBackoff, m)
			g.limiter, g.maxPace = tc.limiter, tc.pace
			g.now = func() time.Time { return now }
			got := gateRun(t, g, &now, false, tc.steps)
			if diff := gocmp.Diff(tc.steps, got); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
			counts := []float64{testutil.ToFloat64(m.throttledVec.WithLabelValues("pc", ServiceNeutron)), testutil.ToFloat64(m.heldVec.WithLabelValues("pc", ServiceNeutron, reasonRateLimit))}
			if diff := gocmp.Diff([]float64{tc.throttled, tc.held}, counts); diff != "" {
				t.Errorf("%s\n[throttled, held] requests: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestGateHoldMetrics(t *testing.T) {
	down := neutrontest.Reply{Code: 503, Body: `{}`}
	cases := map[string]struct {
		reason string
		steps  []gateStep
		// at are the fake clock's steps after the requests; want the
		// gauges of Neutron then: retry_after_seconds, backoff_seconds.
		at   []time.Duration
		want [][2]float64
	}{
		"RetryAfter": {
			reason: "The gauge of a Retry-After hold counts down to 0; there is no backoff.",
			steps:  []gateStep{{Reply: neutrontest.Reply{Code: 429, Body: `{}`, Header: map[string]string{"Retry-After": "30"}}}},
			at:     []time.Duration{0, 10 * time.Second, 20 * time.Second},
			want:   [][2]float64{{30, 0}, {20, 0}, {0, 0}},
		},
		"Backoff": {
			reason: "The gauge of a backoff counts down to its probe, then stays at 0.",
			steps:  []gateStep{{Reply: down}, {Reply: down}, {Reply: down}},
			at:     []time.Duration{0, time.Second, 2 * time.Second},
			want:   [][2]float64{{0, 2}, {0, 1}, {0, 0}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			now := t0
			m := NewMetrics()
			g := NewGate("pc", 1000, DefaultMaxBackoff, m)
			g.now = func() time.Time { return now }
			gateRun(t, g, &now, false, tc.steps)
			var got [][2]float64
			for _, d := range tc.at {
				now = now.Add(d)
				c := make(chan prometheus.Metric, 16)
				m.Collect(c)
				close(c)
				var gauges [2]float64
				for metric := range c {
					i := slices.Index([]*prometheus.Desc{descHold, descBackoff}, metric.Desc())
					if i < 0 {
						continue
					}
					var pb dto.Metric
					if err := metric.Write(&pb); err != nil {
						t.Fatal(err)
					}
					if pb.GetLabel()[1].GetValue() == ServiceNeutron {
						gauges[i] = pb.GetGauge().GetValue()
					}
				}
				got = append(got, gauges)
			}
			if diff := gocmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n[retry_after_seconds, backoff_seconds]{service=Neutron} at each step: -want, +got:\n%s", tc.reason, diff)
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
		})
	}
}

func TestGateProbe(t *testing.T) {
	// A probeStep is one event at the fake clock's After later: Op
	// "admit" (a request asks to go; Want is "send", "probe", or the
	// error and when it may retry), "fail" (a request failed with 503),
	// "answer" (a request was answered) or "give up" (a probe's caller
	// gave up).
	type probeStep struct {
		After time.Duration
		Op    string
		Probe bool
		Want  string
	}
	open := []probeStep{{Op: "fail"}, {Op: "fail"}, {Op: "fail"}}
	refused := func(since, retry string) string {
		return "not sent: Neutron answered 503 Service Unavailable at 12:00:00 UTC, 3 failures in a row since 12:00:00 UTC: backing off: one request of ProviderConfig pc probes Neutron since 12:00:" +
			since + " UTC, the others wait for its answer; retry at 12:" + retry
	}
	cases := map[string]struct {
		reason string
		steps  []probeStep
	}{
		"ProbeOut": {
			reason: "After the backoff one request probes; while it is out the others are not sent and retry after as long as it has been out (at least 1 s); its answer lets them all go.",
			steps: append(slices.Clone(open),
				probeStep{After: 2 * time.Second, Op: "admit", Want: "probe"},
				probeStep{Op: "admit", Want: refused("02", "00:03")},
				probeStep{After: 5 * time.Second, Op: "admit", Want: refused("02", "00:12")},
				probeStep{Op: "answer"},
				probeStep{Op: "admit", Want: "send"},
			),
		},
		"HungProbe": {
			reason: "A probe that gets no answer for longer than the longest backoff makes the others retry at that bound, not later.",
			steps: append(slices.Clone(open),
				probeStep{After: 2 * time.Second, Op: "admit", Want: "probe"},
				probeStep{After: time.Minute, Op: "admit", Want: refused("02", "01:32")},
				probeStep{Op: "fail", Probe: true},
				probeStep{Op: "admit", Want: "not sent: Neutron answered 503 Service Unavailable at 12:01:02 UTC, 4 failures in a row since 12:00:00 UTC: backing off: the requests of ProviderConfig pc to Neutron wait until 12:01:06 UTC, then one probes it; retry at 12:01:06"},
			),
		},
		"GaveUp": {
			reason: "A probe whose caller gave up says nothing of Neutron: the next request probes.",
			steps: append(slices.Clone(open),
				probeStep{After: 2 * time.Second, Op: "admit", Want: "probe"},
				probeStep{Op: "give up", Probe: true},
				probeStep{Op: "admit", Want: "probe"},
			),
		},
		"AnsweredMeanwhile": {
			reason: "A request sent before the backoff and answered after it ends the backoff; a later failure of the probe then counts as the first of a new run.",
			steps: append(slices.Clone(open),
				probeStep{After: 2 * time.Second, Op: "admit", Want: "probe"},
				probeStep{Op: "answer"},
				probeStep{Op: "fail", Probe: true},
				probeStep{Op: "admit", Want: "send"},
			),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			now := t0
			g := NewGate("pc", 1000, DefaultMaxBackoff, nil)
			g.now = func() time.Time { return now }
			var want, got []string
			for i, s := range tc.steps {
				now = now.Add(s.After)
				switch s.Op {
				case "admit":
					probe, err := g.admit(ServiceNeutron)
					r := "send"
					switch {
					case err != nil:
						var h *HeldError
						if !errors.As(err, &h) {
							t.Fatalf("step %d: %v is no HeldError", i, err)
						}
						r = fmt.Sprintf("%s; retry at %s", err, h.RetryAt().Format("15:04:05"))
					case probe:
						r = "probe"
					}
					want, got = append(want, s.Want), append(got, r)
				case "fail":
					g.failed(ServiceNeutron, s.Probe, &APIError{Code: 503, Message: "Service Unavailable"}, nil)
				case "answer":
					g.answered(ServiceNeutron)
				case "give up":
					g.unprobe(ServiceNeutron, s.Probe)
				}
			}
			if diff := gocmp.Diff(want, got); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
