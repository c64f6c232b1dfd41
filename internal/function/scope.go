package function

import (
	"fmt"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	nv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	nsgw "github.com/ipsecgw/provider-ipsec/apis/namespaced/gateway/v1alpha1"
	nsnet "github.com/ipsecgw/provider-ipsec/apis/namespaced/networking/v1alpha1"
)

// The function composes two kinds of composite: the legacy claim's
// XIPsecGateway (vpn.ipsecgw.io, cluster-scoped), into cluster-scoped
// managed resources, and the namespaced IPsecGateway (NamespacedGroup, an
// XR of its tenant's namespace without a claim,
// package/configuration/zz_generated_definition_namespaced.yaml), into the
// namespaced twins of the same managed resources in its namespace. Both have
// the same spec but for the ProviderConfig: the namespaced one's
// spec.providerConfigRef names a ProviderConfig of its namespace or a
// ClusterProviderConfig. Compose writes the cluster-scoped resources;
// Namespaced turns them into their twins.

// NamespacedGroup is the API group of the namespaced IPsecGateway.
const NamespacedGroup = "vpn.m.ipsecgw.io"

// errScope is the error of a composite whose scope cannot be read.
const errScope = "cannot read the namespaced IPsecGateway's spec.providerConfigRef"

// orphan are the management policies of a namespaced pinned binding: all
// but Delete, as deletionPolicy Orphan is for a cluster-scoped one (the
// customer's floating IP is never released, nor even disassociated, when
// the composite goes).
var orphan = xpv2.ManagementPolicies{xpv2.ManagementActionObserve, xpv2.ManagementActionCreate, xpv2.ManagementActionUpdate, xpv2.ManagementActionLateInitialize}

// owner returns the namespace and name the composite's resources are named
// after and its Gateway runs in: a namespaced IPsecGateway's own, a legacy
// composite's claim's (nil without a claim).
func (xr *XIPsecGateway) owner() *ClaimReference {
	if xr.Metadata.Namespace != "" {
		return &ClaimReference{Namespace: xr.Metadata.Namespace, Name: xr.Metadata.Name}
	}
	return xr.Spec.ClaimRef
}

// decode returns the observed composite m as an XIPsecGateway and, for a
// namespaced IPsecGateway, its spec.providerConfigRef (nil for a legacy
// composite). Errors say which of the two could not be read.
func decode(m map[string]any) (*XIPsecGateway, *xpv2.ProviderConfigReference, error) {
	xr := &XIPsecGateway{}
	if err := convert(m, xr); err != nil {
		return nil, nil, errors.Wrap(err, errDecodeXR)
	}
	pc, err := namespacedRef(m)
	if err != nil {
		return nil, nil, errors.Wrap(err, errScope)
	}
	return xr, pc, nil
}

// inScope returns o, a managed resource Compose made, as the composite
// whose namespaced ProviderConfig reference is pc composes it: o itself
// for a legacy composite (pc nil), else its namespaced twin (Namespaced).
func inScope(o runtime.Object, pc *xpv2.ProviderConfigReference) (runtime.Object, error) {
	if pc == nil {
		return o, nil
	}
	return Namespaced(o, pc)
}

// namespacedRef returns, for the observed composite m of group
// NamespacedGroup, its spec.providerConfigRef (the XRD defaults it); nil
// for a legacy composite.
func namespacedRef(m map[string]any) (*xpv2.ProviderConfigReference, error) {
	av, _ := m["apiVersion"].(string)
	gv, err := schema.ParseGroupVersion(av)
	if err != nil || gv.Group != NamespacedGroup {
		return nil, nil //nolint:nilerr // any other composite is a legacy one
	}
	var x struct {
		Spec struct {
			ProviderConfigRef *xpv2.ProviderConfigReference `json:"providerConfigRef"`
		} `json:"spec"`
	}
	if err := convert(m, &x); err != nil {
		return nil, err
	}
	if r := x.Spec.ProviderConfigRef; r != nil {
		return r, nil
	}
	return &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"}, nil
}

// Namespaced returns the namespaced twin of o, a managed resource Compose
// made, with the ProviderConfig pc: the same parameters, its references'
// selectors (matchControllerRef) in the composite's namespace, and for a
// pinned binding (deletionPolicy Orphan) the management policies orphan.
// It returns an error for a kind without a twin.
func Namespaced(o runtime.Object, pc *xpv2.ProviderConfigReference) (runtime.Object, error) {
	spec := xpv2.ManagedResourceSpec{ProviderConfigReference: pc}
	switch c := o.(type) {
	case *nv1alpha1.SecurityGroup:
		n := &nsnet.SecurityGroup{}
		n.FromCluster(c)
		n.Spec.ManagedResourceSpec = spec
		return n, nil
	case *nv1alpha1.Port:
		n := &nsnet.Port{}
		n.FromCluster(c)
		n.Spec.ManagedResourceSpec = spec
		return n, nil
	case *nv1alpha1.FloatingIPBinding:
		n := &nsnet.FloatingIPBinding{}
		n.FromCluster(c)
		n.Spec.ManagedResourceSpec = spec
		if c.Spec.DeletionPolicy == xpv2.DeletionOrphan {
			n.Spec.ManagementPolicies = orphan
		}
		return n, nil
	case *nv1alpha1.RouterRoutes:
		n := &nsnet.RouterRoutes{}
		n.FromCluster(c)
		n.Spec.ManagedResourceSpec = spec
		return n, nil
	case *nv1alpha1.NodeAddressPairs:
		n := &nsnet.NodeAddressPairs{}
		n.FromCluster(c)
		n.Spec.ManagedResourceSpec = spec
		return n, nil
	case *gwv1alpha1.Gateway:
		n := &nsgw.Gateway{}
		n.FromCluster(c)
		n.Spec.ManagedResourceSpec = spec
		return n, nil
	default:
		return nil, fmt.Errorf("%T has no namespaced twin", o)
	}
}
