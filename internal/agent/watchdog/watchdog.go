// Package watchdog keeps a gateway's always-on tunnels up when charon does
// not: it initiates again, over VICI, a tunnel or CHILD_SA that has been
// down longer than a bound while charon was not trying.
//
// Charon does most of the work itself with the rendered settings
// (internal/render): keyingtries 0 retries an unanswered IKE_SA_INIT for
// ever, each child's close_action start re-creates a CHILD_SA or (strongSwan
// 5.9: each child's close_action, when the peer deletes the IKE SA) an IKE
// SA the peer deleted, dpd_action restart re-creates an IKE SA whose peer
// stopped answering, and that restart retries for ever too. What is left
// are the cases where charon gives up and stays idle: an IKE SA that failed
// for another reason than silence (AUTHENTICATION_FAILED, NO_PROPOSAL_CHOSEN
// while the peer's administrator fixes the other side), a CHILD_SA the peer
// refused to re-create (TS_UNACCEPTABLE, a PFS mismatch at rekey), or a
// connection loaded with fewer keying tries. The Watchdog acts only then:
// never while charon has an IKE SA of the connection that is not
// ESTABLISHED (CONNECTING, REKEYING, DELETING: charon is on it), never for
// a CHILD_SA that exists in any state, never while the IKE SA has exchanges
// active or queued, and at most once per bound per tunnel. Its initiate
// reuses the IKE SA of the connection that charon holds (charon's
// reuse_ikesa, serialised per configuration by its IKE SA manager), so it
// makes no second IKE SA.
package watchdog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/strongswan/govici/vici"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// Defaults of a Watchdog.
const (
	// DefaultAfter is how long an always-on tunnel or CHILD_SA may be down,
	// with charon not trying, before the Watchdog initiates it.
	DefaultAfter = 30 * time.Second
	// DefaultTimeout bounds the VICI calls of one re-initiation (a list-sas
	// and one initiate per CHILD_SA, each of which returns at once: charon
	// is asked not to wait for the result).
	DefaultTimeout = 10 * time.Second
)

// queueSize is how many re-initiations may wait for the worker: one per
// tunnel at most is queued or running.
const queueSize = 64

// A Charon is the VICI session a Watchdog's worker uses, for nothing else:
// Call for initiate, CallStreaming for list-sas (a *status.Streamer's; see
// there why not a *vici.Session's own).
type Charon interface {
	Call(ctx context.Context, cmd string, in *vici.Message) (*vici.Message, error)
	CallStreaming(ctx context.Context, cmd, event string, in *vici.Message) iter.Seq2[*vici.Message, error]
}

// A Watchdog watches the tunnel status (Observe, at every status read) and
// re-initiates always-on tunnels and CHILD_SAs that stay down (Serve, its
// worker). It counts what it did in TunnelStatus.Reinitiations and
// LastReinitiate, kept across charon sessions. Safe for concurrent use.
type Watchdog struct {
	// After is the bound (DefaultAfter when zero).
	After time.Duration
	// Timeout bounds the calls of one re-initiation (DefaultTimeout when
	// zero).
	Timeout time.Duration
	// Started returns the children of a configured connection that charon
	// starts itself (start_action start): the ones kept up. Tunnels
	// without any (trap, respond) are not watched.
	Started func(conn string) []string
	// Now defaults to time.Now; it dates re-initiations.
	Now func() time.Time
	// Log defaults to no logging.
	Log logging.Logger
	// Reinitiated, if set, gets a value (without blocking) after each
	// re-initiation, so that the status is read again: the watcher's
	// Refresh.
	Reinitiated chan<- struct{}

	mu      sync.Mutex
	tunnels map[string]*tunnel
	// work is the current Serve's queue, nil when none runs.
	work chan job
}

// tunnel is what the Watchdog knows of one tunnel.
type tunnel struct {
	// since is when the tunnel last had an IKE SA (or was first seen, or
	// was last re-initiated): its downtime starts there.
	since time.Time
	// children is when each kept-up child was last seen (or its IKE SA
	// was not ESTABLISHED yet, or it was last re-initiated).
	children map[string]time.Time
	// established is whether the last read had an ESTABLISHED IKE SA.
	established bool
	// pending is true while a re-initiation is queued or running.
	pending bool
	count   int32
	last    *metav1.Time
}

// A job is one re-initiation: of the whole tunnel (no IKE SA) or of the
// CHILD_SAs missing from its ESTABLISHED IKE SA.
type job struct {
	conn     string
	whole    bool
	children []string
	downFor  time.Duration
}

func (w *Watchdog) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

func (w *Watchdog) after() time.Duration {
	if w.After > 0 {
		return w.After
	}
	return DefaultAfter
}

func (w *Watchdog) log() logging.Logger {
	if w.Log != nil {
		return w.Log
	}
	return logging.NewNopLogger()
}

// Observe takes a status read of every configured tunnel (from
// status.Collect, tunnels sorted by name), queues the re-initiation of
// always-on tunnels that have had no IKE SA, and of always-on CHILD_SAs
// that have been missing from their ESTABLISHED IKE SA, for at least After,
// and sets each tunnel's Reinitiations and LastReinitiate. It never blocks:
// the worker (Serve) checks charon again and initiates. Tunnels no longer
// configured are forgotten.
func (w *Watchdog) Observe(tunnels []v1alpha1.TunnelStatus) {
	now, after := w.now(), w.after()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.tunnels == nil {
		w.tunnels = map[string]*tunnel{}
	}
	seen := map[string]bool{}
	for i := range tunnels {
		ts := &tunnels[i]
		seen[ts.Name] = true
		t, ok := w.tunnels[ts.Name]
		if !ok {
			t = &tunnel{since: now, children: map[string]time.Time{}}
			w.tunnels[ts.Name] = t
		}
		var started []string
		if w.Started != nil {
			started = w.Started(ts.Name)
		}
		w.observe(ts, t, started, now, after)
		ts.Reinitiations, ts.LastReinitiate = t.count, t.last.DeepCopy()
	}
	for name := range w.tunnels {
		if !seen[name] {
			delete(w.tunnels, name)
		}
	}
}

// observe updates t from ts and queues a job when one is due. w.mu is held.
func (w *Watchdog) observe(ts *v1alpha1.TunnelStatus, t *tunnel, started []string, now time.Time, after time.Duration) {
	present := map[string]bool{}
	for _, c := range ts.ChildSAs {
		present[c.Name] = true
	}
	established := ts.IKEState == v1alpha1.IKEStateEstablished
	var missing []string
	for _, c := range started {
		seen, ok := t.children[c]
		// A child's downtime counts from when its IKE SA was established
		// at the earliest.
		if !ok || !established || !t.established || present[c] {
			t.children[c] = now
			continue
		}
		if at := ts.EstablishedAt; at != nil && at.After(seen) {
			seen = at.Time
			t.children[c] = seen
		}
		if now.Sub(seen) >= after {
			missing = append(missing, c)
		}
	}
	t.established = established
	for c := range t.children {
		if !slices.Contains(started, c) {
			delete(t.children, c)
		}
	}
	if ts.IKEState != v1alpha1.IKEStateDown {
		t.since = now
	}
	if t.pending || len(started) == 0 {
		return
	}
	switch {
	case ts.IKEState == v1alpha1.IKEStateDown && now.Sub(t.since) >= after:
		w.queue(t, job{conn: ts.Name, whole: true, children: started, downFor: now.Sub(t.since)})
	case len(missing) > 0:
		w.queue(t, job{conn: ts.Name, children: missing, downFor: now.Sub(t.children[missing[0]])})
	}
}

// queue hands j to the worker if one runs and has room. w.mu is held.
func (w *Watchdog) queue(t *tunnel, j job) {
	if w.work == nil {
		return
	}
	select {
	case w.work <- j:
		t.pending = true
	default:
	}
}

// Serve runs the worker on c, a VICI session of its own, until ctx ends.
// Run one Serve per charon session; re-initiations queued for an earlier
// session are dropped.
func (w *Watchdog) Serve(ctx context.Context, c Charon) {
	work := make(chan job, queueSize)
	w.mu.Lock()
	w.work = work
	for _, t := range w.tunnels {
		t.pending = false
	}
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		if w.work == work {
			w.work = nil
		}
		w.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-work:
			w.run(ctx, c, j)
		}
	}
}

// run checks charon again and re-initiates what j names if it still must,
// then records it.
func (w *Watchdog) run(ctx context.Context, c Charon, j job) {
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	children, why, err := w.reinitiate(cctx, c, j)
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.tunnels[j.conn]
	if !ok {
		return
	}
	t.pending = false
	if len(children) == 0 {
		if err != nil {
			w.log().Info("Cannot re-initiate a tunnel", "tunnel", j.conn, "error", err)
		} else {
			w.log().Debug("Not re-initiating a tunnel", "tunnel", j.conn, "reason", why)
		}
		return
	}
	// The next attempt, if this one fails too, waits After again.
	t.since = now
	for _, ch := range children {
		t.children[ch] = now
	}
	t.count++
	t.last = &metav1.Time{Time: now.Truncate(time.Second)}
	what := "CHILD_SAs missing from its ESTABLISHED IKE SA"
	if j.whole {
		what = "no IKE SA"
	}
	w.log().Info("Re-initiated a tunnel that stayed down with charon not trying", "tunnel", j.conn,
		"down", what, "for", j.downFor.Round(time.Second).String(), "children", children, "error", err)
	if w.Reinitiated != nil {
		select {
		case w.Reinitiated <- struct{}{}:
		default:
		}
	}
}

// reinitiate initiates j's children unless charon's IKE SAs of j.conn,
// listed again now, say it must not: it returns the children initiated, or
// why none was, and the error of the calls that failed.
func (w *Watchdog) reinitiate(ctx context.Context, c Charon, j job) (initiated []string, why string, err error) {
	sas, err := list(ctx, c, j.conn)
	if err != nil {
		return nil, "", err
	}
	todo := j.children
	if j.whole {
		if len(sas) > 0 {
			return nil, "charon has an IKE SA of the connection now", nil
		}
	} else {
		established := false
		for _, sa := range sas {
			switch {
			case sa.State != v1alpha1.IKEStateEstablished:
				return nil, "charon has an IKE SA of the connection in state " + sa.State, nil
			case len(sa.TasksActive) > 0 || len(sa.TasksQueued) > 0:
				return nil, "the IKE SA has exchanges active or queued", nil
			}
			established = true
			todo = slices.DeleteFunc(slices.Clone(todo), func(ch string) bool {
				for _, cs := range sa.ChildSAs {
					if cs.Name == ch {
						return true
					}
				}
				return false
			})
		}
		if !established {
			return nil, "the IKE SA is gone", nil
		}
		if len(todo) == 0 {
			return nil, "the CHILD_SAs are back", nil
		}
	}
	var errs []error
	for _, ch := range todo {
		if err := initiate(ctx, c, j.conn, ch); err != nil {
			errs = append(errs, fmt.Errorf("child %s: %w", ch, err))
			continue
		}
		initiated = append(initiated, ch)
	}
	return initiated, "", errors.Join(errs...)
}

// initiate asks charon to initiate child of connection conn and to answer
// at once (timeout -1): the result shows in the status, and the worker
// never waits for a peer. charon attaches the CHILD_SA to the connection's
// existing IKE SA if there is one.
func initiate(ctx context.Context, c Charon, conn, child string) error {
	m := vici.NewMessage()
	for _, kv := range [][2]string{{"ike", conn}, {"child", child}, {"timeout", "-1"}} {
		if err := m.Set(kv[0], kv[1]); err != nil {
			return err
		}
	}
	out, err := c.Call(ctx, "initiate", m)
	if err != nil {
		return fmt.Errorf("cannot initiate: %w", err)
	}
	if err := out.Err(); err != nil {
		return fmt.Errorf("cannot initiate: %w", err)
	}
	return nil
}

// An ikeSA is what the worker reads of an IKE SA in a list-sa event.
type ikeSA struct {
	State       string   `vici:"state"`
	TasksQueued []string `vici:"tasks-queued"`
	TasksActive []string `vici:"tasks-active"`
	ChildSAs    map[string]struct {
		Name string `vici:"name"`
	} `vici:"child-sas"`
}

// list returns charon's IKE SAs of connection conn (list-sas with ike
// and noblock, so that an IKE SA busy in an exchange does not hold it up).
func list(ctx context.Context, c Charon, conn string) ([]ikeSA, error) {
	in := vici.NewMessage()
	for _, kv := range [][2]string{{"ike", conn}, {"noblock", "yes"}} {
		if err := in.Set(kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	var out []ikeSA
	for m, err := range c.CallStreaming(ctx, "list-sas", "list-sa", in) {
		if err != nil {
			return nil, fmt.Errorf("cannot list IKE SAs: %w", err)
		}
		sub, ok := m.Get(conn).(*vici.Message)
		if !ok {
			continue
		}
		var sa ikeSA
		if err := vici.UnmarshalMessage(sub, &sa); err != nil {
			return nil, fmt.Errorf("list-sa: IKE SA %s: %w", conn, err)
		}
		out = append(out, sa)
	}
	return out, nil
}
