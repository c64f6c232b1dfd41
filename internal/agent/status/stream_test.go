package status

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/strongswan/govici/vici"

	"github.com/ipsecgw/provider-ipsec/internal/agent/vicitest"
)

// TestStreamerInterrupted interrupts a list-sas whose events charon sends
// only after the caller's context ended (a SIGTERM or a timeout during a
// long list), then lists again on the same Streamer. Neither call may hang
// (govici v0.8.0 deadlocked when the Streamer unsubscribed while those
// events came), and the second returns its own IKE SAs, none of the first's.
func TestStreamerInterrupted(t *testing.T) {
	// bound is how long a call may take here: the vicitest server answers
	// at once, the first list 100 ms after the interruption.
	const bound = 5 * time.Second
	interrupted := make(chan struct{})
	lists := 0
	srv := vicitest.Serve(t, func(cmd string, _ *vici.Message) vicitest.Reply {
		if cmd != "list-sas" {
			return vicitest.Reply{}
		}
		lists++
		names := []string{"new-0", "new-1"}
		if lists == 1 {
			// The rest of a long list, after the caller gave up on it.
			<-interrupted
			time.Sleep(100 * time.Millisecond)
			names = nil
			for i := range 50 {
				names = append(names, fmt.Sprintf("old-%d", i))
			}
		}
		rep := vicitest.Reply{Event: "list-sa"}
		for _, n := range names {
			rep.Events = append(rep.Events, vicitest.Msg(n, vicitest.Msg("state", "ESTABLISHED")))
		}
		return rep
	})
	sess, err := vici.NewSession(vici.WithSocketPath(srv.Socket()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	s := &Streamer{Session: sess}

	type result struct {
		names []string
		err   error
	}
	list := func(ctx context.Context) result {
		got := make(chan result, 1)
		go func() {
			msgs, err := s.call(ctx, "list-sas", "list-sa", nil)
			var names []string
			for _, m := range msgs {
				names = append(names, m.Keys()...)
			}
			got <- result{names, err}
		}()
		select {
		case r := <-got:
			return r
		case <-time.After(bound):
			t.Fatalf("a list-sas through the Streamer did not return within %v", bound)
			return result{}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, func() { cancel(); close(interrupted) })
	if r := list(ctx); !errors.Is(r.err, context.Canceled) {
		t.Errorf("the interrupted list-sas: got %v, %v; want context.Canceled", r.names, r.err)
	}
	r := list(context.Background())
	if diff := cmp.Diff(result{names: []string{"new-0", "new-1"}}, r, cmp.AllowUnexported(result{}), cmpopts.EquateErrors()); diff != "" {
		t.Errorf("the list-sas after the interrupted one: -want, +got:\n%s", diff)
	}
}
