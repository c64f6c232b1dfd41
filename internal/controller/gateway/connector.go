package gateway

import (
	"context"
	"fmt"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	pcv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/cluster"
)

// connector connects a Gateway to the cluster its ProviderConfig names.
type connector struct {
	// kube reads ProviderConfigs and PSK Secrets in the provider's cluster.
	kube client.Client
	// own is the provider's cluster, for InjectedIdentity, and ownConfig
	// its REST config.
	own       client.Client
	ownConfig *rest.Config
	usage     resource.LegacyTracker
	// newClient builds a client of a cluster a kubeconfig names.
	newClient func(*rest.Config) (client.Client, error)
	// recorder emits the Gateway's tunnel events.
	recorder event.Recorder
	// targets learns which ProviderConfigs target another cluster.
	targets *targets
	// image is the image of a Gateway that names none.
	image string
}

// Connect tracks the Gateway's use of its ProviderConfig and returns an
// external client for the target cluster. Errors name the ProviderConfig.
func (c *connector) Connect(ctx context.Context, gw *v1alpha1.Gateway) (managed.TypedExternalClient[*v1alpha1.Gateway], error) {
	if err := c.usage.Track(ctx, gw); err != nil {
		return nil, fmt.Errorf("cannot track ProviderConfig usage: %w", err)
	}
	ref := gw.GetProviderConfigReference()
	if ref == nil {
		return nil, fmt.Errorf("spec.providerConfigRef is not set")
	}
	pc := &pcv1alpha1.ProviderConfig{}
	if err := c.kube.Get(ctx, types.NamespacedName{Name: ref.Name}, pc); err != nil {
		return nil, fmt.Errorf("cannot get ProviderConfig %s: %w", ref.Name, err)
	}
	c.targets.set(pc.Name, pc.Spec.Cluster.Source == xpv2.CredentialsSourceSecret)
	target, err := cluster.Target(ctx, c.kube, pc, c.own, c.ownConfig, c.newClient)
	if err != nil {
		return nil, err
	}
	return &external{kube: c.kube, target: target, recorder: c.recorder, image: c.image}, nil
}
