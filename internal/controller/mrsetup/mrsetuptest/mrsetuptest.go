// Package mrsetuptest runs crossplane-runtime's managed reconciler with
// the OpenStack kinds' options (mrsetup.OpenStackOptions) on a fake API
// server, for the kinds' unit tests of what happens across reconciles and
// provider restarts: a create the provider did not live to record, a lost
// create answer.
package mrsetuptest

import (
	"context"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource/fake"
	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ipsecgw/provider-ipsec/apis"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack/neutrontest"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// A Harness reconciles one managed resource held by a fake API server,
// against a recording fake Neutron (neutrontest).
type Harness[T resource.Managed] struct {
	// Kube is the fake API server's client.
	Kube client.Client
	key  client.ObjectKey
	// connect makes the external client of one reconcile.
	connect mrsetup.ExternalFor[T]
	sc      *gophercloud.ServiceClient
	replies map[string]neutrontest.Reply
	seen    *[]string
	gvk     schema.GroupVersionKind
	find    openstack.Finder
}

// A Step is one reconcile: what Neutron answers during it and the
// requests it must receive, as neutrontest.Serve keys and records them.
type Step struct {
	Replies  map[string]neutrontest.Reply
	Requests []string
}

// New returns a Harness for mg, of kind gvk, stored in a new fake API
// server. Each reconcile is a fresh reconciler, as after a provider
// restart, with the OpenStack kinds' options, find as the kind's
// openstack.Finder and connect making the external client on the fake
// Neutron's client.
func New[T resource.Managed](t *testing.T, gvk schema.GroupVersionKind, mg T,
	find openstack.Finder, connect mrsetup.ExternalFor[T]) *Harness[T] {
	t.Helper()
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	kube := fakeclient.NewClientBuilder().WithScheme(s).WithObjects(mg).WithStatusSubresource(mg).Build()
	replies := map[string]neutrontest.Reply{}
	sc, seen := neutrontest.Serve(t, replies)
	return &Harness[T]{Kube: kube, key: client.ObjectKeyFromObject(mg), connect: connect, sc: sc, replies: replies, seen: seen, gvk: gvk, find: find}
}

// Step runs one reconcile with Neutron answering s.Replies and reports
// on t, with reason, when Neutron did not receive exactly s.Requests.
func (h *Harness[T]) Step(t *testing.T, reason string, n int, s Step) {
	t.Helper()
	clear(h.replies)
	for k, v := range s.Replies {
		h.replies[k] = v
	}
	*h.seen = nil
	h.reconcile()
	if diff := cmp.Diff(s.Requests, *h.seen); diff != "" {
		t.Errorf("%s\nstep %d: Neutron requests: -want, +got:\n%s", reason, n, diff)
	}
}

// reconcile runs one reconcile of the managed resource. Its error is
// what the MR's conditions say; the tests look at Neutron and the MR.
func (h *Harness[T]) reconcile() {
	recovery := &openstack.CreateRecovery{
		Kube:    h.Kube,
		Network: func(context.Context, resource.Managed) (*gophercloud.ServiceClient, error) { return h.sc, nil },
		Find:    h.find,
	}
	r := managed.NewReconciler(&fake.Manager{Client: h.Kube, Scheme: h.Kube.Scheme()}, resource.ManagedKind(h.gvk),
		append(mrsetup.OpenStackOptions(recovery),
			managed.WithTypedExternalConnector[T](managed.TypedExternalConnectorFn[T](func(context.Context, T) (managed.TypedExternalClient[T], error) {
				return h.connect(h.sc, openstack.Settling{}), nil
			})))...)
	_, _ = r.Reconcile(context.Background(), reconcile.Request{NamespacedName: h.key})
}

// A Case is a create interrupted in one way: the steps that follow it.
type Case struct {
	// Reason says in a sentence what the case proves.
	Reason string
	// Pending says the MR starts with a create pending, as a provider
	// killed during Create leaves it.
	Pending bool
	Steps   []Step
}

// Run runs the steps of c on mg (see New) and fails t unless mg ends with
// external name id and its create complete: one Neutron object, recorded.
func Run[T resource.Managed](t *testing.T, gvk schema.GroupVersionKind, mg T, find openstack.Finder,
	connect mrsetup.ExternalFor[T], c Case, id string) {
	t.Helper()
	if c.Pending {
		meta.SetExternalCreatePending(mg, time.Now().Add(-time.Minute))
	}
	h := New(t, gvk, mg, find, connect)
	for i, s := range c.Steps {
		h.Step(t, c.Reason, i+1, s)
	}
	got, ok := mg.DeepCopyObject().(T)
	if !ok {
		t.Fatalf("%T does not deep-copy to itself", mg)
	}
	if err := h.Kube.Get(context.Background(), h.key, got); err != nil {
		t.Fatal(err)
	}
	if meta.GetExternalName(got) != id || meta.ExternalCreateIncomplete(got) {
		t.Errorf("%s\nexternal name %q, create incomplete %v; want %s, complete", c.Reason, meta.GetExternalName(got), meta.ExternalCreateIncomplete(got), id)
	}
}
