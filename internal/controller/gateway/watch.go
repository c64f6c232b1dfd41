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
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

// remotePoll is the poll interval of a Gateway whose ProviderConfig
// targets another cluster (a kubeconfig Secret): the provider watches only
// its own cluster, so the agent's status there is read by polling, and a
// tunnel going up or down shows within this long. Never longer than the
// provider's --poll.
const remotePoll = 15 * time.Second

const errWatchCache = "cannot create the cache of the gateways' status ConfigMaps and Deployments"

// watched selects what the Gateway controller watches in the provider's
// own cluster, and nothing else of their kinds: the agents' status
// ConfigMaps (their content is the tunnel status) and the gateways'
// Deployments (their ready replicas decide whether that status counts).
var watched = map[client.Object]labels.Selector{
	&corev1.ConfigMap{}: labels.SelectorFromSet(labels.Set{
		workload.LabelManagedBy: workload.ManagedBy, workload.LabelComponent: workload.ComponentStatus,
	}),
	&appsv1.Deployment{}: labels.SelectorFromSet(labels.Set{
		workload.LabelManagedBy: workload.ManagedBy, workload.LabelName: "ipsec-gateway",
	}),
}

// watches returns the sources that enqueue a Gateway (a namespaced one
// when namespaced, in the namespace of its objects) when its agent's
// status ConfigMap changes data or its Deployment's ready replicas change
// in the provider's own cluster, read through a cache of their own (added
// to mgr) that lists and watches only the objects watched selects, without
// managed fields. It returns an error when the cache cannot be built.
func watches(mgr ctrl.Manager, namespaced bool) ([]source.TypedSource[reconcile.Request], error) {
	byObject := map[client.Object]cache.ByObject{}
	for o, sel := range watched {
		byObject[o] = cache.ByObject{Label: sel}
	}
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme:           mgr.GetScheme(),
		Mapper:           mgr.GetRESTMapper(),
		ByObject:         byObject,
		DefaultTransform: cache.TransformStripManagedFields(),
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", errWatchCache, err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("%s: %w", errWatchCache, err)
	}
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
	}, nil
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
