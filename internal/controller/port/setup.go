// Package port runs the Port managed resource's controller: an unbound
// ("VIP-style") Neutron port with fixed IPs, security groups and allowed
// address pairs, whose fixed IP and MAC a gateway pod's secondary interface
// takes.
package port

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/gophercloud/gophercloud/v2"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// Kind describes the Port controllers (mrsetup.NeutronKind): the
// cluster-scoped kind and its namespaced twin (networking.m.ipsecgw.io),
// by the same external client, with the OpenStack kinds' reconciler
// options (mrsetup.OpenStackOptions).
//
// For this kind those options mean: no
// initializer, since the external name is the port's UUID that only Create
// knows; crossplane-runtime's create-pending guard, with the recovery that
// finds a port created by a provider that died before recording it by the
// marker in its description (openstack.CreateRecovery); no creation grace
// period, since Neutron reads its own writes.
var Kind = mrsetup.NeutronKind(&v1alpha1.Port{}, v1alpha1.PortGroupVersionKind, &nsv1alpha1.Port{}, nsv1alpha1.PortGroupVersionKind,
	mrsetup.Tuning{}, openstack.ScanFinder(openstack.Ports), NewExternal)

// NewExternal returns the external client that manages a Port's port
// through sc, the Neutron client of its ProviderConfig; settle says when an
// interrupted create has surely made nothing (openstack.Clients.Settling;
// the zero value never waits, for tests of one reconcile). The connector
// (mrsetup.NeutronConnector) calls it once it has tracked the resource's
// use of its ProviderConfig; tests call it to drive one step and count its
// requests.
func NewExternal(sc *gophercloud.ServiceClient, settle openstack.Settling) managed.TypedExternalClient[*v1alpha1.Port] {
	return &external{object.External(sc, settle)}
}
