package status

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/strongswan/govici/vici"

	"github.com/ipsecgw/provider-ipsec/internal/agent/vicitest"
)

// TestStreamerAbandoned ends a list-sas call while charon is still working
// on it and has charon send that listing's events afterwards, as a busy
// charon does when the agent gets SIGTERM or the watchdog's bound passes.
// govici's Unsubscribe would then wait forever for a confirmation its
// reader cannot deliver (see Streamer): the call must return with its
// context's error at once, and the next call on the same session get its
// own listing, not the abandoned one's.
func TestStreamerAbandoned(t *testing.T) {
	// A call returns within this bound or never: the abandoned one at once,
	// the next after a few round trips on the stand-in's socket.
	const bound = 10 * time.Second
	cases := map[string]struct {
		reason string
		// ctx returns the first call's context; end ends it once charon
		// has the command.
		ctx     func() (context.Context, context.CancelFunc)
		end     func(cancel context.CancelFunc)
		wantErr error
	}{
		"Cancelled": {
			reason:  "SIGTERM cancels the agent's context while charon lists the SAs; the call returns at once and leaves the session usable.",
			ctx:     func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			end:     func(cancel context.CancelFunc) { cancel() },
			wantErr: context.Canceled,
		},
		"DeadlineExceeded": {
			reason: "The watchdog's bound on a call passes while charon lists the SAs; the call returns at once and leaves the session usable.",
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), time.Second)
			},
			end:     func(context.CancelFunc) {},
			wantErr: context.DeadlineExceeded,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			listing := make(chan struct{})
			release := make(chan struct{})
			var calls atomic.Int32
			srv := vicitest.Serve(t, func(cmd string, _ *vici.Message) vicitest.Reply {
				if cmd != "list-sas" {
					return vicitest.Reply{}
				}
				if calls.Add(1) == 1 {
					close(listing)
					<-release
					return vicitest.Reply{Event: "list-sa", Events: []*vici.Message{vicitest.Msg("old", ike("1", "ESTABLISHED", "5"))}}
				}
				return vicitest.Reply{Event: "list-sa", Events: []*vici.Message{vicitest.Msg("new", ike("2", "ESTABLISHED", "1"))}}
			})
			releaseOnce := sync.OnceFunc(func() { close(release) })
			t.Cleanup(releaseOnce) // before the server's cleanup, which waits for its handler
			sess, err := vici.NewSession(vici.WithSocketPath(srv.Socket()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sess.Close() })
			s := &Streamer{Session: sess}

			ctx, cancel := tc.ctx()
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := s.call(ctx, "list-sas", "list-sa", nil)
				done <- err
			}()
			select {
			case <-listing:
			case <-time.After(bound):
				t.Fatalf("\n%s\ncharon did not get list-sas within %s", tc.reason, bound)
			}
			tc.end(cancel)
			<-ctx.Done()
			// charon sends the listing now, while the caller cleans up.
			time.AfterFunc(100*time.Millisecond, releaseOnce)
			select {
			case err := <-done:
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("\n%s\ns.call(...): want %v, got %v", tc.reason, tc.wantErr, err)
				}
			case <-time.After(bound):
				t.Fatalf("\n%s\ns.call(...) did not return within %s after its context ended", tc.reason, bound)
			}

			next, cancelNext := context.WithTimeout(context.Background(), bound)
			defer cancelNext()
			var got []string
			for m, err := range s.CallStreaming(next, "list-sas", "list-sa", nil) {
				if err != nil {
					t.Fatalf("\n%s\nthe next list-sas: %v", tc.reason, err)
				}
				got = append(got, m.Keys()...)
			}
			if diff := cmp.Diff([]string{"new"}, got); diff != "" {
				t.Errorf("\n%s\nthe next list-sas' IKE SAs: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
