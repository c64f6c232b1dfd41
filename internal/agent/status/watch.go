package status

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/strongswan/govici/vici"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// Defaults of a Watcher.
const (
	// DefaultPoll is how often the counters are read when nothing happens.
	DefaultPoll = 10 * time.Second
	// DefaultSettle is how long a burst of events is gathered before the
	// status is read once for all of them.
	DefaultSettle = 100 * time.Millisecond
	// DefaultSubscribeTimeout is how long Subscribe waits for charon to
	// confirm the subscription: govici's own bound on an unanswered
	// request (5 s) and as long again.
	DefaultSubscribeTimeout = 10 * time.Second
)

// unnamed is charon's name of an IKE SA whose peer config is not known yet.
const unnamed = "(unnamed)"

// ErrSubscribeStuck is returned by Watcher.Subscribe when charon has not
// confirmed the subscription within its timeout. govici v0.8.0 holds the
// session's event lock while it waits, without a context, for charon's
// confirmation, and its reader needs that lock for an event charon sends
// before the confirmation (charon may: another thread raises the event
// between the registration and its confirmation), so neither would ever
// move again: close the session and connect a new one.
var ErrSubscribeStuck = errors.New("charon did not confirm the subscription; the VICI session is stuck")

// ErrEventsClosed is returned by Watcher.Run when the VICI session stops
// delivering events (charon stopped or restarted): connect a new session
// and run again.
var ErrEventsClosed = errors.New("charon closed the VICI event stream")

// An EventSource is the part of a *vici.Session a Watcher takes events
// from.
type EventSource interface {
	Subscribe(events ...string) error
	NotifyEvents(c chan<- vici.Event)
	StopEvents(c chan<- vici.Event)
}

// A Sink receives the status of every configured tunnel each time the
// Watcher reads it. When it could not take it now (rate limit), it returns
// how long to wait before offering it again.
type Sink func(ctx context.Context, tunnels []v1alpha1.TunnelStatus) (retryAfter time.Duration, err error)

// A Watcher keeps a gateway's tunnel status current: it reads list-sas every
// Poll for the counters, at once (after Settle) when charon reports an IKE
// or CHILD SA going up or down (ike-updown, child-updown), and keeps each
// tunnel's last error from charon's log events (see ErrorFromLog). A
// tunnel's LastError stays until one of its CHILD_SAs comes up.
type Watcher struct {
	// Events is a VICI session to charon used for nothing else.
	Events EventSource
	// Caller makes the streamed commands (list-sas, list-conns): a
	// *Streamer on a second session (not a *vici.Session itself, whose
	// CallStreaming loses events; see Streamer).
	Caller Caller
	// Conns returns the names of the configured connections.
	Conns func() []string
	// Children returns the names of a configured connection's children
	// (see WithChildren); nil when they are not known.
	Children func(conn string) []string
	// Sink receives every status read.
	Sink Sink
	// Poll and Settle default to DefaultPoll and DefaultSettle.
	Poll, Settle time.Duration
	// SubscribeTimeout defaults to DefaultSubscribeTimeout.
	SubscribeTimeout time.Duration
	// Now defaults to time.Now.
	Now func() time.Time
	// OnError, if set, is told of errors Run survives (a failed list-sas
	// or Sink).
	OnError func(error)
	// Observe, if set, sees every status read before the Sink, and may add
	// to it (the agent's watchdog: re-initiations).
	Observe func(tunnels []v1alpha1.TunnelStatus)
	// Refresh, if set, makes Run read the status again (after Settle)
	// whenever it delivers a value.
	Refresh <-chan struct{}

	mu sync.Mutex
	// lastErr is the last error per connection.
	lastErr map[string]string
	// peers maps the unique id of an unnamed IKE SA to the peer's address.
	peers map[string]string
	// established remembers each tunnel's EstablishedAt, so that the
	// rounding of charon's "seconds ago" does not make it jitter.
	established map[string]metav1.Time
	// events receives charon's events from Subscribe until Run returns.
	events chan vici.Event
}

// A logEvent is the body of a vici "log" event.
type logEvent struct {
	Group   string `vici:"group"`
	Level   string `vici:"level"`
	IKEName string `vici:"ikesa-name"`
	IKEID   string `vici:"ikesa-uniqueid"`
	Message string `vici:"msg"`
}

// LastErrors returns a copy of the last error per connection.
func (w *Watcher) LastErrors() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]string, len(w.lastErr))
	for k, v := range w.lastErr {
		out[k] = v
	}
	return out
}

// Subscribe subscribes to charon's events (ike-updown, child-updown and
// log); up to 1024 of them wait for Run. Call it before loading connections
// that start at once, so that the log of their first attempt (such as an
// authentication failure within milliseconds) is not missed; Run calls it
// if it was not called. Its error is charon's refusal, or ctx's end or
// SubscribeTimeout passing before charon confirmed: then the session may
// never deliver an event again and must be closed (see ErrSubscribeStuck).
func (w *Watcher) Subscribe(ctx context.Context) error {
	if w.events != nil {
		return nil
	}
	events := make(chan vici.Event, 1024)
	// Notify first: charon sends events as soon as it has the subscription.
	w.Events.NotifyEvents(events)
	subscribed := make(chan error, 1)
	go func() { subscribed <- w.Events.Subscribe("ike-updown", "child-updown", "log") }()
	timeout := w.SubscribeTimeout
	if timeout <= 0 {
		timeout = DefaultSubscribeTimeout
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err := <-subscribed:
		if err != nil {
			w.Events.StopEvents(events)
			return fmt.Errorf("cannot subscribe to charon's events: %w", err)
		}
	case <-ctx.Done():
		// Not StopEvents: it waits for the lock a stuck Subscribe holds.
		return fmt.Errorf("cannot subscribe to charon's events: %w", ctx.Err())
	case <-timer.C:
		return fmt.Errorf("cannot subscribe to charon's events within %s: %w", timeout, ErrSubscribeStuck)
	}
	w.events = events
	return nil
}

// Run subscribes to charon's events unless Subscribe did, and keeps the
// status current until ctx ends (it then returns ctx.Err()) or the event
// stream closes (ErrEventsClosed). It reads and sinks the status once at
// the start.
func (w *Watcher) Run(ctx context.Context) error { //nolint:gocyclo // the event loop: one case per source
	poll, settle := w.Poll, w.Settle
	if poll <= 0 {
		poll = DefaultPoll
	}
	if settle <= 0 {
		settle = DefaultSettle
	}
	if err := w.Subscribe(ctx); err != nil {
		return err
	}
	events := w.events
	defer func() {
		w.Events.StopEvents(events)
		w.events = nil
	}()

	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	var settleC, retryC <-chan time.Time
	read := true
	for {
		if read {
			read, settleC = false, nil
			if d := w.Update(ctx); d > 0 {
				retryC = time.After(d)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-events:
			if !ok {
				return ErrEventsClosed
			}
			if w.handle(ctx, e) && settleC == nil {
				settleC = time.After(settle)
			}
		case <-w.Refresh:
			if settleC == nil {
				settleC = time.After(settle)
			}
		case <-settleC:
			read = true
		case <-ticker.C:
			read = true
		case <-retryC:
			retryC = nil
			read = true
		}
	}
}

// Update reads the status once, adds the last errors and sinks it. It
// returns how long the Sink asked to wait, if it did.
func (w *Watcher) Update(ctx context.Context) time.Duration {
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	opts := []Option{WithClock(now)}
	if w.Children != nil {
		opts = append(opts, WithChildren(w.Children))
	}
	tunnels, err := Collect(ctx, w.Caller, w.Conns(), opts...)
	if err != nil {
		w.report(err)
		return 0
	}
	w.mu.Lock()
	if w.established == nil {
		w.established = map[string]metav1.Time{}
	}
	for i := range tunnels {
		t := &tunnels[i]
		t.LastError = w.lastErr[t.Name]
		if t.EstablishedAt == nil {
			delete(w.established, t.Name)
			continue
		}
		// Charon counts whole seconds: the same IKE SA can appear to
		// move by a second between two reads.
		if prev, ok := w.established[t.Name]; ok && absDuration(t.EstablishedAt.Sub(prev.Time)) <= 2*time.Second {
			t.EstablishedAt = &prev
		} else {
			w.established[t.Name] = *t.EstablishedAt
		}
	}
	w.mu.Unlock()
	if w.Observe != nil {
		w.Observe(tunnels)
	}
	retry, err := w.Sink(ctx, tunnels)
	if err != nil {
		w.report(err)
	}
	return retry
}

// handle records what e says and reports whether the status should be read
// again.
func (w *Watcher) handle(ctx context.Context, e vici.Event) bool { //nolint:gocyclo // one case per VICI event
	switch e.Name {
	case "ike-updown", "child-updown":
		if e.Name == "child-updown" && e.Message.Get("up") == "yes" {
			w.mu.Lock()
			for _, k := range e.Message.Keys() {
				if k != "up" {
					delete(w.lastErr, k)
				}
			}
			w.mu.Unlock()
		}
		return true
	case "log":
		var l logEvent
		if err := vici.UnmarshalMessage(e.Message, &l); err != nil {
			return false
		}
		if l.IKEName == unnamed {
			if m := reInitiating.FindStringSubmatch(l.Message); m != nil {
				w.mu.Lock()
				if w.peers == nil {
					w.peers = map[string]string{}
				}
				// Bounded: a peer address per IKE SA being set up.
				if len(w.peers) > 1024 {
					clear(w.peers)
				}
				w.peers[l.IKEID] = m[1]
				w.mu.Unlock()
			}
		}
		failure := ErrorFromLog(l.Message)
		if failure == "" {
			return false
		}
		conns := []string{l.IKEName}
		if l.IKEName == unnamed || l.IKEName == "" {
			w.mu.Lock()
			peer := w.peers[l.IKEID]
			w.mu.Unlock()
			conns = w.connsOfPeer(ctx, peer)
		}
		if len(conns) == 0 {
			return false
		}
		w.mu.Lock()
		if w.lastErr == nil {
			w.lastErr = map[string]string{}
		}
		for _, c := range conns {
			w.lastErr[c] = failure
		}
		w.mu.Unlock()
		return true
	}
	return false
}

// connsOfPeer returns the configured connections whose remote_addrs name
// peer, as an address or a prefix containing it (list-conns). A connection
// that accepts any peer (%any) is not counted: the failure is not known to
// be its own.
func (w *Watcher) connsOfPeer(ctx context.Context, peer string) []string {
	addr, err := netip.ParseAddr(peer)
	if err != nil {
		return nil
	}
	configured := map[string]bool{}
	for _, c := range w.Conns() {
		configured[c] = true
	}
	var out []string
	for m, err := range w.Caller.CallStreaming(ctx, "list-conns", "list-conn", nil) {
		if err != nil {
			w.report(fmt.Errorf("cannot list connections: %w", err))
			return nil
		}
		for _, name := range m.Keys() {
			sub, ok := m.Get(name).(*vici.Message)
			if !ok || !configured[name] {
				continue
			}
			var c struct {
				RemoteAddrs []string `vici:"remote_addrs"`
			}
			if err := vici.UnmarshalMessage(sub, &c); err != nil {
				continue
			}
			for _, r := range c.RemoteAddrs {
				if matchesPeer(r, addr) {
					out = append(out, name)
					break
				}
			}
		}
	}
	return out
}

// matchesPeer reports whether a remote_addrs entry (address or prefix)
// names addr.
func matchesPeer(entry string, addr netip.Addr) bool {
	entry = strings.TrimSpace(entry)
	if p, err := netip.ParsePrefix(entry); err == nil {
		return p.Contains(addr)
	}
	if a, err := netip.ParseAddr(entry); err == nil {
		return a == addr
	}
	return false
}

func (w *Watcher) report(err error) {
	if w.OnError != nil {
		w.OnError(err)
	}
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
