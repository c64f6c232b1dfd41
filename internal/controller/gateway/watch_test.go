package gateway

import (
	"context"
	"fmt"
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

func TestGatewayOf(t *testing.T) {
	om := func(name string, l map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "tenant-a", Name: name, Labels: l}
	}
	cases := map[string]struct {
		reason string
		obj    client.Object
		want   []reconcile.Request
	}{
		"StatusConfigMap": {
			reason: "The agent's status ConfigMap enqueues the Gateway its label names (cluster-scoped: no namespace).",
			obj:    &corev1.ConfigMap{ObjectMeta: om("vpn-status", map[string]string{workload.LabelGateway: "vpn"})},
			want:   []reconcile.Request{{NamespacedName: types.NamespacedName{Name: "vpn"}}},
		},
		"ConfigConfigMap": {
			reason: "A ConfigMap of the gateway that is not its status ConfigMap enqueues nothing.",
			obj:    &corev1.ConfigMap{ObjectMeta: om("vpn-config", map[string]string{workload.LabelGateway: "vpn"})},
		},
		"OtherGatewaysName": {
			reason: "A status ConfigMap whose name is not the one its label's Gateway gives it enqueues nothing.",
			obj:    &corev1.ConfigMap{ObjectMeta: om("other-status", map[string]string{workload.LabelGateway: "vpn"})},
		},
		"NoLabel": {
			reason: "A ConfigMap without the gateway label enqueues nothing.",
			obj:    &corev1.ConfigMap{ObjectMeta: om("vpn-status", nil)},
		},
		"Deployment": {
			reason: "The gateway's Deployment enqueues its Gateway.",
			obj:    &appsv1.Deployment{ObjectMeta: om("vpn", map[string]string{workload.LabelGateway: "vpn"})},
			want:   []reconcile.Request{{NamespacedName: types.NamespacedName{Name: "vpn"}}},
		},
		"OtherDeployment": {
			reason: "A Deployment not named as its label's Gateway names it enqueues nothing.",
			obj:    &appsv1.Deployment{ObjectMeta: om("vpn-status", map[string]string{workload.LabelGateway: "vpn"})},
		},
		"OtherKind": {
			reason: "An object of another kind (a Secret named like the status ConfigMap) enqueues nothing.",
			obj:    &corev1.Secret{ObjectMeta: om("vpn-status", map[string]string{workload.LabelGateway: "vpn"})},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, gatewayOf(context.Background(), tc.obj)); diff != "" {
				t.Errorf("%s\ngatewayOf(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestOwnedLabelsSelectRendered proves that the label selector of the
// cache of the gateways' objects selects every object a Gateway renders
// (Observe reads each from it), whether active/standby or not, and not an
// object that only names the gateway.
func TestOwnedLabelsSelectRendered(t *testing.T) {
	for _, replicas := range []int32{1, 2} {
		gw := &v1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "vpn"}}
		gw.Spec.ForProvider.Namespace = "tenant-a"
		gw.Spec.ForProvider.Replicas = &replicas
		objs, err := workload.Build(gw, &render.Files{})
		if err != nil {
			t.Fatal(err)
		}
		c := newTarget(nil)
		applyAll(t, c, objs, fieldManager)
		var want, got []string
		for _, x := range ownedObjects(objs) {
			o := x.live
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%s %s", x.kind, o.GetName())
			want = append(want, name)
			if ownedLabels.Matches(labels.Set(o.GetLabels())) {
				got = append(got, name)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("replicas %d: objects the cache selects: -want (every object rendered), +got:\n%s", replicas, diff)
		}
	}
	if ownedLabels.Matches(labels.Set{workload.LabelGateway: "vpn"}) {
		t.Errorf("the cache selects an object that only names the gateway")
	}
}

func TestWatchPredicates(t *testing.T) {
	cm := func(data string) *corev1.ConfigMap {
		return &corev1.ConfigMap{Data: map[string]string{contract.KeyTunnels: data}}
	}
	dep := func(ready int32) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		d.Status.ReadyReplicas = ready
		return d
	}
	relabelled := cm("[]")
	relabelled.Labels = map[string]string{"x": "y"}
	cases := map[string]struct {
		reason string
		pass   func(event.UpdateEvent) bool
		old    client.Object
		now    client.Object
		want   bool
	}{
		"NewReport":      {reason: "A new report of the agent passes.", pass: dataChanged, old: cm("[]"), now: cm(`[{"name":"a"}]`), want: true},
		"Resync":         {reason: "The same data (a resync) does not pass.", pass: dataChanged, old: cm("[]"), now: cm("[]")},
		"MetadataOnly":   {reason: "A metadata edit (the provider's apply) does not pass.", pass: dataChanged, old: cm("[]"), now: relabelled},
		"PodReady":       {reason: "A gateway pod becoming ready passes.", pass: readinessChanged, old: dep(0), now: dep(1), want: true},
		"PodLost":        {reason: "A gateway pod no longer ready passes.", pass: readinessChanged, old: dep(1), now: dep(0), want: true},
		"SameReadiness":  {reason: "A Deployment change that leaves ready replicas alone does not pass.", pass: readinessChanged, old: dep(1), now: dep(1)},
		"WrongKindForCM": {reason: "A Deployment given to the ConfigMap predicate does not pass.", pass: dataChanged, old: dep(0), now: dep(1)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.pass(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.now})); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestTargetsPoll(t *testing.T) {
	gw := func(pc string) *v1alpha1.Gateway {
		g := &v1alpha1.Gateway{}
		g.SetProviderConfigReference(&xpv2.Reference{Name: pc})
		return g
	}
	tg := &targets{}
	tg.set("local", false)
	tg.set("remote", true)
	cases := map[string]struct {
		reason string
		gw     *v1alpha1.Gateway
		poll   time.Duration
		want   time.Duration
	}{
		"Watched":        {reason: "A Gateway of the provider's own cluster is watched: it polls at --poll.", gw: gw("local"), poll: time.Minute, want: time.Minute},
		"Remote":         {reason: "A Gateway of another cluster polls at remotePoll.", gw: gw("remote"), poll: time.Minute, want: remotePoll},
		"RemoteFastPoll": {reason: "remotePoll never lengthens a shorter --poll.", gw: gw("remote"), poll: time.Second, want: time.Second},
		"NotConnected":   {reason: "A Gateway whose ProviderConfig was not connected yet polls at remotePoll.", gw: gw("new"), poll: time.Minute, want: remotePoll},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tg.poll(tc.gw, tc.poll)); diff != "" {
				t.Errorf("%s\npoll(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// addAfterQueue records the requests added to it and after how long.
type addAfterQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	added []string
}

func (q *addAfterQueue) AddAfter(r reconcile.Request, d time.Duration) {
	q.added = append(q.added, r.Name+" after "+d.String())
}

func (q *addAfterQueue) Add(r reconcile.Request) { q.added = append(q.added, r.Name+" now") }

// TestSettled proves that a watch event enqueues its Gateway settle after
// the event, whatever the event, so that the changes of one takeover make
// one observation.
func TestSettled(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "vpn-status", Namespace: "tenant-a"}}
	h := settled(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
	})
	q := &addAfterQueue{}
	ctx := context.Background()
	h.Create(ctx, event.CreateEvent{Object: cm}, q)
	h.Update(ctx, event.UpdateEvent{ObjectOld: &corev1.ConfigMap{}, ObjectNew: cm}, q)
	h.Delete(ctx, event.DeleteEvent{Object: cm}, q)
	h.Generic(ctx, event.GenericEvent{Object: cm}, q)
	want := []string{"vpn-status after 500ms", "vpn-status after 500ms", "vpn-status after 500ms", "vpn-status after 500ms"}
	if diff := cmp.Diff(want, q.added); diff != "" {
		t.Errorf("requests added for a create, an update, a delete and a generic event: -want, +got:\n%s", diff)
	}
}

// TestOwnClusterShared proves that the Gateway controllers of one manager
// (the cluster-scoped and the namespaced kind's) share one cache and one
// set of clients, that another manager has its own, and that a manager's
// is forgotten once it stopped.
func TestOwnClusterShared(t *testing.T) {
	manager := func() ctrl.Manager {
		// Nothing dials the address before the manager starts.
		m, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	of := func(m ctrl.Manager) *ownCluster {
		o, err := ownClusterOf(m)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	a, b := manager(), manager()
	first := of(a)
	if of(a) != first {
		t.Errorf("the second controller of a manager got a cache of its own")
	}
	if of(b) == first {
		t.Errorf("two managers share a cache")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := first.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if of(a) == first {
		t.Errorf("a stopped manager's cache is still handed out")
	}
}
