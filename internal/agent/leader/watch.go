package leader

import (
	"context"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// A LeaseWatcher watches Leases: client-go's LeaseInterface of the
// gateway's namespace is one.
type LeaseWatcher interface {
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// Backoff of WatchReleases after a watch that could not start: from
// watchRetryMin, doubling, at most watchRetryMax.
const (
	watchRetryMin = time.Second
	watchRetryMax = 30 * time.Second
)

// WatchReleases watches the Lease name until ctx ends and returns a
// channel that receives when the Lease has no holder: it was released
// (the active pod stopped and handed over, releaseLease) or never held.
// Elector.Released takes it, so that a standby campaigns at once instead
// of at its next retry. The watch names the Lease by a field selector,
// so the agent needs only watch on that one Lease (RBAC authorises a
// watch of one name as that name); it starts at the Lease as it is now,
// and after it ends again, without a list. A watch that cannot start is
// retried with backoff (watchRetryMin to watchRetryMax), logged: the
// election goes on at its retry period without it; so is one that ends
// within watchRetryMin (an error event). The channel holds one
// signal; signals that find it full are dropped, as the one waiting says
// the same.
func WatchReleases(ctx context.Context, leases LeaseWatcher, name string, log logging.Logger) <-chan struct{} {
	released := make(chan struct{}, 1)
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	go func() {
		wait := watchRetryMin
		for ctx.Err() == nil {
			start := time.Now()
			w, err := leases.Watch(ctx, opts)
			if err == nil {
				forward(ctx, w, released)
				w.Stop()
				if time.Since(start) >= watchRetryMin {
					wait = watchRetryMin
					continue
				}
			} else {
				log.Info("Cannot watch the Lease; a standby takes a released Lease at its next retry", "error", err, "retry", wait)
			}
			// It could not start, or ended at once (an error event).
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
			wait = min(2*wait, watchRetryMax)
		}
	}()
	return released
}

// forward signals released for every event of w that shows the Lease
// without holder, until w or ctx ends.
func forward(ctx context.Context, w watch.Interface, released chan<- struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			if l, isLease := ev.Object.(*coordinationv1.Lease); isLease && unheld(ev.Type, l) {
				select {
				case released <- struct{}{}:
				default:
				}
			}
		}
	}
}

// unheld says whether watch event t of Lease l shows it without holder.
func unheld(t watch.EventType, l *coordinationv1.Lease) bool {
	return (t == watch.Added || t == watch.Modified) && (l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "")
}
