// Package gateway runs the Gateway managed resource's controller: it
// renders a Gateway's configuration and keeps its objects (NAD, ConfigMap,
// Secret, RBAC, NetworkPolicy, Deployment) in the target cluster as
// rendered.
package gateway

import (
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// tuning: a Gateway reads its agent's tunnel status (the status ConfigMap)
// when it is observed, so it is observed every 15 s: a tunnel that comes up
// at a cutover shows on the Gateway and the claim within 15 s, not a
// minute later. Each observation is a handful of uncached GETs in the
// gateway's namespace.
var tuning = mrsetup.Tuning{PollInterval: 15 * time.Second}

// Setup adds the Gateway controller to mgr. It returns an error when a
// client or the controller cannot be built.
func Setup(mgr ctrl.Manager, o controller.Options) error {
	newClient := func(cfg *rest.Config) (client.Client, error) {
		return client.New(cfg, client.Options{Scheme: mgr.GetScheme()})
	}
	// An uncached client: caching every Secret and ConfigMap of the
	// cluster would cost memory and RBAC the provider does not need.
	own, err := mrsetup.UncachedClient(mgr)
	if err != nil {
		return err
	}
	name := managed.ControllerName(v1alpha1.GatewayGroupKind)
	return mrsetup.Register(mgr, o, name, v1alpha1.GatewayGroupVersionKind, &v1alpha1.Gateway{}, tuning,
		managed.WithTypedExternalConnector[*v1alpha1.Gateway](&connector{
			kube:      own,
			own:       own,
			ownConfig: mgr.GetConfig(),
			usage:     mrsetup.UsageTracker(mgr),
			newClient: newClient,
			recorder:  event.NewAPIRecorder(mgr.GetEventRecorderFor(name)), //nolint:staticcheck // SA1019: crossplane-runtime's event.NewAPIRecorder takes the old API's recorder
		}),
		// Reads go to the API server uncached, so a created object is seen
		// at once: no grace period before believing it is gone.
		managed.WithCreationGracePeriod(0),
	)
}
