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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/gateway/v1alpha1"
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
// targets another cluster is polled every remotePoll instead. Its
// ProviderConfig comes from the manager's cache, the objects of a Gateway
// of the provider's own cluster from the cache the watches use
// (ownCluster), the Secrets it names from the API server, each once per
// reconcile. It returns an error when a client, the cache or the
// controller cannot be built. d.GatewayImage is the image of a Gateway
// that names none (empty: DefaultImage); d.OpenStack's Credentials read
// the ProviderConfigs and their kubeconfig Secrets.
func setup(mgr ctrl.Manager, o controller.Options, d mrsetup.Dependencies) error {
	name := managed.ControllerName(v1alpha1.GatewayGroupKind)
	c, w, err := newConnector(mgr, name, false, d)
	if err != nil {
		return err
	}
	c.usage = mrsetup.UsageTracker(mgr)
	return mrsetup.Register(mgr, o, name, v1alpha1.GatewayGroupVersionKind, &v1alpha1.Gateway{}, mrsetup.Tuning{Poll: c.poll, Watches: w},
		managed.WithTypedExternalConnector[*v1alpha1.Gateway](c),
		// No grace period before believing a created object gone: the
		// cache trails a create by a watch event, and an Observe that
		// comes sooner only has the idempotent apply of Create run again,
		// where the grace period would requeue with an event each time.
		managed.WithCreationGracePeriod(0),
	)
}

// setupNamespaced adds the controller of the namespaced Gateway
// (gateway.m.ipsecgw.io) to mgr, as setup does: the same external client
// on the namespaced twin (mrsetup.TwinExternal), its objects in the
// Gateway's own namespace of the cluster its ProviderConfig of that
// namespace or its ClusterProviderConfig names, read and watched through
// the cache the cluster-scoped Gateway's controller uses. It returns an
// error when a client, the cache or the controller cannot be built.
func setupNamespaced(mgr ctrl.Manager, o controller.Options, d mrsetup.Dependencies) error {
	name := managed.ControllerName(nsv1alpha1.GatewayGroupKind)
	c, w, err := newConnector(mgr, name, true, d)
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
// d.GatewayImage (empty: DefaultImage).
func newConnector(mgr ctrl.Manager, name string, namespaced bool, d mrsetup.Dependencies) (*connector, []source.TypedSource[reconcile.Request], error) {
	image := d.GatewayImage
	if image == "" {
		image = DefaultImage
	}
	own, err := ownClusterOf(mgr)
	if err != nil {
		return nil, nil, err
	}
	config, err := mrsetup.Credentials(mgr, d.OpenStack)
	if err != nil {
		return nil, nil, err
	}
	return &connector{
		config: config,
		// Uncached: the tenants' Secrets carry no label of the provider's
		// to select them by, and caching every Secret of the cluster would
		// cost memory and RBAC the provider does not need.
		secrets:  own.clusters.Own,
		objects:  own.cache,
		clusters: own.clusters,
		targets:  &targets{},
		details:  &detailHold{},
		image:    image,
		recorder: event.NewAPIRecorder(mgr.GetEventRecorderFor(name)), //nolint:staticcheck // SA1019: crossplane-runtime's event.NewAPIRecorder takes the old API's recorder
	}, watches(own.cache, namespaced), nil
}
