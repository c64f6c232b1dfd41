// Package gateway runs the Gateway managed resource's controller: it
// renders a Gateway's configuration and keeps its objects (NAD, ConfigMap,
// Secret, RBAC, NetworkPolicy, Deployment) in the target cluster as
// rendered.
package gateway

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/cluster"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// Kind describes the Gateway controllers: the cluster-scoped kind (setup)
// and its namespaced twin (setupNamespaced), each with the image of a
// Gateway that names none (mrsetup.Dependencies.GatewayImage).
var Kind = mrsetup.Kind{
	{GVKs: []schema.GroupVersionKind{v1alpha1.GatewayGroupVersionKind}, Setup: setup},
	{GVKs: []schema.GroupVersionKind{nsv1alpha1.GatewayGroupVersionKind}, Setup: setupNamespaced},
}

// setup adds the Gateway controller to mgr. A Gateway reads its agent's
// tunnel status (the status ConfigMap) when it is observed. In the
// provider's own cluster it is observed when that ConfigMap's data or its
// Deployment's ready replicas change (watches), else at the provider's
// --poll as a safety poll and drift check; a Gateway whose ProviderConfig
// targets another cluster is polled every remotePoll instead. It returns
// an error when a client, the watches' cache or the controller cannot be
// built. d.GatewayImage is the image of a Gateway that names none (empty:
// DefaultImage).
func setup(mgr ctrl.Manager, o controller.Options, d mrsetup.Dependencies) error {
	name := managed.ControllerName(v1alpha1.GatewayGroupKind)
	c, w, err := newConnector(mgr, name, false, d.GatewayImage)
	if err != nil {
		return err
	}
	c.usage = mrsetup.UsageTracker(mgr)
	return mrsetup.Register(mgr, o, name, v1alpha1.GatewayGroupVersionKind, &v1alpha1.Gateway{}, mrsetup.Tuning{Poll: c.poll, Watches: w},
		managed.WithTypedExternalConnector[*v1alpha1.Gateway](c),
		// Reads go to the API server uncached, so a created object is seen
		// at once: no grace period before believing it is gone.
		managed.WithCreationGracePeriod(0),
	)
}

// setupNamespaced adds the controller of the namespaced Gateway
// (gateway.m.ipsecgw.io) to mgr, as setup does: the same external client
// on the namespaced twin (mrsetup.TwinExternal), its objects in the
// Gateway's own namespace of the cluster its ProviderConfig of that
// namespace or its ClusterProviderConfig names, watched through a cache of
// its own. It returns an error when a client, the watches' cache or the
// controller cannot be built.
func setupNamespaced(mgr ctrl.Manager, o controller.Options, d mrsetup.Dependencies) error {
	name := managed.ControllerName(nsv1alpha1.GatewayGroupKind)
	c, w, err := newConnector(mgr, name, true, d.GatewayImage)
	if err != nil {
		return err
	}
	return mrsetup.Register(mgr, o, name, nsv1alpha1.GatewayGroupVersionKind, &nsv1alpha1.Gateway{}, mrsetup.Tuning{Poll: c.poll, Watches: w},
		managed.WithTypedExternalConnector[*nsv1alpha1.Gateway](&nsConnector{connector: c, usage: mrsetup.ModernUsageTracker(mgr), gateways: mgr.GetClient()}),
		managed.WithCreationGracePeriod(0),
	)
}

// newConnector returns the connector of the Gateway controller named name
// (its usage tracker unset) and the watches that enqueue its Gateways
// (namespaced ones when namespaced), whose Gateways that name no image run
// image (empty: DefaultImage).
func newConnector(mgr ctrl.Manager, name string, namespaced bool, image string) (*connector, []source.TypedSource[reconcile.Request], error) {
	if image == "" {
		image = DefaultImage
	}
	// An uncached client: caching every Secret and ConfigMap of the
	// cluster would cost memory and RBAC the provider does not need.
	own, err := mrsetup.UncachedClient(mgr)
	if err != nil {
		return nil, nil, err
	}
	w, err := watches(mgr, namespaced)
	if err != nil {
		return nil, nil, err
	}
	return &connector{
		kube: own,
		clusters: &cluster.Targets[client.Client]{Own: own, New: func(cfg *rest.Config) (client.Client, error) {
			return client.New(cfg, client.Options{Scheme: mgr.GetScheme()})
		}},
		targets:  &targets{},
		details:  &detailHold{},
		image:    image,
		recorder: event.NewAPIRecorder(mgr.GetEventRecorderFor(name)), //nolint:staticcheck // SA1019: crossplane-runtime's event.NewAPIRecorder takes the old API's recorder
	}, w, nil
}
