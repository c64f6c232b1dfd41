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
// active or queued, and at most once per bound per tunnel. A tunnel's
// downtime counts from when the Watchdog first saw it without an IKE SA, or
// a CHILD_SA missing: between the status reads (every 10 s by default) its
// worker looks at the tunnels it last saw down every Tick, so that it
// re-initiates about After after the drop, not at the next status read
// after that. Its initiate
// reuses the IKE SA of the connection that charon holds (charon's
// reuse_ikesa, serialised per configuration by its IKE SA manager), so it
// makes no second IKE SA.
//
// It also closes duplicate IKE SAs of an always-on tunnel, which strongSwan
// 5.9 leaves when both sides initiate at the same moment and which no
// uniqueness policy removes without risking a loop with the peer (see
// duplicates).
//
// And it notices an ESTABLISHED IKE SA the peer no longer answers (see
// unanswered): a gateway back from a lost node or a cut-off finds its IKE
// SA as it left it, while the peer's DPD has long dropped its side and the
// peer ignores every request on it. charon then retransmits its DPD until
// its retransmissions run out (strongSwan's defaults: 165 s) and only then
// restarts; all that time list-sas says ESTABLISHED and INSTALLED. The
// Watchdog reports such a tunnel down (Observe) once an exchange on its IKE
// SA has gone unanswered for a fifth of Unanswered, and once for
// Unanswered closes an always-on tunnel's IKE SA and initiates the tunnel
// anew, which is what charon's dpd_action restart would do at the end of
// its retransmissions.
package watchdog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/strongswan/govici/vici"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/agent/status"
)

// Defaults of a Watchdog.
const (
	// DefaultAfter is how long an always-on tunnel or CHILD_SA may be down,
	// with charon not trying, before the Watchdog initiates it.
	DefaultAfter = 30 * time.Second
	// MaxTick is the longest Tick by default: a re-initiation comes at
	// most that late after the bound.
	MaxTick = time.Second
	// DefaultTimeout bounds the VICI calls of one re-initiation (a list-sas
	// and one initiate per CHILD_SA, each of which returns at once: charon
	// is asked not to wait for the result).
	DefaultTimeout = 10 * time.Second
	// DefaultUnanswered is how long an exchange on an ESTABLISHED IKE SA
	// may stay unanswered before the peer counts as lost to it: charon
	// sends a request at 0, 4 and 11.2 s with strongSwan's default
	// retransmissions, and a peer that holds the IKE SA answers within a
	// round trip, so 10 s without an answer is the request and its first
	// retransmission lost, not a slow peer; a single lost packet is
	// answered by 4 s and a round trip.
	DefaultUnanswered = 10 * time.Second
	// PauseAfter is how late a tick of the worker's pause detector (a
	// goroutine that does nothing else) must be for the agent to take it
	// as a pause of its own (a frozen node, a stopped process) and to list
	// every tunnel's IKE SAs at once.
	PauseAfter = 5 * time.Second
)

// Errors of the worker's VICI calls.
const (
	errList      = "cannot list the IKE SAs of connection %s"
	errListAll   = "cannot list the IKE SAs"
	errInitiate  = "cannot initiate CHILD_SA %s"
	errTerminate = "cannot close IKE SA %s"
)

// queueSize is how many jobs may wait for the worker: per tunnel at most
// one re-initiation and one duplicate check are queued or running.
const queueSize = 64

// Duplicate IKE SAs (see closeDuplicates): an ESTABLISHED tunnel is checked
// at most every dupCheckEvery, and a duplicate the gateway initiated is
// closed once the same set of IKE SAs has been seen for dupGrace (charon's
// make-before-break reauthentication holds two IKE SAs for a moment).
const (
	dupCheckEvery = 2 * time.Second
	dupGrace      = 2 * time.Second
	// peerDupRetry is how often duplicates the peer initiated are closed
	// at most.
	peerDupRetry = time.Hour
)

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
	// Tick is how often the worker lists charon's IKE SAs of the
	// always-on tunnels last seen down or with a CHILD_SA missing (one
	// list-sas for all of them; none when every tunnel is up). When zero,
	// a tenth of After, at most MaxTick.
	Tick time.Duration
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
	// AfterFunc defaults to time.AfterFunc; it schedules the second look
	// at a duplicate.
	AfterFunc func(d time.Duration, f func())
	// Unanswered is how long an exchange charon runs on an ESTABLISHED IKE
	// SA (tasks-active in list-sas: a DPD, a rekey) may stay unanswered
	// before the Watchdog closes that IKE SA of an always-on tunnel and
	// initiates the tunnel anew; the status reports the tunnel down from a
	// fifth of it on (2 s by default: a peer that holds the IKE SA answers
	// within a round trip, so the exchange's request or answer was lost and
	// nothing has been heard from the peer since). The worker lists every
	// tunnel's IKE SAs every quarter of it (every Tick while an exchange is
	// outstanding), so each comes at most a quarter of it late.
	// DefaultUnanswered when zero; negative turns it off.
	Unanswered time.Duration

	mu      sync.Mutex
	tunnels map[string]*tunnel
	// work is the current Serve's queue, nil when none runs.
	work chan job
}

// tunnel is what the Watchdog knows of one tunnel.
type tunnel struct {
	// since is when the tunnel was first seen without an IKE SA (or while
	// it had one, or when it was last re-initiated): its downtime starts
	// there. down says whether the last look saw it without one.
	since time.Time
	down  bool
	// children is when each kept-up child was first seen missing from
	// the ESTABLISHED IKE SA (or the IKE SA was established, or the child
	// was last re-initiated); a child present is not in it.
	children map[string]time.Time
	// established is whether the last look had an ESTABLISHED IKE SA.
	established bool
	// watch says the worker looks at the tunnel every Tick: it is always
	// on and the last look saw it without an ESTABLISHED IKE SA or with a
	// CHILD_SA missing.
	watch bool
	// pending is true while a re-initiation is queued or running.
	pending bool
	count   int32
	last    *metav1.Time
	// checked is when a duplicate check was last queued; dupPending is
	// true while one is queued or running; dups and dupSince are the
	// duplicate set last seen and since when.
	checked    time.Time
	dupPending bool
	dups       string
	dupSince   time.Time
	// peerClosed is when duplicates the peer initiated were last closed.
	peerClosed time.Time
	// busy maps the unique id of each ESTABLISHED IKE SA last listed with
	// an exchange active to when a listing first showed it so; silent is
	// the one of them unanswered for a fifth of Unanswered or more ("" when
	// none), which the status reports down, and silentFor how long then.
	busy      map[string]time.Time
	silent    string
	silentFor time.Duration
}

// A job is one re-initiation, of the whole tunnel (no IKE SA) or of the
// CHILD_SAs missing from its ESTABLISHED IKE SA, or one duplicate check.
type job struct {
	conn     string
	whole    bool
	children []string
	downFor  time.Duration
	// dups makes the job a duplicate check of the IKE SAs of conn
	// carrying children.
	dups bool
	// silent, when set, is the unique id of an ESTABLISHED IKE SA of conn
	// whose peer stopped answering: the job closes it and initiates
	// children anew.
	silent string
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

func (w *Watchdog) unanswered() time.Duration {
	if w.Unanswered != 0 {
		return w.Unanswered
	}
	return DefaultUnanswered
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
		if t.silent != "" && ts.IKEState == v1alpha1.IKEStateEstablished {
			// Not up: nothing was heard from the peer since.
			ts.Up = false
			if ts.LastError == "" {
				ts.LastError = fmt.Sprintf(msgSilent, t.silent, t.silentFor.Round(time.Second))
			}
		}
	}
	for name := range w.tunnels {
		if !seen[name] {
			delete(w.tunnels, name)
		}
	}
}

// msgSilent is the LastError of a tunnel whose peer stopped answering,
// when charon logged none: IKE SA unique id, how long.
const msgSilent = "the peer has not answered IKE SA #%s for %s (a DPD or another exchange): it no longer holds it or cannot be reached"

// observe updates t from ts and queues a job when one is due. w.mu is held.
func (w *Watchdog) observe(ts *v1alpha1.TunnelStatus, t *tunnel, started []string, now time.Time, after time.Duration) { //nolint:gocyclo // one rule per tunnel state, in the order charon goes through them
	present := map[string]bool{}
	for _, c := range ts.ChildSAs {
		present[c.Name] = true
	}
	established := ts.IKEState == v1alpha1.IKEStateEstablished
	var missing []string
	for _, c := range started {
		if !established || present[c] {
			delete(t.children, c)
			continue
		}
		first, ok := t.children[c]
		if !ok {
			t.children[c] = now
			continue
		}
		// A child's downtime counts from when its IKE SA was established
		// at the earliest.
		if at := ts.EstablishedAt; at != nil && at.After(first) {
			first = at.Time
			t.children[c] = first
		}
		if now.Sub(first) >= after {
			missing = append(missing, c)
		}
	}
	t.established = established
	for c := range t.children {
		if !slices.Contains(started, c) {
			delete(t.children, c)
		}
	}
	down := ts.IKEState == v1alpha1.IKEStateDown
	if !down || !t.down {
		t.since = now
	}
	t.down = down
	t.watch = len(started) > 0 && (!established || len(t.children) > 0)
	if len(started) == 0 {
		return
	}
	if established && !t.dupPending && now.Sub(t.checked) >= dupCheckEvery {
		if w.queue(job{conn: ts.Name, children: started, dups: true}) {
			t.checked, t.dupPending = now, true
		}
	}
	if t.pending {
		return
	}
	switch {
	case ts.IKEState == v1alpha1.IKEStateDown && now.Sub(t.since) >= after:
		t.pending = w.queue(job{conn: ts.Name, whole: true, children: started, downFor: now.Sub(t.since)})
	case len(missing) > 0:
		t.pending = w.queue(job{conn: ts.Name, children: missing, downFor: now.Sub(t.children[missing[0]])})
	}
}

// queue hands j to the worker if one runs and has room, and reports
// whether it did. w.mu is held.
func (w *Watchdog) queue(j job) bool {
	if w.work == nil {
		return false
	}
	select {
	case w.work <- j:
		return true
	default:
		return false
	}
}

// Serve runs the worker on c, a VICI session of its own, until ctx ends:
// it re-initiates what Observe and its own looks every Tick queue. Run one
// Serve per charon session; re-initiations queued for an earlier session
// are dropped.
func (w *Watchdog) Serve(ctx context.Context, c Charon) {
	work := make(chan job, queueSize)
	w.mu.Lock()
	w.work = work
	for _, t := range w.tunnels {
		t.pending, t.dupPending, t.dups = false, false, ""
	}
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		if w.work == work {
			w.work = nil
		}
		w.mu.Unlock()
	}()
	tick := time.NewTicker(w.tick())
	defer tick.Stop()
	paused := make(chan time.Duration, 1)
	go pauses(ctx, w.tick(), paused)
	var listened time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-work:
			w.run(ctx, c, j)
		case d := <-paused:
			// The node was frozen or the process stopped: charon most
			// likely with it, and its peers may have dropped their IKE
			// SAs meanwhile. Listen at once instead of at the next turn.
			w.log().Info("The agent was paused; checking that every peer still answers", "paused", d.Round(time.Second).String())
			if w.unanswered() > 0 {
				w.listen(ctx, c)
				listened = time.Now()
			}
		case at := <-tick.C:
			w.look(ctx, c)
			if w.unanswered() > 0 && w.listenDue(at.Sub(listened)) {
				w.listen(ctx, c)
				listened = at
			}
		}
	}
}

// pauses sends on paused (without blocking) how long the process was
// paused each time a ticker of every d fires PauseAfter or more late, until
// ctx ends. It runs on its own so that a worker busy with a slow call is
// not taken for a pause: only a process that did not run at all (frozen,
// stopped) is.
func pauses(ctx context.Context, d time.Duration, paused chan<- time.Duration) {
	tick := time.NewTicker(d)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			// Now, not the tick's time: a ticker keeps the tick it could
			// not deliver, dated when it was due.
			now := time.Now()
			if late := now.Sub(last) - d; late >= PauseAfter {
				select {
				case paused <- late:
				default:
				}
			}
			last = now
		}
	}
}

// listenDue says whether the worker lists every tunnel's IKE SAs again,
// since the last listing: every tick while an exchange is outstanding,
// else every quarter of Unanswered.
func (w *Watchdog) listenDue(since time.Duration) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range w.tunnels {
		if len(t.busy) > 0 {
			return true
		}
	}
	return since >= w.unanswered()/4
}

// listen lists the IKE SAs of every tunnel (one list-sas) and follows, for
// each, how long an exchange on an ESTABLISHED IKE SA has gone unanswered
// (see unanswered). A tunnel whose peer has not answered for a fifth of
// Unanswered is reported down at the next status read, which it asks for;
// an always-on one unanswered for Unanswered is closed and initiated anew
// by the worker.
func (w *Watchdog) listen(ctx context.Context, c Charon) {
	cctx, cancel := context.WithTimeout(ctx, w.timeout())
	defer cancel()
	sas, err := listAll(cctx, c)
	if err != nil {
		w.log().Debug("Cannot check whether the peers answer", "error", err)
		return
	}
	now, bound := w.now(), w.unanswered()
	w.mu.Lock()
	defer w.mu.Unlock()
	changed := false
	for name, t := range w.tunnels {
		if t.busy == nil {
			t.busy = map[string]time.Time{}
		}
		id, d := unanswered(t.busy, sas[name], now)
		if d < bound/5 {
			id = ""
		}
		changed = changed || id != t.silent
		t.silent, t.silentFor = id, d
		if id == "" || d < bound {
			continue
		}
		var started []string
		if w.Started != nil {
			started = w.Started(name)
		}
		if len(started) > 0 && !t.pending {
			w.log().Info("A peer stopped answering", "tunnel", name, "ike-id", id, "for", d.Round(time.Second).String())
			t.pending = w.queue(job{conn: name, whole: true, children: started, downFor: d, silent: id})
		}
	}
	if changed {
		w.refresh()
	}
}

// unanswered updates busy (see tunnel.busy) from sas, the IKE SAs of one
// tunnel listed at now, and returns the unique id of the ESTABLISHED IKE
// SA whose exchange has been active longest, and how long; "" and 0 when
// none is. An exchange is active (tasks-active) from its request until its
// answer; charon sends a DPD only after dpd_delay without a packet from
// the peer, so an active DPD means the peer has not been heard from since,
// and one that stays active that long will not be answered before
// charon's retransmissions run out. A listing that shows an IKE SA without
// an active exchange, or no longer ESTABLISHED, starts it over.
func unanswered(busy map[string]time.Time, sas []status.IKESA, now time.Time) (string, time.Duration) {
	active := map[string]bool{}
	for _, sa := range sas {
		if sa.State != v1alpha1.IKEStateEstablished || len(sa.TasksActive) == 0 {
			continue
		}
		active[sa.UniqueID] = true
		if _, ok := busy[sa.UniqueID]; !ok {
			busy[sa.UniqueID] = now
		}
	}
	longest := ""
	for id, since := range busy {
		switch {
		case !active[id]:
			delete(busy, id)
		case longest == "" || since.Before(busy[longest]) || since.Equal(busy[longest]) && id < longest:
			longest = id
		}
	}
	if longest == "" {
		return "", 0
	}
	return longest, now.Sub(busy[longest])
}

// refresh asks for a status read (Reinitiated), without blocking.
func (w *Watchdog) refresh() {
	if w.Reinitiated != nil {
		select {
		case w.Reinitiated <- struct{}{}:
		default:
		}
	}
}

func (w *Watchdog) tick() time.Duration {
	if w.Tick > 0 {
		return w.Tick
	}
	return max(min(w.after()/10, MaxTick), time.Millisecond)
}

func (w *Watchdog) timeout() time.Duration {
	if w.Timeout > 0 {
		return w.Timeout
	}
	return DefaultTimeout
}

// look lists charon's IKE SAs of the tunnels to watch (see tunnel.watch)
// that have no re-initiation pending, and observes them as a status read
// would, so that a drop is seen, and a re-initiation queued, when it
// happens rather than at the next status read.
func (w *Watchdog) look(ctx context.Context, c Charon) {
	w.mu.Lock()
	var conns []string
	for name, t := range w.tunnels {
		if t.watch && !t.pending {
			conns = append(conns, name)
		}
	}
	w.mu.Unlock()
	if len(conns) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, w.timeout())
	defer cancel()
	tunnels, err := status.Collect(cctx, c, conns, status.WithClock(w.now))
	if err != nil {
		w.log().Debug("Cannot look at the tunnels that are down", "error", err)
		return
	}
	now, after := w.now(), w.after()
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range tunnels {
		ts := &tunnels[i]
		t, ok := w.tunnels[ts.Name]
		if !ok || t.pending {
			continue
		}
		var started []string
		if w.Started != nil {
			started = w.Started(ts.Name)
		}
		w.observe(ts, t, started, now, after)
	}
}

// run checks charon again and re-initiates what j names if it still must,
// then records it; or runs j's duplicate check.
func (w *Watchdog) run(ctx context.Context, c Charon, j job) {
	cctx, cancel := context.WithTimeout(ctx, w.timeout())
	defer cancel()
	if j.dups {
		w.closeDuplicates(cctx, c, j)
		return
	}
	children, why, err := w.reinitiate(cctx, c, j)
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.tunnels[j.conn]
	if !ok {
		return
	}
	t.pending = false
	if j.silent != "" {
		// Closed, or answered after all: the next listings start over.
		delete(t.busy, j.silent)
		t.silent = ""
	}
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
	switch {
	case j.silent != "":
		what = "IKE SA #" + j.silent + " unanswered (closed)"
	case j.whole:
		what = "no IKE SA"
	}
	msg := "Re-initiated a tunnel that stayed down with charon not trying"
	if j.silent != "" {
		msg = "Re-initiated a tunnel whose peer stopped answering"
	}
	w.log().Info(msg, "tunnel", j.conn, "down", what, "for", j.downFor.Round(time.Second).String(), "children", children, "error", err)
	w.refresh()
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
	switch {
	case j.silent != "":
		if why, err = closeSilent(ctx, c, j.silent, sas); why != "" || err != nil {
			return nil, why, err
		}
	case j.whole:
		if len(sas) > 0 {
			return nil, "charon has an IKE SA of the connection now", nil
		}
	default:
		if todo, why = missing(sas, todo); why != "" {
			return nil, why, nil
		}
	}
	var errs []error
	for _, ch := range todo {
		if err := initiate(ctx, c, j.conn, ch); err != nil {
			errs = append(errs, err)
			continue
		}
		initiated = append(initiated, ch)
	}
	return initiated, "", errors.Join(errs...)
}

// missing returns which of children are missing from the ESTABLISHED IKE
// SAs of a connection, sas, or why none is to be initiated now.
func missing(sas []status.IKESA, children []string) (todo []string, why string) {
	todo = children
	established := false
	for _, sa := range sas {
		switch {
		case sa.State != v1alpha1.IKEStateEstablished:
			return nil, "charon has an IKE SA of the connection in state " + sa.State
		case len(sa.TasksActive) > 0 || len(sa.TasksQueued) > 0:
			return nil, "the IKE SA has exchanges active or queued"
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
		return nil, "the IKE SA is gone"
	}
	if len(todo) == 0 {
		return nil, "the CHILD_SAs are back"
	}
	return todo, ""
}

// closeSilent closes IKE SA id, of sas (a connection's, listed again now),
// if its exchange is still unanswered: by force, without a DELETE that the
// peer would not answer either. It returns why the tunnel is not to be
// initiated now, if it is not, and the call's error.
func closeSilent(ctx context.Context, c Charon, id string, sas []status.IKESA) (why string, err error) {
	found, others := false, false
	for _, sa := range sas {
		if sa.UniqueID != id {
			others = true
			continue
		}
		found = sa.State == v1alpha1.IKEStateEstablished && len(sa.TasksActive) > 0
	}
	if !found {
		return "the IKE SA answered or is gone", nil
	}
	if err := command(ctx, c, "terminate", "ike-id", id, "force", "yes"); err != nil {
		return "", fmt.Errorf(errTerminate+": %w", id, err)
	}
	if others {
		// Another IKE SA of the connection (a duplicate, one the peer
		// initiated) may carry the tunnel already: left to the usual rules.
		return "the connection has another IKE SA", nil
	}
	return "", nil
}

// initiate asks charon to initiate child of connection conn and to answer
// at once (timeout -1): the result shows in the status, and the worker
// never waits for a peer. charon attaches the CHILD_SA to the connection's
// existing IKE SA if there is one.
func initiate(ctx context.Context, c Charon, conn, child string) error {
	if err := command(ctx, c, "initiate", "ike", conn, "child", child, "timeout", "-1"); err != nil {
		return fmt.Errorf(errInitiate+": %w", child, err)
	}
	return nil
}

// closeDuplicates closes duplicate IKE SAs of j.conn, such as both sides
// initiating at the same moment leave, once the same set has been seen for
// dupGrace; see duplicates for which. The peer's own are closed at most
// once per peerDupRetry (t.peerClosed).
func (w *Watchdog) closeDuplicates(ctx context.Context, c Charon, j job) {
	sas, err := list(ctx, c, j.conn)
	now := w.now()
	w.mu.Lock()
	t, ok := w.tunnels[j.conn]
	if !ok {
		w.mu.Unlock()
		return
	}
	t.dupPending = false
	if err != nil {
		w.mu.Unlock()
		w.log().Debug("Cannot check a tunnel for duplicate IKE SAs", "tunnel", j.conn, "error", err)
		return
	}
	keeper, victims, peers := duplicates(sas, j.children, t.peerClosed.IsZero() || now.Sub(t.peerClosed) >= peerDupRetry)
	key := keeper + " " + strings.Join(victims, ",")
	switch {
	case len(victims) == 0:
		t.dups = ""
		w.mu.Unlock()
		return
	case t.dups != key:
		// First seen: look again after the grace, whatever the reads.
		t.dups, t.dupSince, t.dupPending = key, now, true
		w.mu.Unlock()
		after := w.AfterFunc
		if after == nil {
			after = func(d time.Duration, f func()) { time.AfterFunc(d, f) }
		}
		after(dupGrace, func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if t.dupPending = w.queue(j); !t.dupPending {
				t.dups = ""
			}
		})
		return
	case now.Sub(t.dupSince) < dupGrace:
		w.mu.Unlock()
		return
	}
	t.dups = ""
	if peers {
		t.peerClosed = now
	}
	w.mu.Unlock()
	for _, id := range victims {
		if err := terminate(ctx, c, id); err != nil {
			w.log().Info("Cannot close a duplicate IKE SA", "tunnel", j.conn, "ike-id", id, "error", err)
			continue
		}
		w.log().Info("Closed a duplicate IKE SA", "tunnel", j.conn, "ike-id", id, "kept", keeper, "initiated-by-peer", peers)
	}
}

// duplicates picks, of the IKE SAs of a connection, the one to keep and the
// ones to close (unique ids, sorted), if any: those the gateway initiated
// (ESTABLISHED or still CONNECTING) when the peer has initiated one that is
// ESTABLISHED with every one of children INSTALLED, and else, when
// peersToo, the peer's own duplicates older than its newest complete one.
// peers says the victims are the peer's.
//
// The gateway's own first: a peer that deletes duplicates itself (swanctl
// unique replace, ipsec.conf's default uniqueids=yes) deletes one of them
// 10 s later, and were it the peer's, charon here would answer with a new
// one (close_action start) that the peer deletes again, for ever
// (measured); closing the gateway's before leaves the peer nothing to
// delete. The peer's only now and then: a peer that re-creates every IKE SA
// it is told to delete (close_action start) answers with a new duplicate,
// and then keeps two until the next attempt; one that does not (swanctl's
// defaults) converges. The peer's duplicates come from charon here
// dropping its own IKE SA without telling the peer when the peer's
// IKE_AUTH carries INITIAL_CONTACT (unique no, at a simultaneous
// initiation): the peer's DPD then restarts the IKE SA it still holds.
func duplicates(sas []status.IKESA, children []string, peersToo bool) (keeper string, victims []string, peers bool) {
	var ours, theirs []status.IKESA
	for _, sa := range sas {
		switch {
		case sa.Initiator == "yes" && (sa.State == v1alpha1.IKEStateEstablished || sa.State == stateConnecting):
			ours = append(ours, sa)
		case sa.Initiator != "yes" && sa.State == v1alpha1.IKEStateEstablished && sa.Carries(children):
			theirs = append(theirs, sa)
		}
	}
	if len(theirs) == 0 {
		return "", nil, false
	}
	// Newest first: fewest seconds since established.
	slices.SortStableFunc(theirs, func(a, b status.IKESA) int {
		return cmp.Compare(status.Atoi(a.Established), status.Atoi(b.Established))
	})
	keeper = theirs[0].UniqueID
	switch {
	case len(ours) > 0:
		for _, sa := range ours {
			victims = append(victims, sa.UniqueID)
		}
	case peersToo && len(theirs) > 1:
		for _, sa := range theirs[1:] {
			victims = append(victims, sa.UniqueID)
		}
		peers = true
	}
	slices.Sort(victims)
	return keeper, victims, peers
}

// terminate asks charon to close IKE SA id (its unique id) without waiting.
func terminate(ctx context.Context, c Charon, id string) error {
	if err := command(ctx, c, "terminate", "ike-id", id, "timeout", "-1"); err != nil {
		return fmt.Errorf(errTerminate+": %w", id, err)
	}
	return nil
}

// command calls VICI command cmd with the key, value pairs kv and returns
// the call's error or the failure charon answers, unwrapped.
func command(ctx context.Context, c Charon, cmd string, kv ...string) error {
	m, err := request(kv...)
	if err != nil {
		return err
	}
	out, err := c.Call(ctx, cmd, m)
	if err != nil {
		return err
	}
	return out.Err()
}

// stateConnecting is charon's state of an IKE SA being set up.
const stateConnecting = "CONNECTING"

// list returns charon's IKE SAs of connection conn (list-sas with ike
// and noblock, so that an IKE SA busy in an exchange does not hold it up).
func list(ctx context.Context, c Charon, conn string) ([]status.IKESA, error) {
	in, err := request("ike", conn, "noblock", "yes")
	if err != nil {
		return nil, fmt.Errorf(errList+": %w", conn, err)
	}
	var out []status.IKESA
	for m, err := range c.CallStreaming(ctx, "list-sas", "list-sa", in) {
		if err != nil {
			return nil, fmt.Errorf(errList+": %w", conn, err)
		}
		sa, ok, err := status.DecodeIKESA(m, conn)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, sa)
		}
	}
	return out, nil
}

// listAll returns charon's IKE SAs by connection name (list-sas with
// noblock).
func listAll(ctx context.Context, c Charon) (map[string][]status.IKESA, error) {
	in, err := request("noblock", "yes")
	if err != nil {
		return nil, fmt.Errorf(errListAll+": %w", err)
	}
	out := map[string][]status.IKESA{}
	for m, err := range c.CallStreaming(ctx, "list-sas", "list-sa", in) {
		if err != nil {
			return nil, fmt.Errorf(errListAll+": %w", err)
		}
		for _, conn := range m.Keys() {
			sa, ok, err := status.DecodeIKESA(m, conn)
			if err != nil {
				return nil, err
			}
			if ok {
				out[conn] = append(out[conn], sa)
			}
		}
	}
	return out, nil
}

// request builds a VICI request of the key, value pairs kv; its error is
// govici's, unwrapped.
func request(kv ...string) (*vici.Message, error) {
	m := vici.NewMessage()
	for i := 0; i+1 < len(kv); i += 2 {
		if err := m.Set(kv[i], kv[i+1]); err != nil {
			return nil, err
		}
	}
	return m, nil
}
