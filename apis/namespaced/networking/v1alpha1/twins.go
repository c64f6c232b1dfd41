package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	cluster "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
)

// The namespaced kinds' parameters hold the values of their cluster-scoped
// twins' and namespaced references and selectors (which angryjet's
// namespaced resolvers take); admission refuses a reference or selector
// with a namespace, so they convert to the cluster types without loss. The
// controllers work on the cluster types; the conversions below are the
// one place that knows both.

// ToCluster returns p as the parameters of a cluster-scoped Port.
func (p *PortParameters) ToCluster() cluster.PortParameters {
	return cluster.PortParameters{
		NetworkID: p.NetworkID, NetworkIDRef: toRef(p.NetworkIDRef), NetworkIDSelector: toSelector(p.NetworkIDSelector),
		Name: p.Name, Description: p.Description, FixedIPs: p.FixedIPs,
		SecurityGroupIDs: p.SecurityGroupIDs, SecurityGroupIDRefs: toRefs(p.SecurityGroupIDRefs), SecurityGroupIDSelector: toSelector(p.SecurityGroupIDSelector),
		AllowedAddressPairs: p.AllowedAddressPairs, PortSecurityEnabled: p.PortSecurityEnabled, Tags: p.Tags,
	}
}

// PortParametersFromCluster returns c as the parameters of a namespaced
// Port, whose references and selectors name the Port's namespace.
func PortParametersFromCluster(c cluster.PortParameters) PortParameters {
	return PortParameters{
		NetworkID: c.NetworkID, NetworkIDRef: fromRef(c.NetworkIDRef), NetworkIDSelector: fromSelector(c.NetworkIDSelector),
		Name: c.Name, Description: c.Description, FixedIPs: c.FixedIPs,
		SecurityGroupIDs: c.SecurityGroupIDs, SecurityGroupIDRefs: fromRefs(c.SecurityGroupIDRefs), SecurityGroupIDSelector: fromSelector(c.SecurityGroupIDSelector),
		AllowedAddressPairs: c.AllowedAddressPairs, PortSecurityEnabled: c.PortSecurityEnabled, Tags: c.Tags,
	}
}

// ToCluster returns p as the parameters of a cluster-scoped
// FloatingIPBinding.
func (p *FloatingIPBindingParameters) ToCluster() cluster.FloatingIPBindingParameters {
	return cluster.FloatingIPBindingParameters{
		FloatingIPAddress: p.FloatingIPAddress, FloatingNetworkID: p.FloatingNetworkID,
		PortID: p.PortID, PortIDRef: toRef(p.PortIDRef), PortIDSelector: toSelector(p.PortIDSelector),
		FixedIP: p.FixedIP, Description: p.Description,
	}
}

// FloatingIPBindingParametersFromCluster returns c as the parameters of a
// namespaced FloatingIPBinding, whose references and selectors name the
// binding's namespace.
func FloatingIPBindingParametersFromCluster(c cluster.FloatingIPBindingParameters) FloatingIPBindingParameters {
	return FloatingIPBindingParameters{
		FloatingIPAddress: c.FloatingIPAddress, FloatingNetworkID: c.FloatingNetworkID,
		PortID: c.PortID, PortIDRef: fromRef(c.PortIDRef), PortIDSelector: fromSelector(c.PortIDSelector),
		FixedIP: c.FixedIP, Description: c.Description,
	}
}

// ToCluster returns p as the parameters of cluster-scoped RouterRoutes.
func (p *RouterRoutesParameters) ToCluster() cluster.RouterRoutesParameters {
	return cluster.RouterRoutesParameters{RouterID: p.RouterID, Routes: p.Routes,
		Nexthop: p.Nexthop, NexthopPortRef: toRef(p.NexthopPortRef), NexthopPortSelector: toSelector(p.NexthopPortSelector)}
}

// RouterRoutesParametersFromCluster returns c as the parameters of
// namespaced RouterRoutes, whose Port reference and selector name the
// resource's namespace.
func RouterRoutesParametersFromCluster(c cluster.RouterRoutesParameters) RouterRoutesParameters {
	return RouterRoutesParameters{RouterID: c.RouterID, Routes: c.Routes,
		Nexthop: c.Nexthop, NexthopPortRef: fromRef(c.NexthopPortRef), NexthopPortSelector: fromSelector(c.NexthopPortSelector)}
}

// ToCluster returns p as the parameters of cluster-scoped NodeAddressPairs.
func (p *NodeAddressPairsParameters) ToCluster() cluster.NodeAddressPairsParameters {
	return cluster.NodeAddressPairsParameters{PortID: p.PortID, PortIDRef: toRef(p.PortIDRef), PortIDSelector: toSelector(p.PortIDSelector),
		CIDRs: p.CIDRs, NodeSelector: p.NodeSelector}
}

// NodeAddressPairsParametersFromCluster returns c as the parameters of
// namespaced NodeAddressPairs, whose Port reference and selector name the
// resource's namespace.
func NodeAddressPairsParametersFromCluster(c cluster.NodeAddressPairsParameters) NodeAddressPairsParameters {
	return NodeAddressPairsParameters{PortID: c.PortID, PortIDRef: fromRef(c.PortIDRef), PortIDSelector: fromSelector(c.PortIDSelector),
		CIDRs: c.CIDRs, NodeSelector: c.NodeSelector}
}

// FirstFixedIP returns the first fixed IP the Port observed, or "": the
// nexthop RouterRoutes take from it (cluster.PortFixedIP).
func (mg *Port) FirstFixedIP() string {
	return (&cluster.Port{Status: cluster.PortStatus(mg.Status)}).FirstFixedIP()
}

// ClearResolvedReferences clears nexthop where nexthopPortRef or
// nexthopPortSelector resolves it again, by the rules of the cluster-scoped
// RouterRoutes' (cluster.RouterRoutes.ClearResolvedReferences).
func (mg *RouterRoutes) ClearResolvedReferences() {
	c := cluster.RouterRoutes{Spec: cluster.RouterRoutesSpec{ForProvider: mg.Spec.ForProvider.ToCluster()}}
	c.ClearResolvedReferences()
	mg.Spec.ForProvider = RouterRoutesParametersFromCluster(c.Spec.ForProvider)
}

// ClearResolvedReferences clears networkId and securityGroupIds where
// their references or selectors resolve them again, by the rules of the
// cluster-scoped Port's (cluster.Port.ClearResolvedReferences).
func (mg *Port) ClearResolvedReferences() {
	c := cluster.Port{Spec: cluster.PortSpec{ForProvider: mg.Spec.ForProvider.ToCluster()}}
	c.ClearResolvedReferences()
	mg.Spec.ForProvider = PortParametersFromCluster(c.Spec.ForProvider)
}

// ClearResolvedReferences clears portId where portIdRef or portIdSelector
// resolves it again, by the rules of the cluster-scoped binding's
// (cluster.FloatingIPBinding.ClearResolvedReferences).
func (mg *FloatingIPBinding) ClearResolvedReferences() {
	c := cluster.FloatingIPBinding{Spec: cluster.FloatingIPBindingSpec{ForProvider: mg.Spec.ForProvider.ToCluster()}}
	c.ClearResolvedReferences()
	mg.Spec.ForProvider = FloatingIPBindingParametersFromCluster(c.Spec.ForProvider)
}

func toRef(r *xpv2.NamespacedReference) *xpv2.Reference {
	if r == nil {
		return nil
	}
	return &xpv2.Reference{Name: r.Name, Policy: r.Policy}
}

func fromRef(r *xpv2.Reference) *xpv2.NamespacedReference {
	if r == nil {
		return nil
	}
	return &xpv2.NamespacedReference{Name: r.Name, Policy: r.Policy}
}

func toRefs(rs []xpv2.NamespacedReference) []xpv2.Reference {
	if rs == nil {
		return nil
	}
	out := make([]xpv2.Reference, len(rs))
	for i := range rs {
		out[i] = *toRef(&rs[i])
	}
	return out
}

func fromRefs(rs []xpv2.Reference) []xpv2.NamespacedReference {
	if rs == nil {
		return nil
	}
	out := make([]xpv2.NamespacedReference, len(rs))
	for i := range rs {
		out[i] = *fromRef(&rs[i])
	}
	return out
}

func toSelector(s *xpv2.NamespacedSelector) *xpv2.Selector {
	if s == nil {
		return nil
	}
	return &xpv2.Selector{MatchLabels: s.MatchLabels, MatchControllerRef: s.MatchControllerRef, Policy: s.Policy}
}

func fromSelector(s *xpv2.Selector) *xpv2.NamespacedSelector {
	if s == nil {
		return nil
	}
	return &xpv2.NamespacedSelector{MatchLabels: s.MatchLabels, MatchControllerRef: s.MatchControllerRef, Policy: s.Policy}
}

// Cluster returns the cluster-scoped SecurityGroup that the kind's
// controller works on: copies of mg's metadata, parameters and status.
func (mg *SecurityGroup) Cluster() *cluster.SecurityGroup {
	c := mg.DeepCopy()
	return &cluster.SecurityGroup{ObjectMeta: c.ObjectMeta, Spec: cluster.SecurityGroupSpec{ForProvider: c.Spec.ForProvider}, Status: cluster.SecurityGroupStatus(c.Status)}
}

// FromCluster sets mg's metadata, parameters and status to c's.
func (mg *SecurityGroup) FromCluster(c *cluster.SecurityGroup) {
	mg.ObjectMeta, mg.Spec.ForProvider, mg.Status = c.ObjectMeta, c.Spec.ForProvider, SecurityGroupStatus(c.Status)
}

// Cluster returns the cluster-scoped Network that the kind's controller
// works on: copies of mg's metadata, parameters and status.
func (mg *Network) Cluster() *cluster.Network {
	c := mg.DeepCopy()
	return &cluster.Network{ObjectMeta: c.ObjectMeta, Spec: cluster.NetworkSpec{ForProvider: c.Spec.ForProvider}, Status: cluster.NetworkStatus(c.Status)}
}

// FromCluster sets mg's metadata, parameters and status to c's.
func (mg *Network) FromCluster(c *cluster.Network) {
	mg.ObjectMeta, mg.Spec.ForProvider, mg.Status = c.ObjectMeta, c.Spec.ForProvider, NetworkStatus(c.Status)
}

// Cluster returns the cluster-scoped Port that the kind's controller works
// on: copies of mg's metadata, parameters and status.
func (mg *Port) Cluster() *cluster.Port {
	c := mg.DeepCopy()
	return &cluster.Port{ObjectMeta: c.ObjectMeta, Spec: cluster.PortSpec{ForProvider: c.Spec.ForProvider.ToCluster()}, Status: cluster.PortStatus(c.Status)}
}

// FromCluster sets mg's metadata, parameters and status to c's.
func (mg *Port) FromCluster(c *cluster.Port) {
	mg.ObjectMeta, mg.Spec.ForProvider, mg.Status = c.ObjectMeta, PortParametersFromCluster(c.Spec.ForProvider), PortStatus(c.Status)
}

// Cluster returns the cluster-scoped FloatingIPBinding that the kind's
// controller works on: copies of mg's metadata, parameters and status.
func (mg *FloatingIPBinding) Cluster() *cluster.FloatingIPBinding {
	c := mg.DeepCopy()
	return &cluster.FloatingIPBinding{ObjectMeta: c.ObjectMeta, Spec: cluster.FloatingIPBindingSpec{ForProvider: c.Spec.ForProvider.ToCluster()},
		Status: cluster.FloatingIPBindingStatus(c.Status)}
}

// FromCluster sets mg's metadata, parameters and status to c's.
func (mg *FloatingIPBinding) FromCluster(c *cluster.FloatingIPBinding) {
	mg.ObjectMeta, mg.Spec.ForProvider, mg.Status = c.ObjectMeta, FloatingIPBindingParametersFromCluster(c.Spec.ForProvider), FloatingIPBindingStatus(c.Status)
}

// Cluster returns the cluster-scoped RouterRoutes that the kind's
// controller works on: copies of mg's metadata, parameters and status.
func (mg *RouterRoutes) Cluster() *cluster.RouterRoutes {
	c := mg.DeepCopy()
	return &cluster.RouterRoutes{ObjectMeta: c.ObjectMeta, Spec: cluster.RouterRoutesSpec{ForProvider: c.Spec.ForProvider.ToCluster()},
		Status: cluster.RouterRoutesStatus(c.Status)}
}

// FromCluster sets mg's metadata, parameters and status to c's.
func (mg *RouterRoutes) FromCluster(c *cluster.RouterRoutes) {
	mg.ObjectMeta, mg.Spec.ForProvider, mg.Status = c.ObjectMeta, RouterRoutesParametersFromCluster(c.Spec.ForProvider), RouterRoutesStatus(c.Status)
}

// Cluster returns the cluster-scoped NodeAddressPairs that the kind's
// controller works on: copies of mg's metadata, parameters and status.
func (mg *NodeAddressPairs) Cluster() *cluster.NodeAddressPairs {
	c := mg.DeepCopy()
	return &cluster.NodeAddressPairs{ObjectMeta: c.ObjectMeta, Spec: cluster.NodeAddressPairsSpec{ForProvider: c.Spec.ForProvider.ToCluster()},
		Status: cluster.NodeAddressPairsStatus(c.Status)}
}

// FromCluster sets mg's metadata, parameters and status to c's.
func (mg *NodeAddressPairs) FromCluster(c *cluster.NodeAddressPairs) {
	mg.ObjectMeta, mg.Spec.ForProvider, mg.Status = c.ObjectMeta, NodeAddressPairsParametersFromCluster(c.Spec.ForProvider), NodeAddressPairsStatus(c.Status)
}

// ClearResolvedReferences clears portId where portIdRef or portIdSelector
// resolves it again, by the rules of the cluster-scoped NodeAddressPairs'
// (cluster.NodeAddressPairs.ClearResolvedReferences).
func (mg *NodeAddressPairs) ClearResolvedReferences() {
	c := cluster.NodeAddressPairs{Spec: cluster.NodeAddressPairsSpec{ForProvider: mg.Spec.ForProvider.ToCluster()}}
	c.ClearResolvedReferences()
	mg.Spec.ForProvider = NodeAddressPairsParametersFromCluster(c.Spec.ForProvider)
}

// The namespaced resolvers record a reference they select with its
// namespace, the resource's own, which the schema refuses (a reference
// names a managed resource of the resource's own namespace by leaving the
// namespace out): OmitReferenceNamespaces leaves it out again, before the
// resolved references are saved. The resolvers look in the resource's own
// namespace only (admission refuses a selector with a namespace), so
// nothing else is lost.

// OmitReferenceNamespaces clears the namespace of mg's references.
func (mg *Port) OmitReferenceNamespaces() {
	mg.Spec.ForProvider = PortParametersFromCluster(mg.Spec.ForProvider.ToCluster())
}

// OmitReferenceNamespaces clears the namespace of mg's references.
func (mg *FloatingIPBinding) OmitReferenceNamespaces() {
	mg.Spec.ForProvider = FloatingIPBindingParametersFromCluster(mg.Spec.ForProvider.ToCluster())
}

// OmitReferenceNamespaces clears the namespace of mg's references.
func (mg *RouterRoutes) OmitReferenceNamespaces() {
	mg.Spec.ForProvider = RouterRoutesParametersFromCluster(mg.Spec.ForProvider.ToCluster())
}

// OmitReferenceNamespaces clears the namespace of mg's references.
func (mg *NodeAddressPairs) OmitReferenceNamespaces() {
	mg.Spec.ForProvider = NodeAddressPairsParametersFromCluster(mg.Spec.ForProvider.ToCluster())
}
