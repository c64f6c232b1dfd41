package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FloatingIPBindingParameters are the desired state of a floating IP bound
// to a port: either a pinned, existing floating IP the customer owns
// (floatingIpAddress) or one allocated from an external network
// (floatingNetworkId).
//
// A pinned floating IP must exist in the project; when it is bound to
// another port the binding refuses to take it (Neutron itself would move it
// silently) and reports that port, until the floating IP is released from
// it. Delete only disassociates a pinned floating IP and never releases it;
// an allocated one is released.
// +kubebuilder:validation:XValidation:rule="has(self.floatingIpAddress) != has(self.floatingNetworkId)",message="set exactly one of floatingIpAddress (pin an existing floating IP) or floatingNetworkId (allocate one)"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.floatingIpAddress) == has(self.floatingIpAddress) && (!has(self.floatingIpAddress) || self.floatingIpAddress == oldSelf.floatingIpAddress)",message="floatingIpAddress cannot be changed: create another binding"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.floatingNetworkId) == has(self.floatingNetworkId) && (!has(self.floatingNetworkId) || self.floatingNetworkId == oldSelf.floatingNetworkId)",message="floatingNetworkId cannot be changed: create another binding"
type FloatingIPBindingParameters struct {
	// FloatingIPAddress pins an existing floating IP of the project.
	// +optional
	FloatingIPAddress *IPAddress `json:"floatingIpAddress,omitempty"`

	// FloatingNetworkID is the external network to allocate a floating IP
	// from.
	// +optional
	FloatingNetworkID *UUID `json:"floatingNetworkId,omitempty"`

	// PortID of the port to bind the floating IP to.
	// +optional
	// +crossplane:generate:reference:type=Port
	PortID *string `json:"portId,omitempty"`

	// PortIDRef references the Port managed resource to bind to. It is
	// resolved at every reconcile, so portId follows the Port's ID (policy
	// resolve IfNotPresent keeps the first one instead).
	// +optional
	PortIDRef *xpv2.Reference `json:"portIdRef,omitempty"`

	// PortIDSelector selects the Port managed resource to bind to, again at
	// every reconcile: a Port composed anew is found again (policy resolve
	// IfNotPresent keeps the first choice instead).
	// +optional
	PortIDSelector *xpv2.Selector `json:"portIdSelector,omitempty"`

	// FixedIP of the port to map the floating IP to, when it has several.
	// +optional
	FixedIP *IPAddress `json:"fixedIp,omitempty"`

	// Description of an allocated floating IP. The provider appends
	// " [crossplane-mr-<hash of this resource's namespace and name>]" in
	// Neutron (see MaxDescriptionLength).
	// +optional
	// +kubebuilder:validation:MaxLength=201
	Description *string `json:"description,omitempty"`
}

// FloatingIPBindingObservation is the state of the floating IP in Neutron.
type FloatingIPBindingObservation struct {
	// FloatingIPID is the floating IP's ID.
	FloatingIPID string `json:"floatingIpId,omitempty"`
	// FloatingIPAddress is its address.
	FloatingIPAddress string `json:"floatingIpAddress,omitempty"`
	// PortID is the binding's port while the floating IP is bound to it;
	// empty while it is on no port or on another port, which is not named:
	// in a project shared by tenants it may be another namespace's.
	PortID string `json:"portId,omitempty"`
	// FixedIP is the fixed IP it maps to on the binding's port; empty as
	// PortID is.
	FixedIP string `json:"fixedIp,omitempty"`
	// Attached says the floating IP is bound to the wanted port.
	Attached bool `json:"attached"`
	// Pinned says the floating IP is customer-owned and is never released.
	Pinned bool `json:"pinned,omitempty"`
	// Status of the floating IP in Neutron.
	Status string `json:"status,omitempty"`
	// RevisionNumber of the floating IP.
	RevisionNumber int `json:"revisionNumber,omitempty"`
	// ReleasedAt is when a pinned binding saw its floating IP taken off its
	// port for no port by someone else (the runbook's rollback, whose next
	// step sets it on the VM's port). For 2 minutes after it the binding
	// leaves the floating IP on no port; it is cleared once the floating IP
	// is on a port again.
	ReleasedAt *metav1.Time `json:"releasedAt,omitempty"`
}

// A FloatingIPBindingSpec defines the desired state of a FloatingIPBinding.
type FloatingIPBindingSpec struct {
	xpv2.ClusterManagedResourceSpec `json:",inline"`
	ForProvider                     FloatingIPBindingParameters `json:"forProvider"`
}

// A FloatingIPBindingStatus represents the observed state of a
// FloatingIPBinding.
type FloatingIPBindingStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 FloatingIPBindingObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// A FloatingIPBinding binds a floating IP, pinned or allocated, to a port.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="FLOATING-IP",type="string",JSONPath=".status.atProvider.floatingIpAddress"
// +kubebuilder:printcolumn:name="ATTACHED",type="boolean",JSONPath=".status.atProvider.attached"
// +kubebuilder:printcolumn:name="PINNED",type="boolean",JSONPath=".status.atProvider.pinned"
// +kubebuilder:printcolumn:name="PORT",type="string",JSONPath=".status.atProvider.portId",priority=1
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories={crossplane,managed,openstack}
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
