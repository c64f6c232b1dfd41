package gateway

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ipsecgw/provider-ipsec/internal/clients/cluster"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

// remotePoll is the poll interval of a Gateway whose ProviderConfig
// targets another cluster (a kubeconfig Secret): the provider watches only
// its own cluster, so the agent's status there is read by polling, and a
// tunnel going up or down shows within this long. Never longer than the
// provider's --poll.
const remotePoll = 15 * time.Second

const errOwnCache = "cannot create the cache of the gateways' objects"

// ownedLabels selects the objects of every gateway (workload.Labels but the
// gateway's name) and nothing else of their kinds: what the cache of the
// provider's own cluster (ownCluster) lists and watches.
var ownedLabels = labels.SelectorFromSet(labels.Set{workload.LabelManagedBy: workload.ManagedBy, workload.LabelName: "ipsec-gateway"})

// ownCluster is what both Gateway controllers of a manager (the
// cluster-scoped kind's and the namespaced one's) share in the provider's
// own cluster: the cache of the gateways' objects there, which the watches
// and Observe read, and the clients of the clusters the ProviderConfigs
// select.
type ownCluster struct {
	// cache lists and watches the objects ownedLabels selects, kind by kind as
	// they are first read, with their managed fields: the drift check
	// extracts the provider's fields from them (ssa.go). An informer of a
	// kind serves every Gateway: a Gateway at rest reads nothing from the
	// API server. Only the Gateway's objects may be read through it: an
	// object without its labels reads as missing.
	cache cache.Cache
	// clusters are the clients of the clusters the ProviderConfigs select:
	// the provider's own uncached (the Secrets and Services a Gateway
	// names, pods, and every write), another's built once per kubeconfig.
	clusters *cluster.Targets[client.Client]
	// mgr is the manager it serves.
	mgr ctrl.Manager
}

// ownClusters holds the ownCluster of each manager that runs Gateway
// controllers, from the first controller's setup until the manager stops.
var ownClusters = struct {
	sync.Mutex
	of map[ctrl.Manager]*ownCluster
}{of: map[ctrl.Manager]*ownCluster{}}

// ownClusterOf returns the ownCluster of mgr, made and added to mgr at the
// first call. It returns an error when a client or the cache cannot be
// built or mgr does not take the cache.
func ownClusterOf(mgr ctrl.Manager) (*ownCluster, error) {
	ownClusters.Lock()
	defer ownClusters.Unlock()
	if o, ok := ownClusters.of[mgr]; ok {
		return o, nil
	}
	own, err := mrsetup.UncachedClient(mgr)
	if err != nil {
		return nil, err
	}
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme:               mgr.GetScheme(),
		Mapper:               mgr.GetRESTMapper(),
		DefaultLabelSelector: ownedLabels,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", errOwnCache, err)
	}
	o := &ownCluster{cache: c, mgr: mgr, clusters: &cluster.Targets[client.Client]{Own: own, New: func(cfg *rest.Config) (client.Client, error) {
		return client.New(cfg, client.Options{Scheme: mgr.GetScheme()})
	}}}
	if err := mgr.Add(o); err != nil {
		return nil, fmt.Errorf("%s: %w", errOwnCache, err)
	}
	ownClusters.of[mgr] = o
	return o, nil
}

// Start runs the cache until ctx is done, then forgets o: a manager runs
// once.
func (o *ownCluster) Start(ctx context.Context) error {
	defer func() {
		ownClusters.Lock()
		defer ownClusters.Unlock()
		delete(ownClusters.of, o.mgr)
	}()
	return o.cache.Start(ctx)
}

// GetCache returns the cache: the manager starts o with its caches,
// before the controllers, and waits for it to sync.
func (o *ownCluster) GetCache() cache.Cache { return o.cache }

// watches returns the sources that enqueue a Gateway (a namespaced one
// when namespaced, in the namespace of its objects) when its agent's
// status ConfigMap changes data or its Deployment's ready replicas change
// in the provider's own cluster, read through c, the cache of the
// gateways' objects.
func watches(c cache.Cache, namespaced bool) []source.TypedSource[reconcile.Request] {
	enqueue := settled(func(ctx context.Context, o client.Object) []reconcile.Request {
		rs := gatewayOf(ctx, o)
		if namespaced {
			for i := range rs {
				rs[i].Namespace = o.GetNamespace()
			}
		}
		return rs
	})
	return []source.TypedSource[reconcile.Request]{
		source.Kind(c, client.Object(&corev1.ConfigMap{}), enqueue, predicate.Funcs{UpdateFunc: dataChanged}),
		source.Kind(c, client.Object(&appsv1.Deployment{}), enqueue, predicate.Funcs{UpdateFunc: readinessChanged}),
	}
}

// settle is how long after its agent's status ConfigMap or its Deployment
// changed a Gateway is observed: the changes of one takeover that come
// within it (the new active pod's tunnels reported down, then up, a few
// hundred milliseconds apart) make one status write, so one watch event
// for its composite (countersInterval says why those count).
const settle = 500 * time.Millisecond

// settled returns a handler that enqueues the requests toGateways maps an
// event's object to (the new one of an update) settle after the event;
// requests already waiting are not delayed further.
func settled(toGateways handler.MapFunc) handler.EventHandler {
	add := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, r := range toGateways(ctx, o) {
			q.AddAfter(r, settle)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
	}
}

// gatewayOf maps a gateway's status ConfigMap or Deployment to the
// cluster-scoped Gateway its LabelGateway names, when o carries the name
// the Gateway gives that object; anything else maps to nothing. (A
// namespaced Gateway of that name is the one in o's namespace.)
func gatewayOf(_ context.Context, o client.Object) []reconcile.Request {
	gw := o.GetLabels()[workload.LabelGateway]
	if gw == "" {
		return nil
	}
	n := workload.NamesOf(gw)
	switch o.(type) {
	case *corev1.ConfigMap:
		if o.GetName() != n.Status {
			return nil
		}
	case *appsv1.Deployment:
		if o.GetName() != n.Gateway {
			return nil
		}
	default:
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: gw}}}
}

// dataChanged passes an update of a ConfigMap whose data changed: the
// agent's new report, not a resync or a metadata edit.
func dataChanged(e event.UpdateEvent) bool {
	old, ok1 := e.ObjectOld.(*corev1.ConfigMap)
	now, ok2 := e.ObjectNew.(*corev1.ConfigMap)
	return ok1 && ok2 && !maps.Equal(old.Data, now.Data)
}

// readinessChanged passes an update of a Deployment whose ready replicas
// changed: a gateway pod became ready or stopped being ready.
func readinessChanged(e event.UpdateEvent) bool {
	old, ok1 := e.ObjectOld.(*appsv1.Deployment)
	now, ok2 := e.ObjectNew.(*appsv1.Deployment)
	return ok1 && ok2 && old.Status.ReadyReplicas != now.Status.ReadyReplicas
}

// targets remembers which ProviderConfigs target another cluster, as
// Connect last found them, to poll their Gateways at remotePoll.
type targets struct {
	mu     sync.Mutex
	remote map[string]bool
}

// set records whether the ProviderConfig whose key (openstack.Config.Key)
// is pc targets another cluster.
func (t *targets) set(pc string, remote bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.remote == nil {
		t.remote = map[string]bool{}
	}
	t.remote[pc] = remote
}

// poll is the interval of a Gateway after a successful reconcile: a Gateway
// of the provider's own cluster is watched, so it is polled at the
// provider's interval d (a safety poll and the drift check); one whose
// ProviderConfig targets another cluster, or was not connected yet, at
// remotePoll when that is shorter.
func (t *targets) poll(mg resource.Managed, d time.Duration) time.Duration {
	pc := openstack.ConfigKey(mg)
	t.mu.Lock()
	remote, known := t.remote[pc]
	t.mu.Unlock()
	if known && !remote {
		return d
	}
	return min(d, remotePoll)
}
