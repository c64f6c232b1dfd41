package mrsetup

import (
	"context"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/gophercloud/gophercloud/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// A Twin is a namespaced managed resource whose kind has a cluster-scoped
// twin C (apis/namespaced/...): its controller runs C's external client on
// a copy of it as a C, so that both scopes share one Observe, Create,
// Update and Delete.
type Twin[C resource.Managed] interface {
	resource.Managed
	// Cluster returns copies of the resource's metadata, parameters and
	// status as a C.
	Cluster() C
	// FromCluster sets the resource's metadata, parameters and status to
	// those of c.
	FromCluster(c C)
}

// RegisterOpenStackTwin adds the controller of the namespaced twin N of an
// OpenStack kind C, as RegisterOpenStack does: its connector tracks the use
// of and reads the N's ProviderConfig of its own namespace or its
// ClusterProviderConfig (openstack.Connector.Network), and external makes
// C's external client for that Neutron client, which then sees each N as a
// C. t's Poll and find see a C as well. It returns an error when a client
// or the controller cannot be built.
func RegisterOpenStackTwin[N Twin[C], C resource.Managed](mgr ctrl.Manager, o controller.Options, clients *openstack.Clients,
	gk string, gvk schema.GroupVersionKind, obj N, t Tuning, find openstack.Finder,
	external func(c openstack.Connector, sc *gophercloud.ServiceClient) managed.TypedExternalClient[C]) error {
	if poll := t.Poll; poll != nil {
		t.Poll = func(mg resource.Managed, d time.Duration) time.Duration {
			if n, ok := mg.(N); ok {
				return poll(n.Cluster(), d)
			}
			return poll(mg, d)
		}
	}
	var findView openstack.Finder
	if find != nil {
		findView = func(ctx context.Context, sc *gophercloud.ServiceClient, mg resource.Managed) (string, bool, error) {
			if n, ok := mg.(N); ok {
				return find(ctx, sc, n.Cluster())
			}
			return find(ctx, sc, mg)
		}
	}
	return RegisterOpenStack(mgr, o, clients, gk, gvk, obj, t, findView, func(c openstack.Connector) managed.TypedExternalConnector[N] {
		return managed.TypedExternalConnectorFn[N](func(ctx context.Context, n N) (managed.TypedExternalClient[N], error) {
			sc, err := c.Network(ctx, n)
			if err != nil {
				return nil, err
			}
			return &twinClient[N, C]{inner: external(c, sc)}, nil
		})
	})
}

// twinClient runs the external client of C on a namespaced twin N.
type twinClient[N Twin[C], C resource.Managed] struct {
	inner managed.TypedExternalClient[C]
}

func (t *twinClient[N, C]) Observe(ctx context.Context, n N) (managed.ExternalObservation, error) {
	c := n.Cluster()
	o, err := t.inner.Observe(ctx, c)
	n.FromCluster(c)
	return o, err
}

func (t *twinClient[N, C]) Create(ctx context.Context, n N) (managed.ExternalCreation, error) {
	c := n.Cluster()
	r, err := t.inner.Create(ctx, c)
	n.FromCluster(c)
	return r, err
}

func (t *twinClient[N, C]) Update(ctx context.Context, n N) (managed.ExternalUpdate, error) {
	c := n.Cluster()
	r, err := t.inner.Update(ctx, c)
	n.FromCluster(c)
	return r, err
}

func (t *twinClient[N, C]) Delete(ctx context.Context, n N) (managed.ExternalDelete, error) {
	c := n.Cluster()
	r, err := t.inner.Delete(ctx, c)
	n.FromCluster(c)
	return r, err
}

func (t *twinClient[N, C]) Disconnect(ctx context.Context) error { return t.inner.Disconnect(ctx) }
