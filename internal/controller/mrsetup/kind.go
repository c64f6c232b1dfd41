package mrsetup

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// Dependencies are what the controllers share beyond the manager.
type Dependencies struct {
	// OpenStack caches authenticated OpenStack clients per ProviderConfig
	// for the OpenStack kinds.
	OpenStack *openstack.Clients
	// GatewayImage is the image of a Gateway that names none
	// (spec.forProvider.images); empty: the gateway's default image.
	GatewayImage string
}

// A Controller is one controller of the provider as data: the kinds it
// reconciles or reads, whose CRDs must be established before it may start
// (Kind.SetupGated), and the function that adds it to a manager, which
// returns an error when a client or the controller cannot be built.
type Controller struct {
	GVKs  []schema.GroupVersionKind
	Setup func(ctrl.Manager, controller.Options, Dependencies) error
}

// A Kind is the controllers of one kind of the provider, each described in
// the kind's folder (its setup.go): a managed resource kind's
// cluster-scoped controller and its namespaced twin's; the ProviderConfig's
// one per ProviderConfig kind. internal/controller lists every Kind.
type Kind []Controller

// Setup adds every controller of k to mgr. It returns the first error a
// controller's setup returns.
func (k Kind) Setup(mgr ctrl.Manager, o controller.Options, d Dependencies) error {
	for _, c := range k {
		if err := c.Setup(mgr, o, d); err != nil {
			return err
		}
	}
	return nil
}

// SetupGated adds every controller of k to mgr as Setup does, each once
// the CRDs of its GVKs are established (Gated: crossplane-runtime's safe
// start). It returns an error when o has no gate.
func (k Kind) SetupGated(mgr ctrl.Manager, o controller.Options, d Dependencies) error {
	for _, c := range k {
		if err := Gated(mgr, o, func() error { return c.Setup(mgr, o, d) }, c.GVKs...); err != nil {
			return err
		}
	}
	return nil
}

// NeutronKind describes an OpenStack kind whose external client needs
// nothing but the Neutron client of a resource's ProviderConfig: the
// cluster-scoped kind gvk, whose Go type obj is (RegisterNeutron), and its
// namespaced twin nsGVK, whose Go type nsObj is (RegisterOpenStackTwin),
// both with the tuning t, the finder of unrecorded creates find (nil: the
// kind's Create makes no Neutron object) and the external client that
// external makes.
func NeutronKind[C resource.Managed, N Twin[C]](obj C, gvk schema.GroupVersionKind, nsObj N, nsGVK schema.GroupVersionKind,
	t Tuning, find openstack.Finder, external ExternalFor[C]) Kind {
	return Kind{
		{GVKs: []schema.GroupVersionKind{gvk}, Setup: func(mgr ctrl.Manager, o controller.Options, d Dependencies) error {
			return RegisterNeutron(mgr, o, d.OpenStack, gvk.GroupKind().String(), gvk, obj, t, find, external)
		}},
		{GVKs: []schema.GroupVersionKind{nsGVK}, Setup: func(mgr ctrl.Manager, o controller.Options, d Dependencies) error {
			return RegisterOpenStackTwin(mgr, o, d.OpenStack, nsGVK.GroupKind().String(), nsGVK, nsObj, t, find, external)
		}},
	}
}
