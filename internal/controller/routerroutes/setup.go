// Package routerroutes runs the RouterRoutes managed resource's controller:
// it keeps a set of extra routes on an existing Neutron router with
// Neutron's atomic add_extraroutes/remove_extraroutes (extension
// extraroute-atomic), so that routes other tools own on the same router
// are never touched.
package routerroutes

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	pcv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// Setup adds the RouterRoutes controller to mgr, taking Neutron clients
// from clients. It returns an error when a client or the controller cannot
// be built.
func Setup(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	name := managed.ControllerName(v1alpha1.RouterRoutesGroupKind)
	// An uncached client for ProviderConfigs and credential Secrets:
	// caching every Secret of the cluster would cost memory and RBAC the
	// provider does not need.
	kube, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return err
	}
	opts := []managed.ReconcilerOption{
		managed.WithTypedExternalConnector(NewConnector(openstack.Connector{
			Kube:    kube,
			Usage:   resource.NewLegacyProviderConfigUsageTracker(mgr.GetClient(), &pcv1alpha1.ProviderConfigUsage{}),
			Clients: clients,
		})),
		managed.WithLogger(o.Logger.WithValues("controller", name)),
		managed.WithPollInterval(o.PollInterval),
		managed.WithRecorder(event.NewAPIRecorder(mgr.GetEventRecorderFor(name))),
	}
	if o.Features.Enabled(feature.EnableBetaManagementPolicies) {
		opts = append(opts, managed.WithManagementPolicies())
	}
	if o.MetricOptions != nil {
		opts = append(opts, managed.WithMetricRecorder(o.MetricOptions.MRMetrics))
	}
	r := managed.NewReconciler(mgr, resource.ManagedKind(v1alpha1.RouterRoutesGroupVersionKind), opts...)
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(o.ForControllerRuntime()).
		WithEventFilter(resource.DesiredStateChanged()).
		For(&v1alpha1.RouterRoutes{}).
		Complete(ratelimiter.NewReconciler(name, r, o.GlobalRateLimiter))
}
