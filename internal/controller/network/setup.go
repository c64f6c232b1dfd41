// Package network runs the Network managed resource's controller: a
// Neutron network, mostly an existing tenant network imported with
// management policy Observe for Ports to reference by networkIdRef.
package network

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/gophercloud/gophercloud/v2"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// Kind describes the Network controllers (mrsetup.NeutronKind): the
// cluster-scoped kind and its namespaced twin (networking.m.ipsecgw.io),
// by the same external client, with the OpenStack kinds' reconciler
// options (mrsetup.OpenStackOptions).
var Kind = mrsetup.NeutronKind(&v1alpha1.Network{}, v1alpha1.NetworkGroupVersionKind, &nsv1alpha1.Network{}, nsv1alpha1.NetworkGroupVersionKind,
	mrsetup.Tuning{}, openstack.ScanFinder(openstack.Networks), NewExternal)

// NewExternal returns the external client that manages a Network's network
// through sc, the Neutron client of its ProviderConfig; settle says when an
// interrupted create has surely made nothing (openstack.Clients.Settling;
// the zero value never waits, for tests of one reconcile). The connector
// (mrsetup.NeutronConnector) calls it once it has tracked the resource's
// use of its ProviderConfig; tests call it to drive one step and count its
// requests.
func NewExternal(sc *gophercloud.ServiceClient, settle openstack.Settling) managed.TypedExternalClient[*v1alpha1.Network] {
	return &external{object.External(sc, settle)}
}
