// Package leader elects the active pod of an active/standby gateway (a
// Gateway with replicas 2) with client-go's leader election on the
// gateway's Lease, and makes sure that at no moment two pods hold the
// gateway's address: the active pod takes it (a Holder) only once it holds
// the Lease, and gives it up before the Lease can pass to the other pod.
//
// Timing: the Lease lasts LeaseDuration; the holder renews it every
// RetryPeriod and gives up (address down first, then its SAs) when it has
// not renewed it for RenewDeadline, LeaseDuration-RenewDeadline before the
// other pod may take it. A standby that sees the Lease released (a watch,
// WatchReleases) campaigns at once rather than at its next retry. A pod
// frozen while active (its node lost) finds,
// when it runs again, that it has not renewed for longer than RenewDeadline
// and gives up at once, before its links come back. On SIGTERM the active
// pod gives up and then releases the Lease, so that the standby takes over
// at once (with the watch; else within its retry) rather than a
// LeaseDuration.
//
// A pod that stops without giving up (SIGKILL, a frozen or crash-looping
// container) cannot give up anything: what it holds must expire by itself.
// After every write of the Lease by this pod, Holder.Refresh keeps it for
// another RenewDeadline (the address's lifetime in the kernel), so that it
// goes about RenewDeadline after the last renewal, before the Lease can
// pass. A refresh that fails, or that comes too late after its renewal,
// gives up.
package leader

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Default timings of the election (see the package comment). A lost node
// is taken over within LeaseDuration + RetryPeriod of its last renewal.
const (
	DefaultLeaseDuration = 6 * time.Second
	DefaultRenewDeadline = 4 * time.Second
	DefaultRetryPeriod   = time.Second
)

// Causes of a takeover, as Takeover.Cause says them.
const (
	// CauseFirst: the Lease had never been held.
	CauseFirst = "first"
	// CauseReleased: the last holder released the Lease (it stopped, as a
	// pod being replaced or deleted does).
	CauseReleased = "released"
	// CauseExpired: the last holder stopped renewing the Lease (its pod or
	// node was lost, or it could not reach the API server).
	CauseExpired = "expired"
)

// A Takeover is how this pod became active.
type Takeover struct {
	// Previous is the pod that held the Lease before, when it was not
	// released; empty otherwise.
	Previous string
	// Cause is CauseFirst, CauseReleased or CauseExpired.
	Cause string
	// At is when this pod acquired the Lease.
	At time.Time
}

// A Holder takes and gives up what only the active pod may hold: the
// gateway's address and its tunnels.
type Holder interface {
	// Take makes this pod the active one. An error gives the Lease up.
	Take(ctx context.Context) error
	// Release makes this pod a standby again. It must not wait on the API
	// server: it runs before the Lease can pass to the other pod. Errors
	// are logged; Release is called again at the next loss.
	Release(ctx context.Context) error
	// Refresh keeps what Take holds for d more from now, so that it
	// expires by itself if no refresh follows (the pod is killed or
	// frozen). It must not take again anything that is gone; an error
	// gives up (Release).
	Refresh(ctx context.Context, d time.Duration) error
}

// An Elector runs the election of one pod.
type Elector struct {
	// Lock is the gateway's Lease, with this pod's identity (its name).
	Lock resourcelock.Interface
	// Holder is what this pod takes while active.
	Holder Holder
	// LeaseDuration, RenewDeadline and RetryPeriod default to the
	// Default timings.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Active, when set, is told of every change: true with the takeover
	// once Holder.Take succeeded, false once Holder.Release returned. It is
	// called with the Elector's lock held, so that a loss of the Lease
	// cannot report false before true: it must return quickly and not call
	// the Elector.
	Active func(ctx context.Context, active bool, t Takeover)
	// Released, when set, receives when the Lease has no holder
	// (WatchReleases): a standby then ends its campaign and starts the next
	// at once, whose first try takes the released Lease, instead of at its
	// next retry, RetryPeriod to 2.2 RetryPeriod after its last (client-go's
	// jitter). The pod holding the address ignores it.
	Released <-chan struct{}
	// Keep is for the single pod of a gateway with replicas 1 (Handover),
	// which is the gateway: the Lease only hands over to that pod's
	// replacement, so a Lease it cannot renew gives nothing up (the API
	// server is out of reach, not the pod), and Holder.Release runs only
	// when Run's ctx ends. Nor does Run release at its start: a restarted
	// agent in the same pod goes on answering and renews the Lease under
	// the same identity.
	Keep bool
	Log  logging.Logger

	// mu serialises Holder's calls.
	mu sync.Mutex
	// held: Holder.Take succeeded and Holder.Release has not run since.
	held bool

	// rmu guards renewed, when the last successful write of the Lease by
	// this pod started, last, the last record read of the Lease that
	// named another holder or none, and read, whether a record was read.
	rmu     sync.Mutex
	renewed time.Time
	last    resourcelock.LeaderElectionRecord
	read    bool
}

// Read says whether this pod has read the Lease: the API server answered
// and the Lease exists.
func (e *Elector) Read() bool {
	e.rmu.Lock()
	defer e.rmu.Unlock()
	return e.read
}

// Run runs the election until ctx ends: it gives up the address before it
// can lose the Lease, and when ctx ends gives it up and then releases the
// Lease. Holder.Release runs once at the start, so that a restarted agent
// holds nothing it does not hold the Lease for.
func (e *Elector) Run(ctx context.Context) error {
	e.defaults()
	if !e.Keep {
		if err := e.Holder.Release(ctx); err != nil {
			e.Log.Info("Cannot give up the gateway's address at start", "error", err)
		}
	}
	for ctx.Err() == nil {
		if err := e.term(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (e *Elector) defaults() {
	if e.LeaseDuration == 0 {
		e.LeaseDuration, e.RenewDeadline, e.RetryPeriod = DefaultLeaseDuration, DefaultRenewDeadline, DefaultRetryPeriod
	}
	if e.Log == nil {
		e.Log = logging.NewNopLogger()
	}
}

// errLate: the refresh ended so long after its renewal started that the
// address, kept for another RenewDeadline, could outlive the Lease.
const errLate = "the refresh ended later than the slack after the Lease's renewal started"

// A term is one client-go LeaderElector's life: it campaigns, leads until
// it cannot renew or ctx ends, and ends. closed says that this term gave
// up: it must not take the address again.
type term struct{ closed bool }

func (e *Elector) term(ctx context.Context) error {
	// The elector's context is not ctx: when ctx ends, the address must go
	// before the Lease is released (release).
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	t := &term{}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          &lock{Interface: e.Lock, e: e, t: t, end: cancel},
		LeaseDuration: e.LeaseDuration, RenewDeadline: e.RenewDeadline, RetryPeriod: e.RetryPeriod,
		Name: e.Lock.Describe(),
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) { e.lead(lctx, t, cancel) },
			OnStoppedLeading: func() { e.release(ctx, t, "the Lease could not be renewed") },
		},
	})
	if err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		le.Run(ectx)
	}()
	for ctx.Err() == nil {
		select {
		case <-done:
			return nil
		case <-e.Released:
			if e.standby(t) {
				e.Log.Debug("The Lease has no holder: campaigning again at once")
				cancel()
				<-done
				return nil
			}
		case <-ctx.Done():
		}
	}
	held := e.release(ctx, t, "the agent is stopping")
	cancel()
	<-done
	if held {
		e.releaseLease(ctx)
	}
	return nil
}

// standby closes term t and says true when this pod does not hold the
// address, so that the term can end without taking it.
func (e *Elector) standby(t *term) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.held {
		return false
	}
	t.closed = true
	return true
}

// lead takes the address for term t, then gives it up as soon as the Lease
// was not renewed for RenewDeadline (end ends the term).
func (e *Elector) lead(ctx context.Context, t *term, end context.CancelFunc) {
	e.mu.Lock()
	if t.closed || ctx.Err() != nil {
		e.mu.Unlock()
		return
	}
	tk := e.takeover()
	if err := e.Holder.Take(ctx); err != nil {
		e.Log.Info("Cannot become the active gateway pod; giving the Lease up", "error", err)
		if rerr := e.Holder.Release(context.WithoutCancel(ctx)); rerr != nil {
			e.Log.Info("Cannot give up the gateway's address", "error", rerr)
		}
		t.closed = true
		e.mu.Unlock()
		end()
		return
	}
	e.held = true
	if e.Active != nil {
		e.Active(ctx, true, tk)
	}
	e.mu.Unlock()
	if e.Keep {
		e.Log.Info("Holding the Lease: answering for the gateway's address", "cause", tk.Cause, "previous", tk.Previous)
	} else {
		e.Log.Info("Active: holding the gateway's address", "cause", tk.Cause, "previous", tk.Previous)
	}
	tick := time.NewTicker(e.RetryPeriod / 4)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if e.overdue() {
				e.release(ctx, t, "the Lease was not renewed within the renew deadline")
				end()
				return
			}
		}
	}
}

// overdue says whether the Lease was last renewed longer than
// RenewDeadline ago (monotonic time: a frozen process finds it so).
func (e *Elector) overdue() bool {
	e.rmu.Lock()
	defer e.rmu.Unlock()
	return time.Since(e.renewed) > e.RenewDeadline
}

// release gives up the address of term t, once; it returns whether this
// pod held it.
func (e *Elector) release(ctx context.Context, t *term, why string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.releaseLocked(ctx, t, why)
}

// releaseLocked is release with e.mu held. With Keep it only ends t while
// ctx has not ended.
func (e *Elector) releaseLocked(ctx context.Context, t *term, why string) bool {
	t.closed = true
	held := e.held
	if !held {
		return false
	}
	if e.Keep && ctx.Err() == nil {
		e.Log.Info("Still answering for the gateway's address as its only pod, without the Lease", "reason", why)
		return false
	}
	if err := e.Holder.Release(context.WithoutCancel(ctx)); err != nil {
		e.Log.Info("Cannot give up the gateway's address", "error", err)
	}
	e.held = false
	if e.Active != nil {
		e.Active(ctx, false, Takeover{})
	}
	if e.Keep {
		e.Log.Info("Gave up answering for the gateway's address", "reason", why)
	} else {
		e.Log.Info("Standby: gave up the gateway's address", "reason", why)
	}
	return true
}

// refresh keeps the address of term t for another RenewDeadline after this
// pod renewed the Lease in a write that started at start. The other pod
// may take the Lease LeaseDuration after the write, and the address lives
// RenewDeadline (and the kernel's rounding, under a second) after the
// refresh, so a refresh must end within slack of start. One that would
// start later is skipped: the address keeps the lifetime of the last
// refresh, which an earlier write covers (the renewal waited on a Take or
// the agent was frozen). One that fails or ended later gives the address
// up and ends the term. Under e.mu, so that nothing is refreshed after a
// release or before a take.
func (e *Elector) refresh(ctx context.Context, t *term, end context.CancelFunc, start time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.held || t.closed || time.Since(start) > e.slack() {
		return
	}
	err := e.Holder.Refresh(ctx, e.RenewDeadline)
	if err == nil && time.Since(start) > e.slack() {
		err = errors.New(errLate)
	}
	if err != nil {
		e.releaseLocked(ctx, t, "cannot keep the gateway's address: "+err.Error())
		end()
	}
}

// slack is the longest a renewal and its refresh may take, from the start
// of the write: half of what LeaseDuration leaves after RenewDeadline (1 s
// with the defaults), the other half for the kernel's rounding.
func (e *Elector) slack() time.Duration { return (e.LeaseDuration - e.RenewDeadline) / 2 }

// releaseLease hands the Lease over after the address went: it empties the
// holder, as client-go's ReleaseOnCancel does, but only while this pod's
// hold is still valid (renewed within RenewDeadline) and the Lease still
// names it. client-go's own release writes over the Lease whoever holds it.
func (e *Elector) releaseLease(ctx context.Context) {
	if e.overdue() {
		return
	}
	// ctx has ended (the agent stops): the release has its own deadline.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.RenewDeadline)
	defer cancel()
	rec, _, err := e.Lock.Get(ctx)
	if err != nil || rec.HolderIdentity != e.Lock.Identity() {
		return
	}
	now := rec.RenewTime
	now.Time = time.Now()
	if err := e.Lock.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions: rec.LeaderTransitions, LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now,
	}); err != nil {
		e.Log.Info("Cannot release the Lease; the standby takes over when it expires", "error", err)
		return
	}
	e.Log.Info("Released the Lease")
}

// takeover says how this pod got the Lease, from the last record read
// that did not name it.
func (e *Elector) takeover() Takeover {
	e.rmu.Lock()
	defer e.rmu.Unlock()
	tk := Takeover{At: e.renewed}
	switch {
	case e.last.HolderIdentity != "" && e.last.HolderIdentity != e.Lock.Identity():
		tk.Previous, tk.Cause = e.last.HolderIdentity, CauseExpired
	case e.last.AcquireTime.IsZero():
		tk.Cause = CauseFirst
	default:
		tk.Cause = CauseReleased
	}
	return tk
}

// lock is the Lease of one term, recording for its Elector the last
// record read and when the last successful write started, and refreshing
// the address after each successful write.
type lock struct {
	resourcelock.Interface
	e   *Elector
	t   *term
	end context.CancelFunc
}

func (l *lock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	if err == nil {
		l.e.rmu.Lock()
		l.e.read = true
		if rec.HolderIdentity != l.Identity() {
			l.e.last = *rec
		}
		l.e.rmu.Unlock()
	}
	return rec, raw, err
}

func (l *lock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, func() error { return l.Interface.Create(ctx, r) })
}

func (l *lock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, func() error { return l.Interface.Update(ctx, r) })
}

func (l *lock) write(ctx context.Context, f func() error) error {
	start := time.Now()
	err := f()
	if err == nil {
		l.e.rmu.Lock()
		l.e.renewed = start
		l.e.rmu.Unlock()
		l.e.refresh(ctx, l.t, l.end, start)
	}
	return err
}
