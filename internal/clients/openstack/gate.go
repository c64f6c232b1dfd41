package openstack

import (
	"bytes"
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

	// maxErrorBody bounds what is read of a failing answer's body.
	maxErrorBody = 64 << 10

	// DefaultMaxBackoff is Clients.MaxBackoff when zero: half of the
	// provider's default --poll of 1 min.
	DefaultMaxBackoff = 30 * time.Second

	// failuresToOpen is how many failures of a service in a row (no
	// answer of it in between) make the Gate back off: one or two are
	// retried by each resource's own backoff, as a blip deserves.
	failuresToOpen = 3

	// firstBackoff is the Gate's first backoff after failuresToOpen
	// failures; each failed probe doubles it, up to the Gate's maximum.
	firstBackoff = 2 * time.Second

	// minProbeWait is the shortest wait of a request refused while a probe
	// is out: a probe answered at once (a service back, or still
	// failing) decides the requests refused meanwhile within about this.
	minProbeWait = time.Second
)

// Service names, as errors and the metrics' service label say them.
const (
	ServiceNeutron  = "Neutron"
	ServiceKeystone = "Keystone"
)

// A Hold stops the requests of a ProviderConfig to a service until a
// time, for one of two causes:
//
//   - the service asked to wait: its answer 429 Too Many Requests or 503
//     Service Unavailable with a Retry-After header (RetryAfter set);
//   - the service is failing: failuresToOpen or more requests in a row got
//     a 5xx answer, a 429 without Retry-After, or no answer at all
//     (connection refused or reset, a time-out), and the Gate backs off
//     (Failures set): until Until no request is sent, then one request
//     probes the service; its answer closes the hold, its failure opens
//     it again for twice as long, up to the Gate's maximum.
type Hold struct {
	// Service is ServiceNeutron or ServiceKeystone.
	Service string
	// Answer is the service's last answer, with its error type and
	// message; nil when the last failure was no answer (Err).
	Answer *APIError
	// Err is the transport's error of the last failure that got no
	// answer, such as a connection refused; nil with Answer.
	Err error
	// RetryAfter is the Retry-After header as the service sent it:
	// seconds, or an HTTP date; empty for a backoff.
	RetryAfter string
	// Failures counts the service's failures in a row, Since the first of
	// them; 0 for a Retry-After hold.
	Failures int
	Since    time.Time
	// At is when the last answer or failure came; Until when the hold
	// ends.
	At, Until time.Time
	// Probe is when the request that probes the service after a backoff
	// was sent, while its answer is awaited; zero otherwise.
	Probe time.Time
}

// what says what the service did, as the hold's errors begin:
// "Neutron answered 503 Service Unavailable (type: message)" or "Neutron
// did not answer (error)".
func (h Hold) what() string {
	if h.Answer == nil {
		return fmt.Sprintf("%s did not answer (%v)", h.Service, h.Err)
	}
	a := fmt.Sprintf("%s answered %d %s", h.Service, h.Answer.Code, http.StatusText(h.Answer.Code))
	if h.Answer.Type != "" {
		a += fmt.Sprintf(" (%s: %s)", h.Answer.Type, h.Answer.Message)
	}
	return a
}

// A HeldError is the error of an OpenStack request of a ProviderConfig
// while a Hold of its service is in force: the request whose answer or
// failure made or renewed the hold (Answered), or a request that was not
// sent because of it. RetryAt is when the request may be sent again. A
// request not sent made nothing in OpenStack; one answered may have (a
// 5xx or a lost answer proves nothing).
type HeldError struct {
	// ProviderConfig is the name of the ProviderConfig.
	ProviderConfig string
	Hold           Hold
	// Answered is true for the request whose answer or failure made or
	// renewed the hold, false for one not sent because of it.
	Answered bool
	// Retry is when a request refused while a probe is out may be sent
	// again (Hold.Probe set); zero otherwise.
	Retry time.Time
}

func (e *HeldError) Error() string {
	h := e.Hold
	at := func(t time.Time) string { return t.UTC().Format(time.TimeOnly) }
	what := h.what()
	if h.RetryAfter != "" {
		what += " with Retry-After: " + h.RetryAfter
	}
	if !e.Answered {
		what = fmt.Sprintf("not sent: %s at %s UTC", what, at(h.At))
	}
	if h.RetryAfter == "" {
		what += fmt.Sprintf(", %d failures in a row since %s UTC", h.Failures, at(h.Since))
	}
	switch {
	case h.RetryAfter != "":
		return fmt.Sprintf("%s: the requests of ProviderConfig %s to %s wait until %s UTC", what, e.ProviderConfig, h.Service, at(h.Until))
	case !h.Probe.IsZero():
		return fmt.Sprintf("%s: backing off: one request of ProviderConfig %s probes %s since %s UTC, the others wait for its answer", what, e.ProviderConfig, h.Service, at(h.Probe))
	}
	return fmt.Sprintf("%s: backing off: the requests of ProviderConfig %s to %s wait until %s UTC, then one probes it", what, e.ProviderConfig, h.Service, at(h.Until))
}

// Unwrap returns the service's answer (an *APIError, so that AsAPIError
// sees its status code) or the transport's error for the request it
// concerns; nil for a request not sent.
func (e *HeldError) Unwrap() error {
	switch {
	case !e.Answered:
		return nil
	case e.Hold.Answer != nil:
		return e.Hold.Answer
	}
	return e.Hold.Err
}

// RetryAt is when the request may be sent again: the end of the hold, or
// for a request refused while a probe is out, a time soon enough to follow
// its answer.
func (e *HeldError) RetryAt() time.Time {
	if !e.Retry.IsZero() {
		return e.Retry
	}
	return e.Hold.Until
}

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
// wait or is failing (a Hold) no request to that service is sent but the
// probe of a backoff. Safe for concurrent use.
type Gate struct {
	pc      string
	rate    float64
	limiter *rate.Limiter
	metrics *Metrics
	// maxPace is the longest wait for a slot of the bucket.
	maxPace time.Duration
	// maxBackoff is the longest backoff between two probes of a failing
	// service.
	maxBackoff time.Duration
	now        func() time.Time

	mu       sync.Mutex
	services map[string]*health
}

// health is what a Gate knows of one service.
type health struct {
	// hold is the service's Retry-After hold (RetryAfter set), or its
	// current run of failures (Failures), which holds while backoff is
	// not zero.
	hold Hold
	// backoff is the length of the current backoff; 0 while the service
	// answers.
	backoff time.Duration
}

// NewGate returns the gate of ProviderConfig pc that lets at most r
// requests a second through, with bursts of twice that, backs off at most
// maxBackoff between the probes of a failing service, and counts the
// requests in m (nil: not counted).
func NewGate(pc string, r float64, maxBackoff time.Duration, m *Metrics) *Gate {
	g := &Gate{pc: pc, rate: r, limiter: rate.NewLimiter(rate.Limit(r), max(1, int(2*r))), metrics: m,
		maxPace: maxPace, maxBackoff: maxBackoff, now: time.Now, services: map[string]*health{}}
	m.track(g)
	return g
}

// Holds returns the holds in force, by service: a Retry-After hold until
// it ends, a backoff until the service answers again.
func (g *Gate) Holds() map[string]Hold {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	out := map[string]Hold{}
	for svc, s := range g.services {
		if s.backoff > 0 || s.hold.RetryAfter != "" && now.Before(s.hold.Until) {
			out[svc] = s.hold
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
	probe, err := g.admit(svc)
	if err != nil {
		return nil, err
	}
	if err := g.pace(r.Context(), svc); err != nil {
		g.unprobe(svc, probe)
		return nil, err
	}
	g.metrics.sent(g.pc, svc)
	resp, err := t.next.RoundTrip(r)
	switch {
	case errors.Is(err, context.Canceled):
		// The caller gave up: that says nothing of the service.
		g.unprobe(svc, probe)
		return nil, err
	case err != nil:
		if h := g.failed(svc, probe, nil, err); h != nil {
			return nil, h
		}
		return nil, err
	}
	code := resp.StatusCode
	if !failure(code) {
		g.answered(svc)
		return resp, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
	answer := parseAnswer(code, body)
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
		now := g.now()
		ra := resp.Header.Get("Retry-After")
		if until, ok := retryAfter(ra, now); ok {
			h := Hold{Service: svc, Answer: answer, RetryAfter: ra, At: now, Until: until}
			g.hold(h)
			return nil, &HeldError{ProviderConfig: g.pc, Hold: h, Answered: true}
		}
	}
	if h := g.failed(svc, probe, answer, nil); h != nil {
		return nil, h
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// failure says whether an answer with status code says that the service
// is failing: 429 Too Many Requests (without a Retry-After: the Gate
// chooses the wait) and every 5xx but 501 Not Implemented, which is the
// answer to the request, not a failure of the service.
func failure(code int) bool {
	return code == http.StatusTooManyRequests || code >= 500 && code != http.StatusNotImplemented
}

// state is the health of svc, made at its first use; g.mu is held.
func (g *Gate) state(svc string) *health {
	s, ok := g.services[svc]
	if !ok {
		s = &health{hold: Hold{Service: svc}}
		g.services[svc] = s
	}
	return s
}

// admit decides whether a request to svc may be sent: not while a
// Retry-After hold or a backoff is in force; after a backoff, one request
// goes as the probe (probe true) and the others wait for its answer.
func (g *Gate) admit(svc string) (probe bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now, s := g.now(), g.state(svc)
	switch {
	case s.hold.RetryAfter != "" && now.Before(s.hold.Until):
		g.metrics.held(g.pc, svc, reasonRetryAfter)
		return false, &HeldError{ProviderConfig: g.pc, Hold: s.hold}
	case s.backoff == 0:
		return false, nil
	case now.Before(s.hold.Until) || !s.hold.Probe.IsZero():
		g.metrics.held(g.pc, svc, reasonBackoff)
		return false, g.backingOff(s.hold, now, false)
	}
	s.hold.Probe = now
	return true, nil
}

// backingOff is the error of a request to the service of h, a backoff
// hold, at now. A request refused while the probe is out retries after as
// long as the probe has been out (at least minProbeWait, at most the
// longest backoff): soon after a quick answer, rarely while a service
// that does not answer keeps the probe waiting for its time-out.
func (g *Gate) backingOff(h Hold, now time.Time, answered bool) *HeldError {
	e := &HeldError{ProviderConfig: g.pc, Hold: h, Answered: answered}
	if !h.Probe.IsZero() {
		e.Retry = now.Add(min(max(now.Sub(h.Probe), minProbeWait), g.maxBackoff))
	}
	return e
}

// unprobe forgets the probe of svc, sent or not, that ended without
// saying anything of the service (the caller gave up, the token bucket
// had no slot), so that the next request probes.
func (g *Gate) unprobe(svc string, probe bool) {
	if !probe {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.state(svc).hold.Probe = time.Time{}
}

// answered records an answer of svc that is no failure: it ends a run of
// failures and a backoff (its requests go out at once), not a Retry-After
// hold in force.
func (g *Gate) answered(svc string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.state(svc)
	if s.hold.RetryAfter == "" {
		s.hold = Hold{Service: svc}
	}
	s.backoff = 0
}

// failed records a failure of a request to svc, with the service's answer
// or the transport's error err, and returns the request's error when the
// Gate backs off, nil while the failures are too few. The failuresToOpen-th
// failure in a row starts the backoff at firstBackoff; a failed probe
// doubles it, up to g.maxBackoff.
func (g *Gate) failed(svc string, probe bool, answer *APIError, err error) *HeldError {
	g.mu.Lock()
	defer g.mu.Unlock()
	now, s := g.now(), g.state(svc)
	h := &s.hold
	if h.RetryAfter != "" {
		if now.Before(h.Until) {
			// Sent before the service asked to wait: its hold decides.
			return nil
		}
		*h = Hold{Service: svc}
	}
	if h.Failures == 0 {
		h.Since = now
	}
	h.Failures++
	h.Answer, h.Err, h.At = answer, err, now
	if probe && s.backoff > 0 || s.backoff == 0 && h.Failures >= failuresToOpen {
		s.backoff = min(max(2*s.backoff, firstBackoff), g.maxBackoff)
		h.Until, h.Probe = now.Add(s.backoff), time.Time{}
	}
	if s.backoff == 0 {
		return nil
	}
	return g.backingOff(*h, now, true)
}

// hold records h, a Retry-After hold, keeping a longer one already in
// force; it ends a backoff (the service answered).
func (g *Gate) hold(h Hold) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.state(h.Service)
	if old := s.hold; old.RetryAfter == "" || old.Until.Before(h.Until) {
		s.hold = h
	}
	s.backoff = 0
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
