package status

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/strongswan/govici/vici"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/agent/vicitest"
)

// fakeSession is a fakeCaller that also delivers events.
type fakeSession struct {
	fakeCaller
	mu         sync.Mutex
	subscribed []string
	ch         chan<- vici.Event
}

func (f *fakeSession) Subscribe(events ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subscribed = append(f.subscribed, events...)
	return nil
}

func (f *fakeSession) NotifyEvents(c chan<- vici.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ch = c
}

func (f *fakeSession) StopEvents(chan<- vici.Event) {}

func logEv(ikeName, id, text string) vici.Event {
	return vici.Event{Name: "log", Message: msg("group", "IKE", "level", "1", "thread", "7",
		"ikesa-name", ikeName, "ikesa-uniqueid", id, "msg", text)}
}

func updown(name, conn string, up bool) vici.Event {
	m := vici.NewMessage()
	if up {
		_ = m.Set("up", "yes")
	}
	_ = m.Set(conn, ike("1", "ESTABLISHED", "1"))
	return vici.Event{Name: name, Message: m}
}

func TestWatcherLastError(t *testing.T) {
	conns := []*vici.Message{
		msg("peer1", msg("local_addrs", []string{"198.51.100.66"}, "remote_addrs", []string{"203.0.113.2"})),
		msg("peer2", msg("local_addrs", []string{"198.51.100.66"}, "remote_addrs", []string{"203.0.113.0/28"})),
		msg("any", msg("local_addrs", []string{"198.51.100.66"}, "remote_addrs", []string{"%any"})),
		msg("other", msg("remote_addrs", []string{"203.0.113.2"})),
	}
	cases := map[string]struct {
		reason  string
		events  []vici.Event
		want    map[string]string
		refresh []bool
	}{
		"InitiatorAuth": {
			reason:  "An error notify received for a named IKE SA is its connection's last error.",
			events:  []vici.Event{logEv("peer1", "4", "received AUTHENTICATION_FAILED notify error"), updown("ike-updown", "peer1", false)},
			want:    map[string]string{"peer1": ErrAuthenticationFailed},
			refresh: []bool{true, true},
		},
		"ResponderUnnamed": {
			reason: "A responder's IKE_SA_INIT failure is attributed by the peer's address to every configured connection naming it.",
			events: []vici.Event{
				logEv(unnamed, "9", "203.0.113.2 is initiating an IKE_SA"),
				logEv(unnamed, "9", "received proposals unacceptable"),
				logEv(unnamed, "9", "generating IKE_SA_INIT response 0 [ N(NO_PROP) ]"),
			},
			want:    map[string]string{"peer1": ErrNoProposalChosen, "peer2": ErrNoProposalChosen},
			refresh: []bool{false, false, true},
		},
		"UnnamedUnknownPeer": {
			reason:  "A failure of an unnamed IKE SA whose peer is unknown is not attributed.",
			events:  []vici.Event{logEv(unnamed, "9", "generating IKE_SA_INIT response 0 [ N(NO_PROP) ]")},
			want:    map[string]string{},
			refresh: []bool{false},
		},
		"ClearedByChildUp": {
			reason: "A CHILD_SA coming up clears its connection's last error, not others'.",
			events: []vici.Event{
				logEv("peer1", "4", "received AUTHENTICATION_FAILED notify error"),
				logEv("peer2", "5", "generating IKE_AUTH response 1 [ N(AUTH_FAILED) ]"),
				updown("ike-updown", "peer1", true),
				updown("child-updown", "peer1", true),
			},
			want:    map[string]string{"peer2": ErrAuthenticationFailed},
			refresh: []bool{true, true, true, true},
		},
		"LastWins": {
			reason: "The last error reported is kept.",
			events: []vici.Event{
				logEv("peer1", "4", "received AUTHENTICATION_FAILED notify error"),
				logEv("peer1", "5", "received NO_PROPOSAL_CHOSEN notify, no CHILD_SA built"),
			},
			want:    map[string]string{"peer1": ErrNoProposalChosen},
			refresh: []bool{true, true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := &fakeSession{fakeCaller: fakeCaller{events: map[string][]*vici.Message{"list-conns": conns}}}
			w := &Watcher{Events: s, Caller: s, Conns: func() []string { return []string{"peer1", "peer2", "any"} }}
			var refresh []bool
			for _, e := range tc.events {
				refresh = append(refresh, w.handle(context.Background(), e))
			}
			if diff := cmp.Diff(tc.want, w.LastErrors()); diff != "" {
				t.Errorf("\n%s\nLastErrors(): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.refresh, refresh); diff != "" {
				t.Errorf("\n%s\nhandle(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestWatcherRun checks that Run reads the status at the start, again soon
// after an ike-updown event (not waiting for the poll), offers it again
// when the Sink asks for a retry, and stops when the event stream closes.
func TestWatcherRun(t *testing.T) {
	s := &fakeSession{fakeCaller: fakeCaller{events: map[string][]*vici.Message{
		"list-sas": {msg("peer1", ike("1", "ESTABLISHED", "10"))},
	}}}
	var mu sync.Mutex
	var got [][]v1alpha1.TunnelStatus
	sunk := make(chan struct{}, 10)
	retries := 1
	w := &Watcher{
		Events: s,
		Caller: s,
		Conns:  func() []string { return []string{"peer1"} },
		Poll:   time.Hour,
		Settle: time.Millisecond,
		Now:    func() time.Time { return now },
		Sink: func(_ context.Context, ts []v1alpha1.TunnelStatus) (time.Duration, error) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, ts)
			sunk <- struct{}{}
			if retries > 0 {
				retries--
				return time.Millisecond, nil
			}
			return 0, nil
		},
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	wait := func(what string) {
		t.Helper()
		select {
		case <-sunk:
		case <-time.After(5 * time.Second):
			t.Fatalf("no status read %s", what)
		}
	}
	wait("at the start")
	wait("on the retry the Sink asked for")
	s.mu.Lock()
	ch := s.ch
	s.mu.Unlock()
	ch <- logEv("peer1", "1", "received AUTHENTICATION_FAILED notify error")
	wait("after an error")
	close(ch)
	select {
	case err := <-done:
		if !errors.Is(err, ErrEventsClosed) {
			t.Errorf("Run(): %v, want %v", err, ErrEventsClosed)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return when the event stream closed")
	}
	mu.Lock()
	defer mu.Unlock()
	want := v1alpha1.TunnelStatus{Name: "peer1", IKEState: "ESTABLISHED", EstablishedAt: at(10), LastError: ErrAuthenticationFailed}
	if diff := cmp.Diff(want, got[len(got)-1][0]); diff != "" {
		t.Errorf("last status: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ike-updown", "child-updown", "log"}, s.subscribed); diff != "" {
		t.Errorf("subscribed: -want, +got:\n%s", diff)
	}
}

// TestWatcherSubscribeFirst checks that events charon sends between
// Subscribe and Run, such as the failure of a connection loaded in between,
// reach Run, and that Run does not subscribe again.
func TestWatcherSubscribeFirst(t *testing.T) {
	s := &fakeSession{fakeCaller: fakeCaller{events: map[string][]*vici.Message{
		"list-sas": {msg("peer1", ike("1", "CONNECTING", "0"))},
	}}}
	sunk := make(chan []v1alpha1.TunnelStatus, 10)
	w := &Watcher{
		Events: s, Caller: s,
		Conns: func() []string { return []string{"peer1"} },
		Poll:  time.Hour, Settle: time.Millisecond,
		Now: func() time.Time { return now },
		Sink: func(_ context.Context, ts []v1alpha1.TunnelStatus) (time.Duration, error) {
			sunk <- ts
			return 0, nil
		},
	}
	if err := w.Subscribe(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.ch <- logEv("peer1", "1", "received AUTHENTICATION_FAILED notify error")
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	for deadline := time.After(5 * time.Second); ; {
		select {
		case ts := <-sunk:
			if len(ts) != 1 || ts[0].LastError != ErrAuthenticationFailed {
				continue
			}
		case <-deadline:
			t.Fatal("the failure logged between Subscribe and Run never reached the status")
		}
		break
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run(): %v, want %v", err, context.Canceled)
	}
	if diff := cmp.Diff([]string{"ike-updown", "child-updown", "log"}, s.subscribed); diff != "" {
		t.Errorf("subscribed: -want, +got:\n%s", diff)
	}
}

// TestWatcherEstablishedStable checks that a second's jitter in charon's
// "established N seconds ago" does not change EstablishedAt.
func TestWatcherEstablishedStable(t *testing.T) {
	clock := now
	s := &fakeSession{fakeCaller: fakeCaller{events: map[string][]*vici.Message{"list-sas": {msg("peer1", ike("1", "ESTABLISHED", "10"))}}}}
	var got []v1alpha1.TunnelStatus
	w := &Watcher{Events: s, Caller: s, Conns: func() []string { return []string{"peer1"} }, Now: func() time.Time { return clock },
		Sink: func(_ context.Context, ts []v1alpha1.TunnelStatus) (time.Duration, error) { got = ts; return 0, nil }}
	w.Update(context.Background())
	first := got[0].EstablishedAt.Time
	clock = clock.Add(10*time.Second + 600*time.Millisecond) // charon now says 20 (rounded down), one second off
	s.events["list-sas"] = []*vici.Message{msg("peer1", ike("1", "ESTABLISHED", "20"))}
	w.Update(context.Background())
	if !got[0].EstablishedAt.Time.Equal(first) {
		t.Errorf("EstablishedAt moved from %v to %v", first, got[0].EstablishedAt.Time)
	}
	s.events["list-sas"] = []*vici.Message{msg("peer1", ike("2", "ESTABLISHED", "1"))}
	w.Update(context.Background())
	if want := clock.Add(-time.Second).Truncate(time.Second); !got[0].EstablishedAt.Time.Equal(want) {
		t.Errorf("a new IKE SA: EstablishedAt %v, want %v", got[0].EstablishedAt.Time, want)
	}
}

// TestWatcherObserveRefresh checks that Observe sees and may change each
// status read before the Sink gets it, and that a value on Refresh makes
// Run read the status again without waiting for the poll.
func TestWatcherObserveRefresh(t *testing.T) {
	s := &fakeSession{fakeCaller: fakeCaller{events: map[string][]*vici.Message{
		"list-sas": {msg("peer1", ike("1", "CONNECTING", ""))},
	}}}
	sunk := make(chan []v1alpha1.TunnelStatus, 10)
	refresh := make(chan struct{}, 1)
	w := &Watcher{
		Events: s, Caller: s,
		Conns: func() []string { return []string{"peer1"} },
		Poll:  time.Hour, Settle: time.Millisecond,
		Now:     func() time.Time { return now },
		Observe: func(ts []v1alpha1.TunnelStatus) { ts[0].Reinitiations = 7 },
		Refresh: refresh,
		Sink: func(_ context.Context, ts []v1alpha1.TunnelStatus) (time.Duration, error) {
			sunk <- ts
			return 0, nil
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = w.Run(ctx) }()
	for i, what := range []string{"at the start", "after a refresh"} {
		select {
		case ts := <-sunk:
			if ts[0].Reinitiations != 7 {
				t.Errorf("read %s: Observe's change did not reach the Sink: %+v", what, ts[0])
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no status read %s", what)
		}
		if i == 0 {
			refresh <- struct{}{}
		}
	}
}

// TestWatcherSubscribeStuck proves that Subscribe returns, with an error
// that tells to close the session, when charon sends an event before it
// confirms the subscription (as charon may: see ErrSubscribeStuck), which
// leaves govici's Subscribe waiting forever; and that it returns nil when
// charon confirms.
func TestWatcherSubscribeStuck(t *testing.T) {
	// Subscribe returns within this bound or never.
	const bound = 10 * time.Second
	cases := map[string]struct {
		reason  string
		raise   bool
		timeout time.Duration
		cancel  time.Duration
		want    error
	}{
		"Confirmed": {
			reason: "charon confirms each registration before it sends any event: subscribed.",
			want:   nil,
		},
		"TimedOut": {
			reason:  "charon sends an ike-updown before it confirms that registration: Subscribe gives up after SubscribeTimeout, and says the session is stuck.",
			raise:   true,
			timeout: 200 * time.Millisecond,
			want:    ErrSubscribeStuck,
		},
		"Cancelled": {
			reason: "charon sends an ike-updown before it confirms that registration and the agent gets SIGTERM: Subscribe returns at once with ctx's error.",
			raise:  true,
			cancel: 200 * time.Millisecond,
			want:   context.Canceled,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := vicitest.Serve(t, nil)
			if tc.raise {
				srv.RaiseOnRegister(func(event string) []*vici.Message {
					if event != "ike-updown" {
						return nil
					}
					return []*vici.Message{vicitest.Msg("peer1", ike("1", "ESTABLISHED", "0"))}
				})
			}
			sess, err := vici.NewSession(vici.WithSocketPath(srv.Socket()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sess.Close() })
			w := &Watcher{Events: sess, SubscribeTimeout: tc.timeout}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel > 0 {
				time.AfterFunc(tc.cancel, cancel)
			}
			done := make(chan error, 1)
			go func() { done <- w.Subscribe(ctx) }()
			select {
			case err := <-done:
				if diff := cmp.Diff(tc.want, err, cmpopts.EquateErrors()); diff != "" {
					t.Errorf("\n%s\nw.Subscribe(...): -want error, +got error:\n%s", tc.reason, diff)
				}
			case <-time.After(bound):
				t.Fatalf("\n%s\nw.Subscribe(...) did not return within %s", tc.reason, bound)
			}
		})
	}
}
