package function

import (
	"encoding/json"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	nv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	nsgw "github.com/ipsecgw/provider-ipsec/apis/namespaced/gateway/v1alpha1"
	nsnet "github.com/ipsecgw/provider-ipsec/apis/namespaced/networking/v1alpha1"
)

const (
	errObserved     = "cannot read the observed composed resources"
	errDecodeOneFmt = "cannot decode observed composed resource %s (a %s) into the provider's API type: the provider's CRDs and this function disagree; install the function of the provider's release"
	errKindFmt      = "observed composed resource %s is a %s, not a %s (networking.ipsecgw.io or networking.m.ipsecgw.io): the composite's resources were composed by another Composition; give it this Configuration's"
)

// Observed are the composed resources of a run as Crossplane observed
// them, each decoded into the provider's API type: a cluster-scoped kind as
// itself, a namespaced twin as the cluster-scoped kind it converts to
// (Cluster()), which has the same fields but the ProviderConfig reference
// (only a legacy composite's resources are checked for theirs: pin.go). A
// field is nil while its resource is not observed (not made yet).
type Observed struct {
	SecurityGroup *nv1alpha1.SecurityGroup
	Port          *nv1alpha1.Port
	FloatingIP    *nv1alpha1.FloatingIPBinding
	Routes        *nv1alpha1.RouterRoutes
	NodePairs     *nv1alpha1.NodeAddressPairs
	Gateway       *gwv1alpha1.Gateway
}

// observe decodes the observed composed resources of req. A resource the
// function does not compose (another step's) is left alone; one of its own
// names that is not of its kind, or does not decode into its kind, is an
// error naming it. Fields the API types do not know are ignored: a newer
// provider may have added them (an upgrade adds fields to its CRDs before
// the function is upgraded).
func observe(req *fnv1.RunFunctionRequest) (*Observed, error) {
	ocds, err := request.GetObservedComposedResources(req)
	if err != nil {
		return nil, errors.Wrap(err, errObserved)
	}
	o := &Observed{}
	for name, ocd := range ocds {
		b, err := ocd.Resource.MarshalJSON()
		if err != nil {
			return nil, errors.Wrap(err, errObserved)
		}
		gvk := ocd.Resource.GroupVersionKind()
		switch name {
		case SecurityGroupName:
			o.SecurityGroup, err = decodeAs(string(name), gvk, b, (*nsnet.SecurityGroup).Cluster)
		case PortName:
			o.Port, err = decodeAs(string(name), gvk, b, (*nsnet.Port).Cluster)
		case FloatingIPName:
			o.FloatingIP, err = decodeAs(string(name), gvk, b, (*nsnet.FloatingIPBinding).Cluster)
		case RoutesName:
			o.Routes, err = decodeAs(string(name), gvk, b, (*nsnet.RouterRoutes).Cluster)
		case NodePairsName:
			o.NodePairs, err = decodeAs(string(name), gvk, b, (*nsnet.NodeAddressPairs).Cluster)
		case GatewayName:
			o.Gateway, err = decodeAs(string(name), gvk, b, (*nsgw.Gateway).Cluster)
		}
		if err != nil {
			return nil, err
		}
	}
	return o, nil
}

// decodeAs decodes the JSON b of the observed composed resource name, of
// kind gvk, into the cluster-scoped kind C or, when gvk is C's namespaced
// twin N, into N and that into C with cluster.
func decodeAs[C, N any, PC interface {
	*C
	runtime.Object
}, PN interface {
	*N
	runtime.Object
}](name string, gvk schema.GroupVersionKind, b []byte, cluster func(PN) PC) (PC, error) {
	want := kindOf(PC(new(C)))
	switch gvk {
	case want:
		c := PC(new(C))
		if err := json.Unmarshal(b, c); err != nil {
			return nil, errors.Wrapf(err, errDecodeOneFmt, name, want.Kind)
		}
		return c, nil
	case kindOf(PN(new(N))):
		n := PN(new(N))
		if err := json.Unmarshal(b, n); err != nil {
			return nil, errors.Wrapf(err, errDecodeOneFmt, name, gvk.Kind)
		}
		c := cluster(n)
		c.GetObjectKind().SetGroupVersionKind(want)
		return c, nil
	}
	return nil, errors.Errorf(errKindFmt, name, gvk, want.Kind)
}

// kindOf is the kind of o in the provider's scheme.
func kindOf(o runtime.Object) schema.GroupVersionKind {
	gvks, _, err := scheme.ObjectKinds(o)
	if err != nil {
		panic(err) // every kind Observed holds is registered (apis.AddToScheme)
	}
	return gvks[0]
}

// A managed resource is what the function reads of any observed composed
// resource: its metadata, kind, conditions and, cluster-scoped, its
// ProviderConfig reference.
type managed interface {
	resource.Managed
	GetProviderConfigReference() *xpv2.Reference
}

// managed returns the observed composed resource name as the managed
// resource it is, with its conditions in their order; nil while it is not
// observed.
func (o *Observed) managed(name string) (managed, []xpv2.Condition) {
	switch {
	case name == SecurityGroupName && o.SecurityGroup != nil:
		return o.SecurityGroup, o.SecurityGroup.Status.Conditions
	case name == PortName && o.Port != nil:
		return o.Port, o.Port.Status.Conditions
	case name == FloatingIPName && o.FloatingIP != nil:
		return o.FloatingIP, o.FloatingIP.Status.Conditions
	case name == RoutesName && o.Routes != nil:
		return o.Routes, o.Routes.Status.Conditions
	case name == NodePairsName && o.NodePairs != nil:
		return o.NodePairs, o.NodePairs.Status.Conditions
	case name == GatewayName && o.Gateway != nil:
		return o.Gateway, o.Gateway.Status.Conditions
	}
	return nil, nil
}
