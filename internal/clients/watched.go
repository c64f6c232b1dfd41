package clients

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultSecretSyncTimeout bounds the wait for a Secret's first list when
// WatchedSecrets.SyncTimeout is zero.
const DefaultSecretSyncTimeout = 10 * time.Second

// WatchedSecrets is a client.Reader that serves Secrets from memory: each
// Secret gets an informer of its own at its first Get, listing and
// watching that one Secret (a field selector on its name), so that later
// reads cost no API request and a change reaches the next read within a
// watch event, while no other Secret of the cluster is cached. Every other
// kind is read through Reader. The ProviderConfigs' credentials are the
// Secrets it is for: a few per cluster, read at every reconcile.
//
// Informers run until Stop, except that of a Secret that does not exist or
// cannot be listed, which is stopped at that read, so that the informers
// are bounded by the Secrets that exist and are read (the next read of a
// missing one lists it again). Safe for concurrent use.
type WatchedSecrets struct {
	// Reader reads every kind but Secrets.
	Reader client.Reader
	// SyncTimeout bounds the wait for a Secret's first list;
	// DefaultSecretSyncTimeout when zero.
	SyncTimeout time.Duration

	core   kubernetes.Interface
	ctx    context.Context
	stop   context.CancelFunc
	mu     sync.Mutex
	byName map[types.NamespacedName]*watchedSecret
}

type watchedSecret struct {
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
	mu       sync.Mutex
	// lastErr is the informer's last list or watch error, reported when
	// the first list does not complete in time.
	lastErr error
}

// NewWatchedSecrets returns a WatchedSecrets that watches Secrets through
// core and reads everything else through r.
func NewWatchedSecrets(core kubernetes.Interface, r client.Reader) *WatchedSecrets {
	ctx, stop := context.WithCancel(context.Background())
	return &WatchedSecrets{Reader: r, core: core, ctx: ctx, stop: stop, byName: map[types.NamespacedName]*watchedSecret{}}
}

// Start blocks until ctx is done, then stops every informer: it makes
// WatchedSecrets a controller-runtime manager.Runnable.
func (w *WatchedSecrets) Start(ctx context.Context) error {
	<-ctx.Done()
	w.Stop()
	return nil
}

// Stop stops every informer; later Gets of Secrets fail.
func (w *WatchedSecrets) Stop() { w.stop() }

// Get reads a Secret from its informer, starting it and waiting for its
// first list when this is the Secret's first read, and any other kind
// through Reader. An absent Secret is a NotFound error. When the first
// list fails (RBAC, the API server) for SyncTimeout, the error names the
// Secret and carries the informer's last error.
func (w *WatchedSecrets) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return w.Reader.Get(ctx, key, obj, opts...)
	}
	ws := w.watch(key)
	sync, cancel := context.WithTimeout(ctx, w.syncTimeout())
	defer cancel()
	if !cache.WaitForCacheSync(sync.Done(), ws.informer.HasSynced) {
		w.forget(key, ws)
		ws.mu.Lock()
		last := ws.lastErr
		ws.mu.Unlock()
		if err := w.ctx.Err(); err != nil {
			return fmt.Errorf("cannot read Secret %s: the provider is stopping", key)
		}
		if last == nil {
			return fmt.Errorf("cannot list Secret %s within %s", key, w.syncTimeout())
		}
		return fmt.Errorf("cannot list Secret %s within %s: %w", key, w.syncTimeout(), last)
	}
	item, exists, err := ws.informer.GetStore().GetByKey(key.String())
	if err != nil {
		return fmt.Errorf("cannot read Secret %s from its informer: %w", key, err)
	}
	if !exists {
		w.forget(key, ws)
		return kerrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	item.(*corev1.Secret).DeepCopyInto(s)
	return nil
}

// List lists through Reader: Secrets are only ever read by name.
func (w *WatchedSecrets) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return w.Reader.List(ctx, list, opts...)
}

func (w *WatchedSecrets) syncTimeout() time.Duration {
	if w.SyncTimeout > 0 {
		return w.SyncTimeout
	}
	return DefaultSecretSyncTimeout
}

// watch returns the informer of key's Secret, made and started at the
// first call.
func (w *WatchedSecrets) watch(key types.NamespacedName) *watchedSecret {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ws, ok := w.byName[key]; ok {
		return ws
	}
	secrets := w.core.CoreV1().Secrets(key.Namespace)
	only := fields.OneTermEqualSelector("metadata.name", key.Name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = only
			return secrets.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = only
			return secrets.Watch(ctx, o)
		},
	}
	ctx, stop := context.WithCancel(w.ctx)
	ws := &watchedSecret{stop: stop, informer: cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, w.core), &corev1.Secret{}, 0, cache.Indexers{})}
	_ = ws.informer.SetTransform(func(o any) (any, error) {
		if s, ok := o.(*corev1.Secret); ok {
			s.ManagedFields = nil
		}
		return o, nil
	})
	_ = ws.informer.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		ws.mu.Lock()
		ws.lastErr = err
		ws.mu.Unlock()
	})
	w.byName[key] = ws
	go ws.informer.Run(ctx.Done())
	return ws
}

// forget stops ws, the informer of key's Secret, and drops it unless
// another has replaced it.
func (w *WatchedSecrets) forget(key types.NamespacedName, ws *watchedSecret) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byName[key] == ws {
		delete(w.byName, key)
	}
	ws.stop()
}
