package leader

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/vishvananda/netlink"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/ipsecgw/provider-ipsec/internal/contract"
)

// memLease is a Lease in memory shared by the locks of several pods, with
// the API server's optimistic concurrency: a write must carry the version
// its pod last read or wrote.
type memLease struct {
	mu      sync.Mutex
	rec     resourcelock.LeaderElectionRecord
	version int
	// watchers receive when a write leaves the Lease without holder, as
	// WatchReleases' channels do.
	watchers []chan struct{}
}

// watch returns a channel that receives when the Lease is released.
func (l *memLease) watch() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := make(chan struct{}, 1)
	l.watchers = append(l.watchers, ch)
	return ch
}

// memLock is one pod's view of a memLease; down makes its calls fail, as
// a pod cut off from the API server.
type memLock struct {
	l    *memLease
	id   string
	seen int
	down bool
	// gets counts the reads, and read receives at the first.
	gets int
	read chan struct{}
	mu   sync.Mutex
}

var errCut = errors.New("cut off")

func (m *memLock) cut(v bool) { m.mu.Lock(); m.down = v; m.mu.Unlock() }
func (m *memLock) isDown() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.down
}

func (m *memLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	if m.isDown() {
		return nil, nil, errCut
	}
	m.mu.Lock()
	if m.gets++; m.gets == 1 && m.read != nil {
		close(m.read)
	}
	m.mu.Unlock()
	m.l.mu.Lock()
	defer m.l.mu.Unlock()
	m.seen = m.l.version
	r := m.l.rec
	return &r, []byte(r.HolderIdentity + r.RenewTime.String()), nil
}

func (m *memLock) Create(context.Context, resourcelock.LeaderElectionRecord) error {
	return errors.New("the Lease exists")
}

func (m *memLock) Update(_ context.Context, r resourcelock.LeaderElectionRecord) error {
	if m.isDown() {
		return errCut
	}
	m.l.mu.Lock()
	defer m.l.mu.Unlock()
	if m.seen != m.l.version {
		return errors.New("conflict")
	}
	m.l.rec, m.l.version = r, m.l.version+1
	m.seen = m.l.version
	if r.HolderIdentity == "" {
		for _, w := range m.l.watchers {
			select {
			case w <- struct{}{}:
			default:
			}
		}
	}
	return nil
}

func (m *memLock) RecordEvent(string) {}
func (m *memLock) Identity() string   { return m.id }
func (m *memLock) Describe() string   { return "test/vpn" }

// log is the order in which the pods took and released the address, and
// how many times two held it at once; refreshes are counted, not listed:
// by the pod holding the address, and by one that did not.
type log struct {
	mu                 sync.Mutex
	events             []string
	holding            map[string]bool
	overlaps           int
	refreshes, strayed int
}

func (l *log) add(pod, what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if what == "refresh" {
		if l.holding[pod] {
			l.refreshes++
		} else {
			l.strayed++
		}
		return
	}
	if what == "take" {
		l.holding[pod] = true
		if len(l.holding) > 1 {
			l.overlaps++
		}
	} else {
		delete(l.holding, pod)
	}
	l.events = append(l.events, pod+" "+what)
}

func (l *log) holder() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p := range l.holding {
		return p
	}
	return ""
}

type recHolder struct {
	pod string
	l   *log
}

func (h recHolder) Take(context.Context) error    { h.l.add(h.pod, "take"); return nil }
func (h recHolder) Release(context.Context) error { h.l.add(h.pod, "release"); return nil }
func (h recHolder) Refresh(context.Context, time.Duration) error {
	h.l.add(h.pod, "refresh")
	return nil
}

// Short timings: client-go writes the Lease's duration in whole seconds.
const (
	lease, renew, retry = time.Second, 700 * time.Millisecond, 200 * time.Millisecond
)

type pod struct {
	lock *memLock
	stop context.CancelFunc
	done chan struct{}
	mu   sync.Mutex
	tks  []Takeover
}

func start(l *memLease, lg *log, id string) *pod {
	return startElector(l, lg, id, &Elector{LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry})
}

// startElector runs e, with its Lock (on l), Holder and Active set, as pod
// id.
func startElector(l *memLease, lg *log, id string, e *Elector) *pod {
	p := &pod{lock: &memLock{l: l, id: id, read: make(chan struct{})}, done: make(chan struct{})}
	e.Lock, e.Holder = p.lock, recHolder{pod: id, l: lg}
	e.Active = func(_ context.Context, active bool, t Takeover) {
		if active {
			p.mu.Lock()
			p.tks = append(p.tks, t)
			p.mu.Unlock()
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.stop = cancel
	go func() { defer close(p.done); _ = e.Run(ctx) }()
	return p
}

func (p *pod) causes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var c []string
	for _, t := range p.tks {
		c = append(c, t.Cause+" "+t.Previous)
	}
	return c
}

func waitFor(t *testing.T, lg *log, pod string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); lg.holder() != pod; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s does not hold the address; events %v", pod, lg.events)
		}
	}
}

// TestElector proves the election's order of events: the address is taken
// only with the Lease, given up before the Lease can pass, and a pod
// that stops hands over at once.
func TestElector(t *testing.T) {
	cases := map[string]struct {
		reason string
		// act does to a, the active pod, and b what the case is about and
		// returns the pod expected to hold the address then.
		act        func(a, b *pod) string
		wantEvents []string
		wantA      []string
		wantB      []string
	}{
		"Standby": {
			reason:     "The second pod stays standby while the first renews: each releases once at start, the first takes the address.",
			act:        func(a, b *pod) string { time.Sleep(2 * lease); return "a" },
			wantEvents: []string{"a release", "a take", "b release"},
			wantA:      []string{"first "},
		},
		"CutOff": {
			reason: "The active pod cut off from the API server gives the address up before the other takes it (the Lease expired), and does not take it back when it is reachable again.",
			act: func(a, b *pod) string {
				a.lock.cut(true)
				time.Sleep(2 * lease)
				a.lock.cut(false)
				time.Sleep(2 * lease)
				return "b"
			},
			wantEvents: []string{"a release", "a take", "b release", "a release", "b take"},
			wantA:      []string{"first "},
			wantB:      []string{"expired a"},
		},
		"Stopped": {
			reason: "The active pod that stops gives the address up, then releases the Lease: the other takes over with cause released.",
			act: func(a, b *pod) string {
				time.Sleep(lease)
				a.stop()
				<-a.done
				return "b"
			},
			wantEvents: []string{"a release", "a take", "b release", "a release", "b take"},
			wantA:      []string{"first "},
			wantB:      []string{"released "},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := &memLease{}
			lg := &log{holding: map[string]bool{}}
			a := start(l, lg, "a")
			waitFor(t, lg, "a")
			b := start(l, lg, "b")
			want := tc.act(a, b)
			waitFor(t, lg, want)
			a.stop()
			b.stop()
			<-a.done
			<-b.done
			lg.mu.Lock()
			events, overlaps, refreshes, strayed := lg.events, lg.overlaps, lg.refreshes, lg.strayed
			lg.mu.Unlock()
			// Both stopped: the last holder released; drop what stopping added.
			events = events[:len(tc.wantEvents)]
			if diff := cmp.Diff(tc.wantEvents, events); diff != "" {
				t.Errorf("%s\nevents: -want, +got:\n%s", tc.reason, diff)
			}
			if overlaps != 0 {
				t.Errorf("%s\ntwo pods held the address at once %d time(s)", tc.reason, overlaps)
			}
			if refreshes == 0 || strayed != 0 {
				t.Errorf("%s\nthe address was refreshed %d time(s) by its holder, %d by a pod not holding it; want some, and none", tc.reason, refreshes, strayed)
			}
			if diff := cmp.Diff(tc.wantA, a.causes()); diff != "" {
				t.Errorf("%s\na's takeovers: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantB, b.causes()); diff != "" {
				t.Errorf("%s\nb's takeovers: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestKeep proves the single pod's handover (Elector.Keep): the pod gives
// nothing up while it runs, not at its start nor when it cannot renew the
// Lease, and when it stops it gives up first and then releases the Lease,
// which its replacement takes only then.
func TestKeep(t *testing.T) {
	cases := map[string]struct {
		reason string
		// act does to a, the pod holding the Lease, and b, its
		// replacement (nil: none) what the case is about and returns the
		// pod expected to hold the address then.
		act        func(t *testing.T, l *memLease, lg *log, a *pod) string
		wantEvents []string
		wantB      []string
	}{
		"CutOff": {
			reason: "The only pod cut off from the API server goes on answering, and holds the Lease again once it is reachable.",
			act: func(_ *testing.T, _ *memLease, _ *log, a *pod) string {
				a.lock.cut(true)
				time.Sleep(2 * lease)
				a.lock.cut(false)
				time.Sleep(2 * lease)
				return "a"
			},
			wantEvents: []string{"a take", "a take"},
		},
		"Replaced": {
			reason: "The replacement takes nothing while the pod runs; the pod gives up when it stops, then releases the Lease, and only then does the replacement take it.",
			act: func(t *testing.T, l *memLease, lg *log, a *pod) string {
				b := startKeep(l, lg, "b")
				t.Cleanup(func() { b.stop(); <-b.done })
				time.Sleep(2 * lease)
				a.stop()
				<-a.done
				waitFor(t, lg, "b")
				if diff := cmp.Diff([]string{"released "}, b.causes()); diff != "" {
					t.Errorf("b's takeovers: -want, +got:\n%s", diff)
				}
				return "b"
			},
			wantEvents: []string{"a take", "a release", "b take"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := &memLease{}
			lg := &log{holding: map[string]bool{}}
			a := startKeep(l, lg, "a")
			waitFor(t, lg, "a")
			want := tc.act(t, l, lg, a)
			waitFor(t, lg, want)
			a.stop()
			<-a.done
			lg.mu.Lock()
			events, overlaps := lg.events, lg.overlaps
			lg.mu.Unlock()
			if len(events) > len(tc.wantEvents) {
				events = events[:len(tc.wantEvents)] // what stopping added
			}
			if diff := cmp.Diff(tc.wantEvents, events); diff != "" {
				t.Errorf("%s\nevents: -want, +got:\n%s", tc.reason, diff)
			}
			if overlaps != 0 {
				t.Errorf("%s\ntwo pods held the address at once %d time(s)", tc.reason, overlaps)
			}
		})
	}
}

func startKeep(l *memLease, lg *log, id string) *pod {
	return startElector(l, lg, id, &Elector{LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry, Keep: true})
}

// TestReleasedWatched proves that a standby told of the Lease's release
// (Elector.Released) takes it at once, not at its next retry: with a
// retry period of 3 s, the standby, which tried just before the active
// pod stopped, holds the address within 2 s of that try (without the
// signal it could not before 3 s), with cause released, and the pods
// never both hold it. A signal while it holds the address changes
// nothing.
func TestReleasedWatched(t *testing.T) {
	const lease, renew, retry = 5 * time.Second, 4 * time.Second, 3 * time.Second
	l := &memLease{}
	lg := &log{holding: map[string]bool{}}
	a := startElector(l, lg, "a", &Elector{LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry, Released: l.watch()})
	waitFor(t, lg, "a")
	b := startElector(l, lg, "b", &Elector{LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry, Released: l.watch()})
	<-b.lock.read
	tried := time.Now()
	a.stop()
	<-a.done
	for lg.holder() != "b" {
		if time.Since(tried) > 2*time.Second {
			t.Fatalf("b does not hold the address %s after its last try and a's release; events %v", time.Since(tried).Round(time.Millisecond), lg.events)
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(tried)
	// The signal again, while b holds the address: b keeps it.
	l.mu.Lock()
	for _, w := range l.watchers {
		select {
		case w <- struct{}{}:
		default:
		}
	}
	l.mu.Unlock()
	time.Sleep(100 * time.Millisecond)
	b.stop()
	<-b.done
	lg.mu.Lock()
	events, overlaps := lg.events, lg.overlaps
	lg.mu.Unlock()
	want := []string{"a release", "a take", "b release", "a release", "b take", "b release"}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events (b took over %s after its last try): -want, +got:\n%s", took.Round(time.Millisecond), diff)
	}
	if overlaps != 0 {
		t.Errorf("two pods held the address at once %d time(s)", overlaps)
	}
	if diff := cmp.Diff([]string{"released "}, b.causes()); diff != "" {
		t.Errorf("b's takeovers: -want, +got:\n%s", diff)
	}
}

func TestTakeover(t *testing.T) {
	at := metav1.NewTime(time.Unix(1795990000, 0))
	cases := map[string]struct {
		reason string
		last   resourcelock.LeaderElectionRecord
		want   Takeover
	}{
		"Never": {
			reason: "A Lease that was never held (the provider's, without holder) is a first takeover.",
			want:   Takeover{Cause: CauseFirst},
		},
		"Released": {
			reason: "A Lease without holder that was acquired before was released.",
			last:   resourcelock.LeaderElectionRecord{AcquireTime: at, RenewTime: at, LeaseDurationSeconds: 1},
			want:   Takeover{Cause: CauseReleased},
		},
		"Expired": {
			reason: "A Lease that still named another pod expired: that pod is the previous one.",
			last:   resourcelock.LeaderElectionRecord{HolderIdentity: "vpn-a", AcquireTime: at, RenewTime: at},
			want:   Takeover{Cause: CauseExpired, Previous: "vpn-a"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := &Elector{Lock: &memLock{id: "vpn-b"}, last: tc.last}
			if diff := cmp.Diff(tc.want, e.takeover()); diff != "" {
				t.Errorf("%s\ntakeover(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestGARP(t *testing.T) {
	mac, _ := net.ParseMAC("fa:16:3e:00:00:0a")
	got := garp(mac, netip.MustParseAddr("10.20.0.10"))
	want := []byte{
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfa, 0x16, 0x3e, 0, 0, 0x0a, 0x08, 0x06, // Ethernet: broadcast from the MAC, ARP
		0, 1, 0x08, 0, 6, 4, 0, 1, // Ethernet/IPv4, request
		0xfa, 0x16, 0x3e, 0, 0, 0x0a, 10, 20, 0, 10, // sender: the MAC and the address
		0, 0, 0, 0, 0, 0, 10, 20, 0, 10, // target: the address itself (gratuitous)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the gratuitous ARP request for 10.20.0.10 from fa:16:3e:00:00:0a: -want, +got:\n%s", diff)
	}
}

// stepHolder records the calls to it, with Refresh's argument; Refresh
// takes took and returns err.
type stepHolder struct {
	calls []string
	took  time.Duration
	err   error
}

func (h *stepHolder) Take(context.Context) error    { h.calls = append(h.calls, "take"); return nil }
func (h *stepHolder) Release(context.Context) error { h.calls = append(h.calls, "release"); return nil }
func (h *stepHolder) Refresh(_ context.Context, d time.Duration) error {
	h.calls = append(h.calls, "refresh "+d.String())
	time.Sleep(h.took)
	return h.err
}

// TestRefresh proves the order of a Lease write, the address's refresh and
// its release: only a successful write by the pod that holds the address
// refreshes it, for RenewDeadline; nothing is refreshed after a release,
// also one that runs while the write is under way, nor after a write that
// took longer than the slack; a refresh that fails, or that ends later
// than the slack, gives the address up and ends the term.
func TestRefresh(t *testing.T) {
	// A slack of 500 ms, which a busy machine's scheduling stays under.
	const lease, renew = 2 * time.Second, time.Second
	slack := (lease - renew) / 2
	type want struct {
		calls []string
		held  bool
		ended bool
		err   error
	}
	cases := map[string]struct {
		reason   string
		held     bool
		closed   bool
		writeErr error
		// wrote is how long the write takes.
		wrote   time.Duration
		holder  stepHolder
		release bool
		want    want
	}{
		"Held": {
			reason: "A successful write by the holder keeps the address for the renew deadline.",
			held:   true,
			want:   want{calls: []string{"refresh 1s"}, held: true},
		},
		"NotHeld": {
			reason: "A write before Take (the acquiring one) or after Release refreshes nothing: no address comes back.",
			want:   want{},
		},
		"Closed": {
			reason: "A write in a term that gave up refreshes nothing.",
			closed: true,
			want:   want{},
		},
		"WriteFailed": {
			reason:   "A failed write is no renewal: nothing is refreshed, and the address expires unless a later write succeeds.",
			held:     true,
			writeErr: errCut,
			want:     want{held: true, err: errCut},
		},
		"RefreshFailed": {
			reason: "A refresh that fails (the address is gone or expiring) counts as not held: the address is given up and the term ends.",
			held:   true,
			holder: stepHolder{err: errors.New("the address is gone")},
			want:   want{calls: []string{"refresh 1s", "release"}, ended: true},
		},
		"LateWrite": {
			reason: "A write that took longer than the slack: the address, kept for the renew deadline from now, could outlive the Lease; not refreshed, it keeps the lifetime an earlier write covers.",
			held:   true,
			wrote:  slack + 50*time.Millisecond,
			want:   want{held: true},
		},
		"LateRefresh": {
			reason: "A refresh that ends later than the slack after the write started (the agent was frozen in it) gives the address up at once.",
			held:   true,
			holder: stepHolder{took: slack + 50*time.Millisecond},
			want:   want{calls: []string{"refresh 1s", "release"}, ended: true},
		},
		"ReleaseDuringWrite": {
			reason:  "A release that holds the Elector while a write is under way: the write's refresh comes after the release and refreshes nothing.",
			held:    true,
			release: true,
			want:    want{calls: []string{"release"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := tc.holder
			e := &Elector{Lock: &memLock{id: "vpn-a"}, Holder: &h, LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry, held: tc.held}
			e.defaults()
			tm := &term{closed: tc.closed}
			ended := false
			l := &lock{Interface: e.Lock, e: e, t: tm, end: func() { ended = true }}
			write := func() error {
				return l.write(context.Background(), func() error { time.Sleep(tc.wrote); return tc.writeErr })
			}
			var err error
			if tc.release {
				e.mu.Lock()
				done := make(chan error, 1)
				go func() { done <- write() }()
				time.Sleep(20 * time.Millisecond)
				e.releaseLocked(context.Background(), tm, "test")
				e.mu.Unlock()
				err = <-done
			} else {
				err = write()
			}
			got := want{calls: h.calls, held: e.held, ended: ended, err: err}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), cmpopts.EquateErrors(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestRefreshable(t *testing.T) {
	gwIP := netip.MustParseAddr("10.20.0.10")
	// As netlink lists them: 4-byte addresses with their prefix.
	gwNet := &net.IPNet{IP: net.IP(gwIP.AsSlice()), Mask: net.CIDRMask(24, 32)}
	otherNet := &net.IPNet{IP: net.IPv4(100, 64, 0, 1).To4(), Mask: net.CIDRMask(10, 32)}
	cases := map[string]struct {
		reason string
		all    []netlink.Addr
		want   error
	}{
		"Fresh": {
			reason: "The gateway's address with 3 s left, beside another: refreshable.",
			all:    []netlink.Addr{{IPNet: gwNet, ValidLft: 3}, {IPNet: otherNet, ValidLft: 3}},
		},
		"Permanent": {
			reason: "A permanent address (an Up rendered before addresses had a lifetime) is refreshable: the refresh gives it one.",
			all:    []netlink.Addr{{IPNet: gwNet, ValidLft: math.MaxUint32}},
		},
		"Gone": {
			reason: "The kernel removed the gateway's address (with its routes): a refresh would add it back without them.",
			all:    []netlink.Addr{{IPNet: otherNet, ValidLft: 3}},
			want:   errors.New(errNoAddress),
		},
		"Expiring": {
			reason: "Less than 2 s left: the address may be gone before the refresh reaches the kernel.",
			all:    []netlink.Addr{{IPNet: gwNet, ValidLft: 1}},
			want:   errors.New(errExpiring),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := refreshable(tc.all, gwIP)
			if diff := cmp.Diff(fmt.Sprint(tc.want), fmt.Sprint(err)); diff != "" {
				t.Errorf("%s\nrefreshable(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestAddressLifetime: the lifetime the provider renders into the Up
// script is the renew deadline the agent refreshes it for, so that the
// address is never kept longer before the first refresh than after.
func TestAddressLifetime(t *testing.T) {
	if got := contract.AddressLifetime * time.Second; got != DefaultRenewDeadline {
		t.Errorf("contract.AddressLifetime %s, want the renew deadline %s", got, DefaultRenewDeadline)
	}
}
