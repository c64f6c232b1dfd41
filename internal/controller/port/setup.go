// Package port runs the Port managed resource's controller: an unbound
// ("VIP-style") Neutron port with fixed IPs, security groups and allowed
// address pairs, whose fixed IP and MAC a gateway pod's secondary interface
// takes.
package port

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

// Setup adds the Port controller to mgr, with Neutron clients from
// clients. It returns an error when a client or the controller cannot be
// built.
//
// External names are Neutron port UUIDs that only Create knows, so the
// reconciler gets no initializer: crossplane-runtime's default would set
// the external name to the MR's name, which is no port ID and would hide an
// MR whose create is not yet recorded. Because every port the provider
// creates carries the MR's CreatedByTag and Observe finds it by that tag
// while the external name is empty, an interrupted create is safe to
// resume: the reconciler is told the external name is deterministic, so it
// proceeds instead of stopping at "cannot determine creation result".
func Setup(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	name := managed.ControllerName(v1alpha1.PortGroupKind)
	// An uncached client: the Connector reads ProviderConfigs and
	// credential Secrets, and caching every Secret of the cluster would
	// cost memory and RBAC the provider does not need.
	kube, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return err
	}
	opts := []managed.ReconcilerOption{
		managed.WithTypedExternalConnector[*v1alpha1.Port](&connector{openstack: &openstack.Connector{
			Kube:    kube,
			Usage:   resource.NewLegacyProviderConfigUsageTracker(mgr.GetClient(), &pcv1alpha1.ProviderConfigUsage{}),
			Clients: clients,
		}}),
		managed.WithInitializers(),
		managed.WithDeterministicExternalName(true),
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
	r := managed.NewReconciler(mgr, resource.ManagedKind(v1alpha1.PortGroupVersionKind), opts...)
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(o.ForControllerRuntime()).
		WithEventFilter(resource.DesiredStateChanged()).
		For(&v1alpha1.Port{}).
		Complete(ratelimiter.NewReconciler(name, r, o.GlobalRateLimiter))
}
