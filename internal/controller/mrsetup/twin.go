package mrsetup

import (
	"context"
	"errors"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/gophercloud/gophercloud/v2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
			return TwinExternal[N](external(c, sc)), nil
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

// TwinExternal returns the external client of a namespaced twin N that runs
// inner, C's external client, on each N as a C: the one Observe, Create,
// Update and Delete of both scopes, for the kinds whose connector needs
// more than RegisterOpenStackTwin's (the Gateway, NodeAddressPairs).
func TwinExternal[N Twin[C], C resource.Managed](inner managed.TypedExternalClient[C]) managed.TypedExternalClient[N] {
	return &twinClient[N, C]{inner: inner}
}

// TwinStatus returns a status client through which C's external client,
// working on a copy of n as a C, saves status mid-reconcile (such as
// NodeAddressPairs' record of the pairs it is about to add): an Update of
// that C updates n's status, and gives the C n's new resource version.
// Only Update is supported; the other writes return an error.
func TwinStatus[N Twin[C], C resource.Managed](kube client.StatusClient, n N) client.StatusClient {
	return twinStatus[N, C]{kube: kube, n: n}
}

type twinStatus[N Twin[C], C resource.Managed] struct {
	kube client.StatusClient
	n    N
}

func (s twinStatus[N, C]) Status() client.SubResourceWriter { return twinStatusWriter[N, C](s) }

type twinStatusWriter[N Twin[C], C resource.Managed] struct {
	kube client.StatusClient
	n    N
}

// errTwinStatus is the error of a status write a twin does not support.
const errTwinStatus = "cannot write the status of a namespaced twin but by Update"

func (w twinStatusWriter[N, C]) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	c, ok := obj.(C)
	if !ok {
		return errors.New(errTwinStatus)
	}
	w.n.FromCluster(c)
	err := w.kube.Status().Update(ctx, w.n, opts...)
	c.SetResourceVersion(w.n.GetResourceVersion())
	return err
}

func (w twinStatusWriter[N, C]) Create(context.Context, client.Object, client.Object, ...client.SubResourceCreateOption) error {
	return errors.New(errTwinStatus)
}

func (w twinStatusWriter[N, C]) Patch(context.Context, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
	return errors.New(errTwinStatus)
}

func (w twinStatusWriter[N, C]) Apply(context.Context, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
	return errors.New(errTwinStatus)
}

// TwinRecorder returns a recorder that records every event of C's external
// client, which names the C it works on, on n, the namespaced twin, so that
// `kubectl describe` of n shows them.
func TwinRecorder(r event.Recorder, n runtime.Object) event.Recorder {
	return twinRecorder{r: r, n: n}
}

type twinRecorder struct {
	r event.Recorder
	n runtime.Object
}

func (t twinRecorder) Event(_ runtime.Object, e event.Event) { t.r.Event(t.n, e) }

func (t twinRecorder) WithAnnotations(keysAndValues ...string) event.Recorder {
	return twinRecorder{r: t.r.WithAnnotations(keysAndValues...), n: t.n}
}
