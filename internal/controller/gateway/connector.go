package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	pcv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/cluster"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// errTrackUsage is the error of a usage that cannot be recorded.
const errTrackUsage = "cannot track ProviderConfig usage"

// connector connects a Gateway to the cluster its ProviderConfig names.
type connector struct {
	// config reads ProviderConfigs and the kubeconfig Secrets they name.
	config client.Reader
	// secrets reads the Secrets a Gateway names (PSKs, certificates) in
	// the provider's cluster.
	secrets client.Reader
	// objects reads the objects of the Gateways of the provider's own
	// cluster (ownCluster's cache).
	objects client.Reader
	usage   resource.LegacyTracker
	// clusters are the clients of the clusters the ProviderConfigs
	// select.
	clusters *cluster.Targets[client.Client]
	// recorder emits the Gateway's tunnel events.
	recorder event.Recorder
	// targets learns which ProviderConfigs target another cluster.
	targets *targets
	// details holds back the Gateways' status changes of details alone
	// (countersInterval).
	details *detailHold
	// image is the image of a Gateway that names none.
	image string
}

// Connect tracks the Gateway's use of its ProviderConfig and returns an
// external client for the target cluster. Errors name the ProviderConfig.
func (c *connector) Connect(ctx context.Context, gw *v1alpha1.Gateway) (managed.TypedExternalClient[*v1alpha1.Gateway], error) {
	if err := c.usage.Track(ctx, gw); err != nil {
		return nil, fmt.Errorf(errTrackUsage+": %w", err)
	}
	ref := gw.GetProviderConfigReference()
	if ref == nil {
		return nil, fmt.Errorf("spec.providerConfigRef is not set")
	}
	pc := &pcv1alpha1.ProviderConfig{}
	if err := c.config.Get(ctx, types.NamespacedName{Name: ref.Name}, pc); err != nil {
		return nil, fmt.Errorf("cannot get ProviderConfig %s: %w", ref.Name, err)
	}
	return c.external(ctx, openstack.ClusterConfig(pc), c.recorder)
}

// external returns the external client of a Gateway whose ProviderConfig
// is cfg, recording its events with r. Its objects are read from the cache
// in the provider's own cluster, from the API server in another (polled,
// not watched).
func (c *connector) external(ctx context.Context, cfg openstack.Config, r event.Recorder) (*external, error) {
	remote := cfg.Cluster.Source == xpv2.CredentialsSourceSecret
	c.targets.set(cfg.Key, remote)
	target, err := c.clusters.Target(ctx, c.config, cfg.Name, cfg.Cluster)
	if err != nil {
		return nil, err
	}
	live := c.objects
	if remote {
		live = target
	}
	return &external{kube: &readOnce{Reader: c.secrets}, target: target, live: &readOnce{Reader: live},
		recorder: r, details: c.details, image: c.image}, nil
}

// nsConnector connects a namespaced Gateway (gateway.m.ipsecgw.io) to the
// cluster its ProviderConfig of its own namespace or its
// ClusterProviderConfig names, with the cluster-scoped Gateway's external
// client working on it as its twin (mrsetup.TwinExternal): its objects run
// in its own namespace, and its PSKs are read from Secrets of that
// namespace only.
type nsConnector struct {
	*connector
	// usage records the ProviderConfigUsages of namespaced Gateways.
	usage resource.ModernTracker
	// gateways reads cluster-scoped Gateways (the manager's cache).
	gateways client.Reader
}

// errTaken is the error of a namespaced Gateway whose objects a
// cluster-scoped Gateway of the same name already runs in its namespace.
const errTaken = "cannot run Gateway %s/%s: the cluster-scoped Gateway %s runs its objects in namespace %s under the same names: " +
	"give this Gateway another name"

// Connect tracks the Gateway's use of its ProviderConfig or
// ClusterProviderConfig and returns an external client for the target
// cluster. It refuses a namespaced Gateway named as a cluster-scoped one
// whose objects are in the same namespace (the two would take each other's
// objects). Errors name the config and the field at fault.
func (c *nsConnector) Connect(ctx context.Context, gw *nsv1alpha1.Gateway) (managed.TypedExternalClient[*nsv1alpha1.Gateway], error) {
	if err := c.usage.Track(ctx, gw); err != nil {
		return nil, fmt.Errorf(errTrackUsage+": %w", err)
	}
	cfg, err := openstack.ResolveConfig(ctx, c.config, gw)
	if err != nil {
		return nil, err
	}
	other := &v1alpha1.Gateway{}
	switch err := c.gateways.Get(ctx, types.NamespacedName{Name: gw.Name}, other); {
	case err == nil && other.Spec.ForProvider.Namespace == gw.Namespace:
		return nil, fmt.Errorf(errTaken, gw.Namespace, gw.Name, other.Name, gw.Namespace)
	case err != nil && !kerrors.IsNotFound(err):
		return nil, fmt.Errorf("cannot get the cluster-scoped Gateway %s: %w", gw.Name, err)
	}
	e, err := c.external(ctx, cfg, mrsetup.TwinRecorder(c.recorder, gw))
	if err != nil {
		return nil, err
	}
	return mrsetup.TwinExternal[*nsv1alpha1.Gateway, *v1alpha1.Gateway](e), nil
}

// poll is the Gateway controller's managed.PollIntervalHook: the interval
// targets gives a Gateway (targets.poll), or sooner, when its status holds
// back a change of details (detailHold.due), when that may be written.
func (c *connector) poll(mg resource.Managed, d time.Duration) time.Duration {
	return c.details.due(mg.GetUID(), c.targets.poll(mg, d), time.Now())
}
