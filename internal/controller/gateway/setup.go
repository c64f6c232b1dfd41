// Package gateway runs the Gateway managed resource's controller: it
// renders a Gateway's configuration and keeps its objects (NAD, ConfigMap,
// Secret, RBAC, NetworkPolicy, Deployment) in the target cluster as
// rendered.
package gateway

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// Setup adds the Gateway controller to mgr. A Gateway reads its agent's
// tunnel status (the status ConfigMap) when it is observed. In the
// provider's own cluster it is observed when that ConfigMap's data or its
// Deployment's ready replicas change (watches), else at the provider's
// --poll as a safety poll and drift check; a Gateway whose ProviderConfig
// targets another cluster is polled every remotePoll instead. It returns
// an error when a client, the watches' cache or the controller cannot be
// built. image is the image of a Gateway that names none (empty:
// DefaultImage).
func Setup(mgr ctrl.Manager, o controller.Options, image string) error {
	if image == "" {
		image = DefaultImage
	}
	newClient := func(cfg *rest.Config) (client.Client, error) {
		return client.New(cfg, client.Options{Scheme: mgr.GetScheme()})
	}
	// An uncached client: caching every Secret and ConfigMap of the
	// cluster would cost memory and RBAC the provider does not need.
	own, err := mrsetup.UncachedClient(mgr)
	if err != nil {
		return err
	}
	w, err := watches(mgr)
	if err != nil {
		return err
	}
	t := &targets{}
	name := managed.ControllerName(v1alpha1.GatewayGroupKind)
	return mrsetup.Register(mgr, o, name, v1alpha1.GatewayGroupVersionKind, &v1alpha1.Gateway{}, mrsetup.Tuning{Poll: t.poll, Watches: w},
		managed.WithTypedExternalConnector[*v1alpha1.Gateway](&connector{
			kube:      own,
			own:       own,
			ownConfig: mgr.GetConfig(),
			usage:     mrsetup.UsageTracker(mgr),
			newClient: newClient,
			targets:   t,
			image:     image,
			recorder:  event.NewAPIRecorder(mgr.GetEventRecorderFor(name)), //nolint:staticcheck // SA1019: crossplane-runtime's event.NewAPIRecorder takes the old API's recorder
		}),
		// Reads go to the API server uncached, so a created object is seen
		// at once: no grace period before believing it is gone.
		managed.WithCreationGracePeriod(0),
	)
}
