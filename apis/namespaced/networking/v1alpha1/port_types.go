package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cluster "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
)

// PortParameters are the desired state of an unbound ("VIP-style") Neutron
// port, as cluster.PortParameters (the same fields, so each converts to the
// other), whose references name Network and SecurityGroup managed resources
// of the Port's namespace.
// +kubebuilder:validation:XValidation:rule="has(self.networkId) || has(self.networkIdRef) || has(self.networkIdSelector)",message="a port needs networkId, networkIdRef or networkIdSelector"
// +kubebuilder:validation:XValidation:rule="!has(self.portSecurityEnabled) || self.portSecurityEnabled || ((!has(self.securityGroupIds) || size(self.securityGroupIds) == 0) && !has(self.securityGroupIdRefs) && !has(self.securityGroupIdSelector) && (!has(self.allowedAddressPairs) || size(self.allowedAddressPairs) == 0))",message="security groups and allowed address pairs need portSecurityEnabled"
type PortParameters struct {
	// NetworkID of the network the port is on. Set it, or let
	// networkIdRef or networkIdSelector fill it in.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="networkId is immutable: Neutron cannot move a port to another network"
	// +crossplane:generate:reference:type=Network
	NetworkID *string `json:"networkId,omitempty"`

	// NetworkIDRef references the Network managed resource whose ID (its
	// external name) fills networkId, resolved at every reconcile (policy
	// resolve IfNotPresent resolves once).
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.namespace)",message="a namespaced managed resource references managed resources of its own namespace only: leave namespace out"
	NetworkIDRef *xpv2.NamespacedReference `json:"networkIdRef,omitempty"`

	// NetworkIDSelector selects a Network managed resource by label to fill
	// networkId, again at every reconcile (policy resolve IfNotPresent
	// selects once).
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.namespace)",message="a namespaced managed resource references managed resources of its own namespace only: leave namespace out"
	NetworkIDSelector *xpv2.NamespacedSelector `json:"networkIdSelector,omitempty"`

	// Name of the port in Neutron.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Name *string `json:"name,omitempty"`

	// Description of the port. A port the provider creates carries
	// " [crossplane-mr-<hash of this resource's namespace and name>]" after
	// it in Neutron (see MaxDescriptionLength).
	// +optional
	// +kubebuilder:validation:MaxLength=201
	Description *string `json:"description,omitempty"`

	// FixedIPs of the port. Neutron picks one from the network when unset.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	FixedIPs []cluster.FixedIP `json:"fixedIps,omitempty"`

	// SecurityGroupIDs of the port.
	// +optional
	// +crossplane:generate:reference:type=SecurityGroup
	// +crossplane:generate:reference:refFieldName=SecurityGroupIDRefs
	// +crossplane:generate:reference:selectorFieldName=SecurityGroupIDSelector
	SecurityGroupIDs []string `json:"securityGroupIds,omitempty"`

	// SecurityGroupIDRefs reference SecurityGroup managed resources whose
	// IDs make up securityGroupIds, resolved at every reconcile (policy
	// resolve IfNotPresent on every reference resolves once).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.all(r, !has(r.namespace))",message="a namespaced managed resource references managed resources of its own namespace only: leave namespace out"
	SecurityGroupIDRefs []xpv2.NamespacedReference `json:"securityGroupIdRefs,omitempty"`

	// SecurityGroupIDSelector selects SecurityGroup managed resources by
	// label, again at every reconcile (policy resolve IfNotPresent selects
	// once).
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.namespace)",message="a namespaced managed resource references managed resources of its own namespace only: leave namespace out"
	SecurityGroupIDSelector *xpv2.NamespacedSelector `json:"securityGroupIdSelector,omitempty"`

	// AllowedAddressPairs of the port, such as the client subnets a gateway
	// routes in mode routed.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	AllowedAddressPairs []cluster.AddressPair `json:"allowedAddressPairs,omitempty"`

	// PortSecurityEnabled turns Neutron's anti-spoofing and security groups
	// on the port on or off.
	// +optional
	PortSecurityEnabled *bool `json:"portSecurityEnabled,omitempty"`

	// Tags of the port, besides the one the provider adds.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	Tags []string `json:"tags,omitempty"`
}

// A PortSpec defines the desired state of a Port.
type PortSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              PortParameters `json:"forProvider"`
}

// A PortStatus represents the observed state of a Port.
type PortStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 cluster.PortObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// A Port is an unbound Neutron port managed from a namespace: the fixed IP,
// MAC and security groups a gateway pod's secondary interface takes.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="FIXED-IP",type="string",JSONPath=".status.atProvider.fixedIps[0].ipAddress"
// +kubebuilder:printcolumn:name="MAC",type="string",JSONPath=".status.atProvider.macAddress"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,openstack}
type Port struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PortSpec   `json:"spec"`
	Status PortStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PortList contains a list of Port.
type PortList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Port `json:"items"`
}
