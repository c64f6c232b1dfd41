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
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// pcKind is a ProviderConfig kind with what its controller needs.
type pcKind struct {
	gk    string
	kinds resource.ProviderConfigKinds
	pc    client.Object
	usage client.Object
	// kind filters the usages of m.ipsecgw.io, which serve both
	// kinds, by providerConfigRef.kind.
	kind string
}

// all are the cluster-scoped ProviderConfig, the namespaced ProviderConfig
// and the ClusterProviderConfig.
var all = []pcKind{
	{v1alpha1.ProviderConfigGroupKind, resource.ProviderConfigKinds{Config: v1alpha1.ProviderConfigGroupVersionKind,
		Usage: v1alpha1.ProviderConfigUsageGroupVersionKind, UsageList: v1alpha1.ProviderConfigUsageListGroupVersionKind},
		&v1alpha1.ProviderConfig{}, &v1alpha1.ProviderConfigUsage{}, ""},
	{nsv1alpha1.ProviderConfigGroupKind, resource.ProviderConfigKinds{Config: nsv1alpha1.ProviderConfigGroupVersionKind,
		Usage: nsv1alpha1.ProviderConfigUsageGroupVersionKind, UsageList: nsv1alpha1.ProviderConfigUsageListGroupVersionKind},
		&nsv1alpha1.ProviderConfig{}, &nsv1alpha1.ProviderConfigUsage{}, nsv1alpha1.ProviderConfigKind},
	{nsv1alpha1.ClusterProviderConfigGroupKind, resource.ProviderConfigKinds{Config: nsv1alpha1.ClusterProviderConfigGroupVersionKind,
		Usage: nsv1alpha1.ProviderConfigUsageGroupVersionKind, UsageList: nsv1alpha1.ProviderConfigUsageListGroupVersionKind},
		&nsv1alpha1.ClusterProviderConfig{}, &nsv1alpha1.ProviderConfigUsage{}, nsv1alpha1.ClusterProviderConfigKind},
}

// Kind describes the controllers of the cluster-scoped ProviderConfig, the
// namespaced ProviderConfig and the ClusterProviderConfig, one per kind of
// all, each gated on the CRDs of its ProviderConfig kind and of that kind's
// usages: Crossplane installs these CRDs with the provider's package
// whatever its activation policies say; gated, the provider also starts
// cleanly before they exist.
var Kind = func() mrsetup.Kind {
	k := make(mrsetup.Kind, 0, len(all))
	for _, c := range all {
		k = append(k, mrsetup.Controller{
			GVKs: []schema.GroupVersionKind{c.kinds.Config, c.kinds.Usage},
			Setup: func(mgr ctrl.Manager, o controller.Options, _ mrsetup.Dependencies) error {
				return setup(mgr, o, c)
			},
		})
	}
	return k
}()

// setup adds the controller of the ProviderConfig kind c to mgr.
func setup(mgr ctrl.Manager, o controller.Options, c pcKind) error {
	name := providerconfig.ControllerName(c.gk)
	r := providerconfig.NewReconciler(mgr, c.kinds,
		providerconfig.WithLogger(o.Logger.WithValues("controller", name)),
		providerconfig.WithRecorder(event.NewAPIRecorder(mgr.GetEventRecorderFor(name))), //nolint:staticcheck // SA1019: crossplane-runtime's event.NewAPIRecorder takes the old API's recorder
	)
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(o.ForControllerRuntime()).
		For(c.pc).
		Watches(c.usage, &resource.EnqueueRequestForProviderConfig{Kind: c.kind}).
		Complete(ratelimiter.NewReconciler(name, r, o.GlobalRateLimiter))
}
