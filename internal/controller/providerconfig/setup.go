// Package providerconfig runs the controllers that count the users of a
// ProviderConfig (ipsecgw.io; m.ipsecgw.io) or ClusterProviderConfig
// (m.ipsecgw.io) from their ProviderConfigUsages and keep one in use from
// being deleted.
package providerconfig

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/providerconfig"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/v1alpha1"
)

// Setup adds the controllers of the cluster-scoped ProviderConfig, the
// namespaced ProviderConfig and the ClusterProviderConfig to mgr. It
// returns an error when a controller cannot be built or registered.
func Setup(mgr ctrl.Manager, o controller.Options) error {
	for _, c := range []struct {
		gk    string
		kinds resource.ProviderConfigKinds
		pc    client.Object
		usage client.Object
		// kind filters the usages of m.ipsecgw.io, which serve both
		// kinds, by providerConfigRef.kind.
		kind string
	}{
		{v1alpha1.ProviderConfigGroupKind, resource.ProviderConfigKinds{Config: v1alpha1.ProviderConfigGroupVersionKind,
			Usage: v1alpha1.ProviderConfigUsageGroupVersionKind, UsageList: v1alpha1.ProviderConfigUsageListGroupVersionKind},
			&v1alpha1.ProviderConfig{}, &v1alpha1.ProviderConfigUsage{}, ""},
		{nsv1alpha1.ProviderConfigGroupKind, resource.ProviderConfigKinds{Config: nsv1alpha1.ProviderConfigGroupVersionKind,
			Usage: nsv1alpha1.ProviderConfigUsageGroupVersionKind, UsageList: nsv1alpha1.ProviderConfigUsageListGroupVersionKind},
			&nsv1alpha1.ProviderConfig{}, &nsv1alpha1.ProviderConfigUsage{}, nsv1alpha1.ProviderConfigKind},
		{nsv1alpha1.ClusterProviderConfigGroupKind, resource.ProviderConfigKinds{Config: nsv1alpha1.ClusterProviderConfigGroupVersionKind,
			Usage: nsv1alpha1.ProviderConfigUsageGroupVersionKind, UsageList: nsv1alpha1.ProviderConfigUsageListGroupVersionKind},
			&nsv1alpha1.ClusterProviderConfig{}, &nsv1alpha1.ProviderConfigUsage{}, nsv1alpha1.ClusterProviderConfigKind},
	} {
		name := providerconfig.ControllerName(c.gk)
		r := providerconfig.NewReconciler(mgr, c.kinds,
			providerconfig.WithLogger(o.Logger.WithValues("controller", name)),
			providerconfig.WithRecorder(event.NewAPIRecorder(mgr.GetEventRecorderFor(name))), //nolint:staticcheck // SA1019: crossplane-runtime's event.NewAPIRecorder takes the old API's recorder
		)
		if err := ctrl.NewControllerManagedBy(mgr).
			Named(name).
			WithOptions(o.ForControllerRuntime()).
			For(c.pc).
			Watches(c.usage, &resource.EnqueueRequestForProviderConfig{Kind: c.kind}).
			Complete(ratelimiter.NewReconciler(name, r, o.GlobalRateLimiter)); err != nil {
			return err
		}
	}
	return nil
}
