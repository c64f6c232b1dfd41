// Package mrsetup holds what every managed resource controller of the
// provider sets up the same way: the reconciler's common options, the
// OpenStack kinds' extra options and connector, and the registration with
// the manager.
package mrsetup

import (
	"context"
	"fmt"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/gophercloud/gophercloud/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	pcv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	nspcv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// Tuning adjusts how often a controller looks at its managed resources. A
// zero field keeps the provider's setting.
type Tuning struct {
	// PollInterval is how long after a successful reconcile a resource is
	// observed again (drift detection); never longer than the provider's
	// --poll.
	PollInterval time.Duration
	// Poll, when set, is the poll interval of a resource after a
	// successful reconcile, given the controller's (PollInterval or
	// --poll): a kind that polls faster only in some states.
	Poll managed.PollIntervalHook
	// Watches enqueue a resource when something it reports on changes,
	// besides the resource itself (the Gateway: its agent's status), so
	// that the kind need not poll fast for it. The controller's event
	// filter does not apply to them.
	Watches []source.TypedSource[reconcile.Request]
}

// Register adds a controller named name that reconciles the managed
// resources of kind gvk (whose Go type obj is) with a managed.Reconciler
// built from opts and the options every controller shares: logger, poll
// interval (o, adjusted by t), retry backoff (1 s doubling to 1 min),
// events, management policies when enabled, and MR metrics and MR state
// metrics when configured. It returns an error when the controller cannot be built.
func Register(mgr ctrl.Manager, o controller.Options, name string, gvk schema.GroupVersionKind, obj client.Object,
	t Tuning, opts ...managed.ReconcilerOption) error {
	return register(mgr, o, name, gvk, obj, t, newBackoff(), opts...)
}

// register is Register with the backoff b of the controller's work queue.
func register(mgr ctrl.Manager, o controller.Options, name string, gvk schema.GroupVersionKind, obj client.Object,
	t Tuning, b *backoff, opts ...managed.ReconcilerOption) error {
	poll := o.PollInterval
	if t.PollInterval > 0 && t.PollInterval < poll {
		poll = t.PollInterval
	}
	all := append([]managed.ReconcilerOption{
		managed.WithLogger(o.Logger.WithValues("controller", name)),
		managed.WithPollInterval(poll),
		managed.WithRecorder(event.NewAPIRecorder(mgr.GetEventRecorderFor(name))), //nolint:staticcheck // SA1019: crossplane-runtime's event.NewAPIRecorder takes the old API's recorder
	}, opts...)
	if t.Poll != nil {
		all = append(all, managed.WithPollIntervalHook(t.Poll))
	}
	if o.Features.Enabled(feature.EnableBetaManagementPolicies) {
		all = append(all, managed.WithManagementPolicies())
	}
	if o.MetricOptions != nil {
		all = append(all, managed.WithMetricRecorder(o.MetricOptions.MRMetrics))
	}
	r := managed.NewReconciler(mgr, resource.ManagedKind(gvk), all...)
	sr, err := stateRecorder(mgr.GetClient(), o, gvk)
	if err != nil {
		return err
	}
	if sr != nil {
		if err := mgr.Add(sr); err != nil {
			return fmt.Errorf("cannot add the state metrics of %s: %w", gvk.Kind, err)
		}
	}
	co := o.ForControllerRuntime()
	co.RateLimiter = b
	c := ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(co).
		WithEventFilter(resource.DesiredStateChanged()).
		For(obj)
	for _, src := range t.Watches {
		c = c.WatchesRawSource(src)
	}
	return c.Complete(ratelimiter.NewReconciler(name, r, o.GlobalRateLimiter))
}

// UncachedClient returns a client that reads straight from the API server:
// for Secrets and other objects the provider must not cache cluster-wide.
func UncachedClient(mgr ctrl.Manager) (client.Client, error) {
	return client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
}

// WatchCredentials returns the reader of ProviderConfigs and credentials
// Secrets that the OpenStack connectors share (openstack.Clients'
// Credentials): ProviderConfigs of both groups and ClusterProviderConfigs
// from mgr's cache, each Secret from an
// informer of its own that stops with mgr, so a reconcile reads neither
// from the API server. It returns an error when its client cannot be made
// or mgr does not take it.
func WatchCredentials(mgr ctrl.Manager) (*clients.WatchedSecrets, error) {
	core, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("cannot create the client of the credentials' informers: %w", err)
	}
	w := clients.NewWatchedSecrets(core, mgr.GetClient())
	if err := mgr.Add(w); err != nil {
		return nil, fmt.Errorf("cannot add the credentials' informers to the manager: %w", err)
	}
	return w, nil
}

// UsageTracker records ProviderConfigUsages of cluster-scoped managed
// resources.
func UsageTracker(mgr ctrl.Manager) resource.LegacyTracker {
	return resource.NewLegacyProviderConfigUsageTracker(mgr.GetClient(), &pcv1alpha1.ProviderConfigUsage{})
}

// ModernUsageTracker records the ProviderConfigUsages (m.ipsecgw.io, in
// the resource's namespace) of namespaced managed resources, for a
// ProviderConfig or a ClusterProviderConfig.
func ModernUsageTracker(mgr ctrl.Manager) resource.ModernTracker {
	return resource.NewProviderConfigUsageTracker(mgr.GetClient(), &nspcv1alpha1.ProviderConfigUsage{})
}

// Credentials returns the reader of ProviderConfigs and the Secrets they
// name that the controllers share: clients.Credentials (the provider's
// main sets WatchCredentials' there), or an uncached client when that is
// nil. It returns an error when that client cannot be built.
func Credentials(mgr ctrl.Manager, clients *openstack.Clients) (client.Reader, error) {
	if clients.Credentials != nil {
		return clients.Credentials, nil
	}
	return UncachedClient(mgr)
}

// OpenStackConnector returns the connector the OpenStack kinds embed,
// authenticating through clients and reading credentials with
// Credentials.
func OpenStackConnector(mgr ctrl.Manager, clients *openstack.Clients) (openstack.Connector, error) {
	kube, err := Credentials(mgr, clients)
	if err != nil {
		return openstack.Connector{}, err
	}
	return openstack.Connector{Kube: kube, Usage: UsageTracker(mgr), ModernUsage: ModernUsageTracker(mgr), Clients: clients}, nil
}

// RegisterOpenStack adds the controller of an OpenStack kind: gk and gvk
// name the kind, obj is its Go type, and connect makes its connector from
// the shared openstack.Connector (authenticating through clients);
// t is as for Register. find finds the Neutron object of a create the
// provider did not live to record (see openstack.CreateRecovery); nil for
// a kind whose Create makes no Neutron object. The reconciler takes
// OpenStackOptions and resolves references at every reconcile
// (FollowingResolver). The errors of the kind's external clients steer
// its retries: a Retry-After hold or the token bucket of the
// ProviderConfig (openstack.Gate) retries not before the request may be
// sent, RetryWithin within its bound (see backoff). It returns an error
// when a client or the controller cannot be built.
func RegisterOpenStack[T resource.Managed](mgr ctrl.Manager, o controller.Options, clients *openstack.Clients,
	gk string, gvk schema.GroupVersionKind, obj T, t Tuning, find openstack.Finder, connect func(openstack.Connector) managed.TypedExternalConnector[T]) error {
	c, err := OpenStackConnector(mgr, clients)
	if err != nil {
		return err
	}
	var recovery *openstack.CreateRecovery
	if find != nil {
		recovery = &openstack.CreateRecovery{Kube: mgr.GetClient(), Network: c.Network, Find: find, Settling: clients.Settling(nil)}
	}
	b := newBackoff()
	return register(mgr, o, managed.ControllerName(gk), gvk, obj, t, b,
		append(OpenStackOptions(recovery), managed.WithTypedExternalConnector(noteErrors(connect(c), b)),
			managed.WithReferenceResolver(NewFollowingResolver(mgr.GetClient())))...)
}

// An ExternalFor makes the external client of a kind from the Neutron
// client sc of a resource's ProviderConfig and settle, which says when an
// interrupted create has surely made nothing (openstack.Clients.Settling;
// the zero value never waits, for tests of one reconcile).
type ExternalFor[T resource.Managed] func(sc *gophercloud.ServiceClient, settle openstack.Settling) managed.TypedExternalClient[T]

// RegisterNeutron is RegisterOpenStack for a kind whose external client
// needs nothing but the Neutron client of the resource's ProviderConfig:
// external makes it (see NeutronConnector).
func RegisterNeutron[T resource.Managed](mgr ctrl.Manager, o controller.Options, clients *openstack.Clients,
	gk string, gvk schema.GroupVersionKind, obj T, t Tuning, find openstack.Finder, external ExternalFor[T]) error {
	return RegisterOpenStack(mgr, o, clients, gk, gvk, obj, t, find, func(c openstack.Connector) managed.TypedExternalConnector[T] {
		return NeutronConnector(c, external)
	})
}

// NeutronConnector returns the connector of an OpenStack kind whose
// external client needs nothing but the Neutron client of the managed
// resource's ProviderConfig: it tracks the resource's use of that
// ProviderConfig (c.Network) and has external make the client from the
// Neutron client and the settling time of c's Clients. Errors name the
// ProviderConfig and what failed.
func NeutronConnector[T resource.Managed](c openstack.Connector, external ExternalFor[T]) managed.TypedExternalConnector[T] {
	return managed.TypedExternalConnectorFn[T](func(ctx context.Context, mg T) (managed.TypedExternalClient[T], error) {
		sc, err := c.Network(ctx, mg)
		if err != nil {
			return nil, err
		}
		return external(sc, c.Clients.Settling(nil)), nil
	})
}

// OpenStackOptions are the reconciler options of the OpenStack kinds.
// recovery settles the creates a killed provider left incomplete, before
// crossplane-runtime's create-pending guard refuses to go on with them;
// nil for a kind whose Create makes no Neutron object.
func OpenStackOptions(recovery *openstack.CreateRecovery) []managed.ReconcilerOption {
	opts := []managed.ReconcilerOption{
		// Neutron reads its own writes: an object it no longer returns is
		// gone, also right after it was created.
		managed.WithCreationGracePeriod(0),
	}
	if recovery == nil {
		// The external name is known before Create (RouterRoutes': the
		// router's ID) and Create only adds to an existing object: an
		// interrupted create is simply repeated.
		return append(opts, managed.WithInitializers(), managed.WithDeterministicExternalName(true))
	}
	// The external name is Neutron's ID, known only from the create's
	// answer, so the guard stays on: no deterministic external name.
	return append(opts, managed.WithInitializers(recovery))
}
