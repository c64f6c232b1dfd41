package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cluster "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
)

// FloatingIPBindingParameters are the desired state of a floating IP bound
// to a port, as cluster.FloatingIPBindingParameters (the same fields, so
// each converts to the other), whose references name Port managed
// resources of the binding's namespace. A pinned floating IP is never
// released, only disassociated.
// +kubebuilder:validation:XValidation:rule="has(self.floatingIpAddress) != has(self.floatingNetworkId)",message="set exactly one of floatingIpAddress (pin an existing floating IP) or floatingNetworkId (allocate one)"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.floatingIpAddress) == has(self.floatingIpAddress) && (!has(self.floatingIpAddress) || self.floatingIpAddress == oldSelf.floatingIpAddress)",message="floatingIpAddress cannot be changed: create another binding"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.floatingNetworkId) == has(self.floatingNetworkId) && (!has(self.floatingNetworkId) || self.floatingNetworkId == oldSelf.floatingNetworkId)",message="floatingNetworkId cannot be changed: create another binding"
type FloatingIPBindingParameters struct {
	// FloatingIPAddress pins an existing floating IP of the project.
	// +optional
	FloatingIPAddress *cluster.IPAddress `json:"floatingIpAddress,omitempty"`

	// FloatingNetworkID is the external network to allocate a floating IP
	// from.
	// +optional
	FloatingNetworkID *cluster.UUID `json:"floatingNetworkId,omitempty"`

	// PortID of the port to bind the floating IP to.
	// +optional
	// +crossplane:generate:reference:type=Port
	PortID *string `json:"portId,omitempty"`

	// PortIDRef references the Port managed resource to bind to. It is
	// resolved at every reconcile, so portId follows the Port's ID (policy
	// resolve IfNotPresent keeps the first one instead).
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.namespace)",message="a namespaced managed resource references managed resources of its own namespace only: leave namespace out"
	PortIDRef *xpv2.NamespacedReference `json:"portIdRef,omitempty"`

	// PortIDSelector selects the Port managed resource to bind to, again at
	// every reconcile: a Port composed anew is found again (policy resolve
	// IfNotPresent keeps the first choice instead).
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.namespace)",message="a namespaced managed resource references managed resources of its own namespace only: leave namespace out"
	PortIDSelector *xpv2.NamespacedSelector `json:"portIdSelector,omitempty"`

	// FixedIP of the port to map the floating IP to, when it has several.
	// +optional
	FixedIP *cluster.IPAddress `json:"fixedIp,omitempty"`

	// Description of an allocated floating IP. The provider appends
	// " [crossplane-mr-<hash of this resource's namespace and name>]" in
	// Neutron (see MaxDescriptionLength).
	// +optional
	// +kubebuilder:validation:MaxLength=201
	Description *string `json:"description,omitempty"`
}

// A FloatingIPBindingSpec defines the desired state of a FloatingIPBinding.
type FloatingIPBindingSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              FloatingIPBindingParameters `json:"forProvider"`
}

// A FloatingIPBindingStatus represents the observed state of a
// FloatingIPBinding.
type FloatingIPBindingStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 cluster.FloatingIPBindingObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// A FloatingIPBinding binds a floating IP, pinned or allocated, to a Port of
// its namespace.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="FLOATING-IP",type="string",JSONPath=".status.atProvider.floatingIpAddress"
// +kubebuilder:printcolumn:name="ATTACHED",type="boolean",JSONPath=".status.atProvider.attached"
// +kubebuilder:printcolumn:name="PINNED",type="boolean",JSONPath=".status.atProvider.pinned"
// +kubebuilder:printcolumn:name="PORT",type="string",JSONPath=".status.atProvider.portId",priority=1
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,openstack}
type FloatingIPBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FloatingIPBindingSpec   `json:"spec"`
	Status FloatingIPBindingStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// FloatingIPBindingList contains a list of FloatingIPBinding.
type FloatingIPBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FloatingIPBinding `json:"items"`
}
