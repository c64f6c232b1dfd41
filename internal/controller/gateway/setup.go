// Package gateway runs the Gateway managed resource's controller: it
// renders a Gateway's configuration and keeps its objects (NAD, ConfigMap,
// Secret, RBAC, NetworkPolicy, Deployment) in the target cluster as
// rendered.
package gateway

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	pcv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
)

// Setup adds the Gateway controller to mgr. It returns an error when a
// client or the controller cannot be built.
func Setup(mgr ctrl.Manager, o controller.Options) error {
	name := managed.ControllerName(v1alpha1.GatewayGroupKind)
	newClient := func(cfg *rest.Config) (client.Client, error) {
		return client.New(cfg, client.Options{Scheme: mgr.GetScheme()})
	}
	// An uncached client: caching every Secret and ConfigMap of the
	// cluster would cost memory and RBAC the provider does not need.
	own, err := newClient(mgr.GetConfig())
	if err != nil {
		return err
	}
	opts := []managed.ReconcilerOption{
		managed.WithTypedExternalConnector[*v1alpha1.Gateway](&connector{
			kube:      own,
			own:       own,
			ownConfig: mgr.GetConfig(),
			usage:     resource.NewLegacyProviderConfigUsageTracker(mgr.GetClient(), &pcv1alpha1.ProviderConfigUsage{}),
			newClient: newClient,
		}),
		managed.WithLogger(o.Logger.WithValues("controller", name)),
		managed.WithPollInterval(o.PollInterval),
		// Reads go to the API server uncached, so a created object is seen
		// at once: no grace period before believing it is gone.
		managed.WithCreationGracePeriod(0),
		managed.WithRecorder(event.NewAPIRecorder(mgr.GetEventRecorderFor(name))),
	}
	if o.Features.Enabled(feature.EnableBetaManagementPolicies) {
		opts = append(opts, managed.WithManagementPolicies())
	}
	if o.MetricOptions != nil {
		opts = append(opts, managed.WithMetricRecorder(o.MetricOptions.MRMetrics))
	}
	r := managed.NewReconciler(mgr, resource.ManagedKind(v1alpha1.GatewayGroupVersionKind), opts...)
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(o.ForControllerRuntime()).
		WithEventFilter(resource.DesiredStateChanged()).
		For(&v1alpha1.Gateway{}).
		Complete(ratelimiter.NewReconciler(name, r, o.GlobalRateLimiter))
}
