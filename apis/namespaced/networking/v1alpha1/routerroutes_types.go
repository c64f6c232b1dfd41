package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cluster "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
)

// RouterRoutesParameters are extra routes this resource owns on a Neutron
// router, as cluster.RouterRoutesParameters, whose nexthop Port reference
// names a Port of the resource's namespace.
// +kubebuilder:validation:XValidation:rule="has(self.nexthop) || has(self.nexthopPortRef) || has(self.nexthopPortSelector) || self.routes.all(r, has(r.nexthop))",message="every route needs a nexthop: give one per route, nexthop, or a Port to take it from"
type RouterRoutesParameters struct {
	// RouterID of the router. It cannot be changed: routes are not moved
	// between routers; create another RouterRoutes instead.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="routerId cannot be changed: create another RouterRoutes"
	RouterID cluster.UUID `json:"routerId"`

	// Routes this resource owns.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Routes []cluster.Route `json:"routes"`

	// Nexthop of routes that give none, such as the gateway port's fixed
	// IP.
	// +optional
	// +crossplane:generate:reference:type=Port
	// +crossplane:generate:reference:extractor=github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1.PortFixedIP()
	// +crossplane:generate:reference:refFieldName=NexthopPortRef
	// +crossplane:generate:reference:selectorFieldName=NexthopPortSelector
	Nexthop *string `json:"nexthop,omitempty"`

	// NexthopPortRef takes nexthop from a Port managed resource's first
	// fixed IP, at every reconcile (policy resolve IfNotPresent: once).
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.namespace)",message="a namespaced managed resource references managed resources of its own namespace only: leave namespace out"
	NexthopPortRef *xpv2.NamespacedReference `json:"nexthopPortRef,omitempty"`

	// NexthopPortSelector selects that Port by label, again at every
	// reconcile (policy resolve IfNotPresent: once).
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.namespace)",message="a namespaced managed resource references managed resources of its own namespace only: leave namespace out"
	NexthopPortSelector *xpv2.NamespacedSelector `json:"nexthopPortSelector,omitempty"`
}

// A RouterRoutesSpec defines the desired state of RouterRoutes.
type RouterRoutesSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              RouterRoutesParameters `json:"forProvider"`
}

// A RouterRoutesStatus represents the observed state of RouterRoutes.
type RouterRoutesStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 cluster.RouterRoutesObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// RouterRoutes are extra routes on a Neutron router managed from a
// namespace, such as a VPN's client subnets via the gateway port of the
// namespace in mode routed.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="ROUTER",type="string",JSONPath=".spec.forProvider.routerId"
// +kubebuilder:printcolumn:name="NEXTHOP",type="string",JSONPath=".spec.forProvider.nexthop"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,openstack}
type RouterRoutes struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RouterRoutesSpec   `json:"spec"`
	Status RouterRoutesStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// RouterRoutesList contains a list of RouterRoutes.
type RouterRoutesList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RouterRoutes `json:"items"`
}
