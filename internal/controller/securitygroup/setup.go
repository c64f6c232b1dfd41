// Package securitygroup runs the SecurityGroup managed resource's
// controller: a Neutron security group whose rules are exactly the spec's.
package securitygroup

import (
	"context"

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

// connector gives a SecurityGroup the Neutron client of its ProviderConfig.
type connector struct{ openstack.Connector }

// Connect returns an external client for sg's ProviderConfig.
func (c *connector) Connect(ctx context.Context, sg *v1alpha1.SecurityGroup) (managed.TypedExternalClient[*v1alpha1.SecurityGroup], error) {
	n, err := c.Network(ctx, sg)
	if err != nil {
		return nil, err
	}
	return &external{neutron: n}, nil
}

// Setup adds the SecurityGroup controller to mgr, authenticating through
// clients. It returns an error when the controller cannot be built.
func Setup(mgr ctrl.Manager, o controller.Options, clients *openstack.Clients) error {
	name := managed.ControllerName(v1alpha1.SecurityGroupGroupKind)
	kube, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return err
	}
	opts := []managed.ReconcilerOption{
		managed.WithTypedExternalConnector[*v1alpha1.SecurityGroup](&connector{openstack.Connector{
			Kube:    kube,
			Usage:   resource.NewLegacyProviderConfigUsageTracker(mgr.GetClient(), &pcv1alpha1.ProviderConfigUsage{}),
			Clients: clients,
		}}),
		// The external name is Neutron's ID, set by Create: not the
		// object's name.
		managed.WithInitializers(),
		// A group whose create was not recorded is found by its tag.
		managed.WithDeterministicExternalName(true),
		// Neutron reads its own writes: a group it no longer returns is
		// gone, also right after it was created.
		managed.WithCreationGracePeriod(0),
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
	r := managed.NewReconciler(mgr, resource.ManagedKind(v1alpha1.SecurityGroupGroupVersionKind), opts...)
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(o.ForControllerRuntime()).
		WithEventFilter(resource.DesiredStateChanged()).
		For(&v1alpha1.SecurityGroup{}).
		Complete(ratelimiter.NewReconciler(name, r, o.GlobalRateLimiter))
}
