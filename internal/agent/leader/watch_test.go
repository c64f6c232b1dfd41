package leader

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// fakeLeases serves one watch after another: each Watch call takes the
// next of watches (an error, or a fake watch), recording its options.
type fakeLeases struct {
	mu      sync.Mutex
	watches []any
	opts    []metav1.ListOptions
}

func (f *fakeLeases) Watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opts = append(f.opts, opts)
	if len(f.watches) == 0 {
		return watch.NewFake(), nil // never delivers
	}
	w := f.watches[0]
	f.watches = f.watches[1:]
	if err, ok := w.(error); ok {
		return nil, err
	}
	return w.(watch.Interface), nil
}

func leaseHeldBy(holder *string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "vpn"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: holder}}
}

// TestWatchReleases proves which watch events of the Lease tell a standby
// that it was released: an event that shows it without holder (released,
// or never held: the provider's Lease), not one that names a holder, nor
// a deletion, an error or a bookmark; and that the watch names the one
// Lease by a field selector (the agent may watch only it) and starts again
// when it ends, also after it could not start.
func TestWatchReleases(t *testing.T) {
	cases := map[string]struct {
		reason string
		events []watch.Event
		// fail is how many Watch calls fail before the one that delivers
		// events; ended, whether a watch that ends at once comes first.
		fail  int
		ended bool
		want  bool
	}{
		"Released": {
			reason: "An update that empties the holder is a release.",
			events: []watch.Event{{Type: watch.Modified, Object: leaseHeldBy(ptr.To(""))}},
			want:   true,
		},
		"NeverHeld": {
			reason: "The Lease as the watch starts, without holder (nil), is free too.",
			events: []watch.Event{{Type: watch.Added, Object: leaseHeldBy(nil)}},
			want:   true,
		},
		"Held": {
			reason: "Renewals and takeovers name a holder: nothing to do.",
			events: []watch.Event{{Type: watch.Added, Object: leaseHeldBy(ptr.To("vpn-a"))}, {Type: watch.Modified, Object: leaseHeldBy(ptr.To("vpn-b"))}},
		},
		"NotALeaseChange": {
			reason: "A deletion, an error event, a bookmark and another kind are no release.",
			events: []watch.Event{
				{Type: watch.Deleted, Object: leaseHeldBy(nil)},
				{Type: watch.Error, Object: &metav1.Status{Reason: metav1.StatusReasonExpired}},
				{Type: watch.Bookmark, Object: leaseHeldBy(nil)},
				{Type: watch.Modified, Object: &corev1.ConfigMap{}},
			},
		},
		"AfterAFailedWatch": {
			reason: "A watch that cannot start (forbidden, the API server away) is tried again, after a backoff.",
			fail:   1,
			events: []watch.Event{{Type: watch.Modified, Object: leaseHeldBy(ptr.To(""))}},
			want:   true,
		},
		"AfterTheWatchEnded": {
			reason: "A watch that ends (the API server's timeout) is started again.",
			ended:  true,
			events: []watch.Event{{Type: watch.Modified, Object: leaseHeldBy(ptr.To(""))}},
			want:   true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f := &fakeLeases{}
			for range tc.fail {
				f.watches = append(f.watches, errors.New("forbidden"))
			}
			if tc.ended {
				w := watch.NewFake()
				w.Stop()
				f.watches = append(f.watches, w)
			}
			w := watch.NewFakeWithChanSize(len(tc.events), false)
			for _, ev := range tc.events {
				w.Action(ev.Type, ev.Object)
			}
			f.watches = append(f.watches, w)
			released := WatchReleases(ctx, f, "vpn", logging.NewNopLogger())
			// Long enough for one backoff (watchRetryMin) when a signal is
			// due; a moment when none is.
			wait := 300 * time.Millisecond
			if tc.want {
				wait = watchRetryMin + 2*time.Second
			}
			got := false
			select {
			case <-released:
				got = true
			case <-time.After(wait):
			}
			if got != tc.want {
				t.Errorf("%s\nreleased: want %t, got %t", tc.reason, tc.want, got)
			}
			cancel()
			f.mu.Lock()
			defer f.mu.Unlock()
			for _, o := range f.opts {
				if diff := cmp.Diff(metav1.ListOptions{FieldSelector: "metadata.name=vpn"}, o); diff != "" {
					t.Errorf("%s\nthe watch's options: -want, +got:\n%s", tc.reason, diff)
				}
			}
		})
	}
}
