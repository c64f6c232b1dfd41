package openstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

const (
	// DefaultRequestRate is the most OpenStack requests a second that the
	// provider sends for one ProviderConfig unless Clients.RequestRate
	// says otherwise: twice what the default --max-reconcile-rate of 10
	// reconciles a second needs at rest (one request each), so that only
	// bursts of creates are paced.
	DefaultRequestRate = 20.0

	// MaxRetryAfter bounds how long a Retry-After is honoured: an answer
	// asking for more (or a date further away) holds the ProviderConfig's
	// requests this long, then the next request asks again.
	MaxRetryAfter = 15 * time.Minute

	// maxPace is the longest a request waits for a free slot of its
	// ProviderConfig's token bucket; one that would wait longer is not
	// sent (ThrottledError), so that a reconcile worker is never blocked
	// for long.
	maxPace = 5 * time.Second

	// maxErrorBody bounds what is read of a 429 or 503 answer's body.
	maxErrorBody = 64 << 10
)

// Service names, as errors and the metrics' service label say them.
const (
	ServiceNeutron  = "Neutron"
	ServiceKeystone = "Keystone"
)

// A Hold is an OpenStack service's request to wait: its answer 429 Too
// Many Requests or 503 Service Unavailable with a Retry-After header.
type Hold struct {
	// Service is ServiceNeutron or ServiceKeystone.
	Service string
	// Answer is the service's answer, with its error type and message.
	Answer *APIError
	// RetryAfter is the Retry-After header as the service sent it:
	// seconds, or an HTTP date.
	RetryAfter string
	// At is when the answer came; Until when the hold ends.
	At, Until time.Time
}

// A HeldError is the error of an OpenStack request of a ProviderConfig
// while its service asked to wait (a Hold): the answer that asked
// (Answered) or a request that was not sent. RetryAt is when the hold
// ends. A held request made nothing in OpenStack.
type HeldError struct {
	// ProviderConfig is the name of the ProviderConfig.
	ProviderConfig string
	Hold           Hold
	// Answered is true for the request that the service answered with
	// the hold, false for one not sent because of it.
	Answered bool
}

func (e *HeldError) Error() string {
	h := e.Hold
	a := fmt.Sprintf("%s answered %d %s", h.Service, h.Answer.Code, http.StatusText(h.Answer.Code))
	if h.Answer.Type != "" {
		a += fmt.Sprintf(" (%s: %s)", h.Answer.Type, h.Answer.Message)
	}
	wait := fmt.Sprintf("the requests of ProviderConfig %s to %s wait until %s UTC", e.ProviderConfig, h.Service, h.Until.UTC().Format(time.TimeOnly))
	if e.Answered {
		return fmt.Sprintf("%s with Retry-After: %s: %s", a, h.RetryAfter, wait)
	}
	return fmt.Sprintf("not sent: %s with Retry-After: %s at %s UTC: %s", a, h.RetryAfter, h.At.UTC().Format(time.TimeOnly), wait)
}

// Unwrap returns the service's answer for the request it answered, so
// that AsAPIError sees its status code; nil for a request not sent.
func (e *HeldError) Unwrap() error {
	if e.Answered {
		return e.Hold.Answer
	}
	return nil
}

// RetryAt is when the hold ends and the request may be sent again.
func (e *HeldError) RetryAt() time.Time { return e.Hold.Until }

// A ThrottledError is the error of an OpenStack request that was not sent
// because its ProviderConfig's token bucket (Clients.RequestRate) had no
// free slot for it soon enough.
type ThrottledError struct {
	// ProviderConfig is the name of the ProviderConfig.
	ProviderConfig string
	// Rate is the cap, in requests a second.
	Rate float64
	// Free is when the bucket has a slot again.
	Free time.Time
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("not sent: the OpenStack requests of ProviderConfig %s are capped at %g a second (--openstack-request-rate) and the next slot is free at %s UTC",
		e.ProviderConfig, e.Rate, e.Free.UTC().Format("15:04:05.000"))
}

// RetryAt is when the bucket has a slot again.
func (e *ThrottledError) RetryAt() time.Time { return e.Free }

// NotSent says whether err is that of a request the provider did not send
// (HeldError of a request not sent, ThrottledError): it made nothing.
func NotSent(err error) bool {
	var h *HeldError
	var th *ThrottledError
	return errors.As(err, &th) || errors.As(err, &h) && !h.Answered
}

// A Gate paces and holds the OpenStack requests of one ProviderConfig: a
// token bucket caps their rate, and while Neutron or Keystone asked to
// wait (Hold) no request to that service is sent. Safe for concurrent use.
type Gate struct {
	pc      string
	rate    float64
	limiter *rate.Limiter
	metrics *Metrics
	// maxPace is the longest wait for a slot of the bucket.
	maxPace time.Duration
	now     func() time.Time

	mu    sync.Mutex
	holds map[string]Hold
}

// NewGate returns the gate of ProviderConfig pc that lets at most r
// requests a second through, with bursts of twice that, counting them in
// m (nil: not counted).
func NewGate(pc string, r float64, m *Metrics) *Gate {
	g := &Gate{pc: pc, rate: r, limiter: rate.NewLimiter(rate.Limit(r), max(1, int(2*r))), metrics: m,
		maxPace: maxPace, now: time.Now, holds: map[string]Hold{}}
	m.track(g)
	return g
}

// Holds returns the holds in force, by service.
func (g *Gate) Holds() map[string]Hold {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	out := map[string]Hold{}
	for s, h := range g.holds {
		if now.Before(h.Until) {
			out[s] = h
		}
	}
	return out
}

// Transport returns next behind the gate. Requests to the host of the
// identity endpoint identity count as Keystone's, all others as Neutron's.
func (g *Gate) Transport(next http.RoundTripper, identity string) http.RoundTripper {
	t := &gated{gate: g, next: next}
	if u, err := url.Parse(identity); err == nil {
		t.keystone = u.Host
	}
	return t
}

type gated struct {
	gate     *Gate
	next     http.RoundTripper
	keystone string
}

func (t *gated) RoundTrip(r *http.Request) (*http.Response, error) {
	g, svc := t.gate, ServiceNeutron
	if r.URL.Host == t.keystone {
		svc = ServiceKeystone
	}
	if h, held := g.held(svc); held {
		g.metrics.held(g.pc, svc, reasonRetryAfter)
		return nil, &HeldError{ProviderConfig: g.pc, Hold: h}
	}
	if err := g.pace(r.Context(), svc); err != nil {
		return nil, err
	}
	g.metrics.sent(g.pc, svc)
	resp, err := t.next.RoundTrip(r)
	if err != nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
		return resp, err
	}
	now := g.now()
	ra := resp.Header.Get("Retry-After")
	until, ok := retryAfter(ra, now)
	if !ok {
		return resp, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
	h := Hold{Service: svc, Answer: parseAnswer(resp.StatusCode, body), RetryAfter: ra, At: now, Until: until}
	g.hold(h)
	return nil, &HeldError{ProviderConfig: g.pc, Hold: h, Answered: true}
}

// held returns the hold of svc in force, if any.
func (g *Gate) held(svc string) (Hold, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	h, ok := g.holds[svc]
	return h, ok && g.now().Before(h.Until)
}

// hold records h, keeping a longer hold already in force.
func (g *Gate) hold(h Hold) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if old, ok := g.holds[h.Service]; !ok || old.Until.Before(h.Until) {
		g.holds[h.Service] = h
	}
}

// pace waits for a slot of the token bucket, at most g.maxPace and not
// past ctx's deadline; a request that would wait longer is refused with a
// ThrottledError.
func (g *Gate) pace(ctx context.Context, svc string) error {
	now := g.now()
	res := g.limiter.ReserveN(now, 1)
	d := res.DelayFrom(now)
	if d == 0 {
		return nil
	}
	deadline, bounded := ctx.Deadline()
	if d > g.maxPace || (bounded && now.Add(d).After(deadline)) {
		res.CancelAt(now)
		g.metrics.held(g.pc, svc, reasonRateLimit)
		return &ThrottledError{ProviderConfig: g.pc, Rate: g.rate, Free: now.Add(d)}
	}
	g.metrics.throttled(g.pc, svc)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		res.Cancel()
		return ctx.Err()
	}
}

// retryAfter is the end of the wait that a Retry-After header value v
// asks for when received at now (RFC 9110 section 10.2.3: seconds, or an
// HTTP date), at most MaxRetryAfter; false when v is absent, malformed or
// already past.
func retryAfter(v string, now time.Time) (time.Time, bool) {
	if v == "" {
		return time.Time{}, false
	}
	var until time.Time
	if s, err := strconv.ParseUint(v, 10, 32); err == nil {
		until = now.Add(time.Duration(s) * time.Second)
	} else if t, err := http.ParseTime(v); err == nil {
		until = t
	} else {
		return time.Time{}, false
	}
	if !until.After(now) {
		return time.Time{}, false
	}
	if limit := now.Add(MaxRetryAfter); until.After(limit) {
		return limit, true
	}
	return until, true
}
