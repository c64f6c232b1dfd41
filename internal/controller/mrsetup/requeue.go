package mrsetup

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// Exponential backoff of a failing reconcile: 1 s, doubling per failure, up
// to the ceiling of crossplane-runtime's ratelimiter.NewController.
const (
	backoffBase    = time.Second
	backoffCeiling = time.Minute
	// maxSpread bounds the random delay added after the end of a hold, so
	// that the resources held do not all retry at the same instant.
	maxSpread = 5 * time.Second
	// awaitApply bounds the wait of a resource whose ProviderConfig or
	// Secret does not exist: GitOps applies them beside or after the
	// resources that name them (an Argo CD sync of the tenants before the
	// platform's), and such a resource goes on within this bound of their
	// arrival rather than after a backoff grown to the ceiling. Each retry
	// reads the informer cache, not the API server.
	awaitApply = 10 * time.Second
	// revisionConflict bounds the wait after Neutron's 412
	// (RevisionNumberConstraintFailed: the object changed between the
	// reconcile's read and its If-Match write), which the next read
	// settles. A backoff grown by earlier failures would delay a step
	// that only lost a race: a pinned binding's pre-stage grows it to
	// the ceiling, and the PUT of its cutover can meet the L3 agent's
	// status update of the floating IP, so the cutover waited 1 min.
	revisionConflict = time.Second
)

// RetryWithin marks err as the state of a resource that waits for a
// person (the runbook's pre-stage: a pinned floating IP still on the
// VM's port): the failing reconcile is retried within d however often it
// failed, rather than backing off to the ceiling, so that the person's
// step shows within d. The error reads as err.
func RetryWithin(err error, d time.Duration) error {
	return &waiting{error: err, within: d}
}

type waiting struct {
	error
	within time.Duration
}

func (w *waiting) Unwrap() error { return w.error }

// RetryWithin is the bound of the wait before the retry.
func (w *waiting) RetryWithin() time.Duration { return w.within }

// A retryWithin is an error of RetryWithin.
type retryWithin interface {
	RetryWithin() time.Duration
}

// A retryAt is an error that says when the request may be sent again: the
// OpenStack Gate's HeldError (a Retry-After hold or a backoff) and
// ThrottledError.
type retryAt interface {
	RetryAt() time.Time
}

// A backoff is the rate limiter of a controller's work queue: failures
// back off exponentially (1 s doubling to 1 min), except that a failure
// with an error of RetryWithin is retried within its bound, one whose
// error is the API server's NotFound (a ProviderConfig or Secret not yet
// applied) within awaitApply, one whose error is Neutron's 412 (a write
// that lost a race) within revisionConflict, and one whose
// error says when to retry (the Gate of its ProviderConfig: a Retry-After
// hold, a backoff from a failing service, the token bucket) is retried
// then, spread by a little, whatever its own backoff. The managed reconciler
// returns no error for a failed reconcile, so the external clients'
// errors reach it through note (noteErrors). Safe for concurrent use.
type backoff struct {
	failures workqueue.TypedRateLimiter[reconcile.Request]
	now      func() time.Time

	mu    sync.Mutex
	hints map[reconcile.Request]hint
}

// A hint is what the last error of a reconcile said of its retry.
type hint struct {
	// within bounds the wait (RetryWithin); zero: no bound.
	within time.Duration
	// notBefore is the earliest retry (retryAt); zero: none.
	notBefore time.Time
}

func newBackoff() *backoff {
	return &backoff{
		failures: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](backoffBase, backoffCeiling),
		now:      time.Now, hints: map[reconcile.Request]hint{},
	}
}

// When returns how long to wait before retrying r.
func (b *backoff) When(r reconcile.Request) time.Duration {
	d := b.failures.When(r)
	b.mu.Lock()
	h, ok := b.hints[r]
	delete(b.hints, r)
	b.mu.Unlock()
	if !ok {
		return d
	}
	if h.within > 0 && d > h.within {
		d = h.within
	}
	if !h.notBefore.IsZero() {
		// The Gate's time is the ProviderConfig's schedule: it replaces
		// the resource's own backoff, which grew while the Gate held its
		// requests (a storm of 5xx, a long Retry-After), so that the
		// resource is back when the Gate lets requests through again
		// rather than up to a minute later.
		wait := max(h.notBefore.Sub(b.now()), 0)
		d = wait + rand.N(min(wait/10+time.Second, maxSpread)) //nolint:gosec // Spreading retries needs no secure randomness.
	}
	return d
}

// Forget resets r's failures: its reconcile succeeded.
func (b *backoff) Forget(r reconcile.Request) {
	b.failures.Forget(r)
	b.mu.Lock()
	delete(b.hints, r)
	b.mu.Unlock()
}

// progressed resets the failures of mg's reconcile, whose Create or Delete
// just succeeded: crossplane-runtime requeues it at once through the rate
// limiter to look at what it did, and that look must not wait out the
// backoff of failures before (a ProviderConfig applied late, Neutron
// errors): measured, the deletion of a group that had waited 35 s for its
// ProviderConfig took 60 s.
func (b *backoff) progressed(mg resource.Managed) {
	b.Forget(requestOf(mg))
}

// requestOf is the work queue's request of mg.
func requestOf(mg resource.Managed) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: mg.GetNamespace(), Name: mg.GetName()}}
}

// NumRequeues is how often r failed in a row.
func (b *backoff) NumRequeues(r reconcile.Request) int { return b.failures.NumRequeues(r) }

// note records what err says of the retry of mg's reconcile; nil and
// errors that say nothing are ignored.
func (b *backoff) note(mg resource.Managed, err error) {
	var h hint
	var w retryWithin
	if errors.As(err, &w) {
		h.within = w.RetryWithin()
	}
	if kerrors.IsNotFound(err) && (h.within == 0 || h.within > awaitApply) {
		h.within = awaitApply
	}
	if a, ok := openstack.AsAPIError(err); ok && a.Code == http.StatusPreconditionFailed {
		h.within = revisionConflict
	}
	var ra retryAt
	if errors.As(err, &ra) {
		h.notBefore = ra.RetryAt()
	}
	if h == (hint{}) {
		return
	}
	r := requestOf(mg)
	b.mu.Lock()
	b.hints[r] = h
	b.mu.Unlock()
}

// noteErrors wraps c so that the errors of Connect and of its external
// clients reach b.
func noteErrors[T resource.Managed](c managed.TypedExternalConnector[T], b *backoff) managed.TypedExternalConnector[T] {
	return managed.TypedExternalConnectorFn[T](func(ctx context.Context, mg T) (managed.TypedExternalClient[T], error) {
		ec, err := c.Connect(ctx, mg)
		if err != nil {
			b.note(mg, err)
			return nil, err
		}
		return &noting[T]{inner: ec, b: b}, nil
	})
}

// noting is an external client whose errors reach a backoff.
type noting[T resource.Managed] struct {
	inner managed.TypedExternalClient[T]
	b     *backoff
}

func (n *noting[T]) Observe(ctx context.Context, mg T) (managed.ExternalObservation, error) {
	o, err := n.inner.Observe(ctx, mg)
	n.b.note(mg, err)
	return o, err
}

func (n *noting[T]) Create(ctx context.Context, mg T) (managed.ExternalCreation, error) {
	c, err := n.inner.Create(ctx, mg)
	n.b.note(mg, err)
	if err == nil {
		n.b.progressed(mg)
	}
	return c, err
}

func (n *noting[T]) Update(ctx context.Context, mg T) (managed.ExternalUpdate, error) {
	u, err := n.inner.Update(ctx, mg)
	n.b.note(mg, err)
	return u, err
}

func (n *noting[T]) Delete(ctx context.Context, mg T) (managed.ExternalDelete, error) {
	d, err := n.inner.Delete(ctx, mg)
	n.b.note(mg, err)
	if err == nil {
		n.b.progressed(mg)
	}
	return d, err
}

func (n *noting[T]) Disconnect(ctx context.Context) error { return n.inner.Disconnect(ctx) }
